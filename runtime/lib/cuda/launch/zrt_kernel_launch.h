//===- zrt_kernel_launch.h - Starting a kernel on a GPU ----------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// How CudaKernels.cu starts a kernel. Included with angle brackets from an include
// folder of its own: this one for nvcc, the CUDA emulator's (cuda-emulator/include)
// for its host build, so the kernels' file holds no emulator code.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_KERNEL_LAUNCH_H
#define ZRT_KERNEL_LAUNCH_H

#include <cuda_runtime.h>

#include <cstdint>

namespace zrt::cuda::detail {

/// `grid` blocks of `block` threads of kernel(args...) on `s`. `Barriers`: the
/// kernel calls __syncthreads (nothing to do on a GPU).
template <bool Barriers, typename... P, typename... A>
void startKernel(const char *name, void (*kernel)(P...), int64_t grid, int block,
                 cudaStream_t s, A... args) {
  kernel<<<(unsigned)grid, block, 0, s>>>(static_cast<P>(args)...);
}

} // namespace zrt::cuda::detail

#endif // ZRT_KERNEL_LAUNCH_H
