//===- ResidentMemory.cpp - This process's resident memory ----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/ResidentMemory.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace {

/// A "Name:   1234 kB" line of /proc/self/status, in bytes.
int64_t statusBytes(const char *name) {
  std::ifstream status("/proc/self/status");
  std::string line, key = std::string(name) + ":";
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0)
      return std::atoll(line.c_str() + key.size()) * 1024;
  return 0;
}

} // namespace

int64_t zrt::residentBytes() { return statusBytes("VmRSS"); }
int64_t zrt::peakResidentBytes() { return statusBytes("VmHWM"); }
