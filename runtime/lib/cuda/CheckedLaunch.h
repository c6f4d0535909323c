//===- CheckedLaunch.h - Starting a kernel, its error named ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The one launcher the CUDA kernels' files share: on nvcc, and on the host
// against the emulator's headers (zrt_kernel_launch.h says which starts it).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CHECKEDLAUNCH_H
#define ZRT_LIB_CUDA_CHECKEDLAUNCH_H

#include "CudaLaunch.h"

#include <zrt_kernel_launch.h> // the GPU's or the emulator's (see the header)

#include <cstdint>
#include <string>

namespace zrt::cuda {

/// Launches `grid` blocks of `block` threads on `s` (none when `grid` is 0: CUDA
/// refuses an empty grid); a failed launch throws, naming the kernel.
/// `Barriers`: the kernel calls __syncthreads (the emulator runs such blocks'
/// threads as fibers).
template <bool Barriers, typename... P, typename... A>
void launchChecked(const char *name, void (*kernel)(P...), int64_t grid, int block,
                   cudaStream_t s, A... args) {
  if (grid <= 0)
    return;
  detail::startKernel<Barriers>(name, kernel, grid, block, s, args...);
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) // the message only when needed: launches are the hot path
    checkCuda(rc, (std::string("launching the kernel ") + name).c_str());
}

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CHECKEDLAUNCH_H
