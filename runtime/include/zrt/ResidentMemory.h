//===- ResidentMemory.h - This process's resident memory --------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What the kernel says the process holds in memory (/proc/self/status): measured,
// not predicted, for zero-run's memory figures on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RESIDENTMEMORY_H
#define ZRT_RESIDENTMEMORY_H

#include <cstdint>

namespace zrt {

/// Resident bytes now (VmRSS), and the peak so far (VmHWM); 0 if unknown.
int64_t residentBytes();
int64_t peakResidentBytes();

} // namespace zrt

#endif // ZRT_RESIDENTMEMORY_H
