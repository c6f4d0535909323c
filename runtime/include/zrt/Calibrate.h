//===- Calibrate.h - Measure the cost model's machine figures --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CALIBRATE_H
#define ZRT_CALIBRATE_H

#include "zrt/Communicator.h"

#include <string>

namespace zrt {

/// Measures GEMM and vector FLOP/s, memory bandwidth, per-kernel overhead and, on
/// several ranks, the ring alpha and beta of the communicator. Returns the JSON
/// object that `zero-opt --machine=FILE` reads. Every rank must call it.
std::string calibrateMachine(Communicator &comm);

} // namespace zrt

#endif // ZRT_CALIBRATE_H
