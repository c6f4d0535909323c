//===- Calibrate.h - Measure the cost model's machine figures --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CALIBRATE_H
#define ZRT_CALIBRATE_H

#include "zrt/Communicator.h"
#include "zrt/Device.h"

#include <string>

namespace zrt {

/// Measures GEMM and vector FLOP/s, memory bandwidth, per-kernel overhead and, on
/// several ranks, the ring alpha and beta of the communicator. Returns the JSON
/// object that `zero-opt --machine=FILE` reads. Every rank must call it.
/// With `device` (a GPU), the kernel figures are the device's, measured through
/// its own kernels (f32 and bf16 GEMMs, a copy, tanh, a one-element kernel), a
/// batch of launches timed between two synchronizations; alpha and beta stay the
/// host communicator's. `small`: tiny sizes, for testing the path on an emulated
/// GPU. With `nvmePath` (zero-run --nvme-path), each rank also writes and reads a
/// file there as NVMe offload does (NvmeFile: asynchronous direct I/O;
/// all ranks at once, as in a run) for the NVMe bandwidths.
std::string calibrateMachine(Communicator &comm, Device *device = nullptr,
                             bool small = false, const std::string &nvmePath = "");

} // namespace zrt

#endif // ZRT_CALIBRATE_H
