//===- SafetensorsFuzzer.cpp - libFuzzer target: a safetensors file -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each input is a file given to `zero-run --init W.safetensors`: its header is
// read and checked, then every tensor it describes is read. Errors (zrt::Error)
// are fine; crashes, out-of-bounds accesses, leaks, undefined behaviour and other
// exceptions are findings. Built by utils/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/Safetensors.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = [] {
    char name[] = "safetensors-fuzz-XXXXXX";
    int fd = ::mkstemp(name);
    if (fd >= 0)
      ::close(fd);
    return std::string(name);
  }();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char *>(data), (std::streamsize)size);
  try {
    zrt::SafetensorsFile file(path);
    for (const auto &[name, entry] : file.entries())
      (void)file.read(name);
  } catch (const zrt::Error &) {
  }
  return 0;
}
