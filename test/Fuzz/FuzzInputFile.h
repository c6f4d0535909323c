//===- FuzzInputFile.h - A fuzz input as the file a tool reads --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The readers that take a path (safetensors, machine files) get each input as a
// file: one per target, in the working folder, rewritten for every input.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FUZZ_FUZZINPUTFILE_H
#define ZERO_FUZZ_FUZZINPUTFILE_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

/// `data` written to this target's file (named after `prefix` once); its path.
inline const std::string &writeFuzzInput(const char *prefix, const uint8_t *data,
                                         size_t size) {
  static const std::string path = [prefix] {
    std::string name = std::string(prefix) + "-XXXXXX";
    int fd = ::mkstemp(name.data());
    if (fd >= 0)
      ::close(fd);
    return name;
  }();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char *>(data), (std::streamsize)size);
  return path;
}

#endif // ZERO_FUZZ_FUZZINPUTFILE_H
