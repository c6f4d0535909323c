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

#include "FuzzInputFile.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = writeFuzzInput("safetensors-fuzz", data, size);
  try {
    zrt::SafetensorsFile file(path);
    for (const auto &[name, entry] : file.entries())
      (void)file.read(name);
  } catch (const zrt::Error &) {
  }
  return 0;
}
