//===- AttentionDevice.h - What both attention kernel files share -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Included by the CUDA-core kernels (AttentionKernels.cu) and the tensor-core
// ones (TensorCoreAttention.cu): the launch, the compute type and the explicit
// mask, so that both read a mask the same way.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_ATTENTIONDEVICE_H
#define ZRT_LIB_CUDA_ATTENTIONDEVICE_H

#include "CudaLaunch.h"

#include "CheckedLaunch.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace zrt::cuda::attention_device {

/// Launches `blocks` blocks of `threads` (none when `blocks` is 0); a launch error
/// throws, naming the kernel.
template <bool Barriers, typename... P, typename... A>
void launchBlocks(const char *name, void (*kernel)(P...), int64_t blocks, int threads,
                  cudaStream_t s, A... args) {
  launchChecked<Barriers>(name, kernel, blocks, threads, s, args...);
}

/// The compute type: f32 for 16-bit and f32 storage, f64 for f64.
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename C> __device__ C negInf() { return -INFINITY; }

/// The explicit mask applied to score s of query row i of head h against key j:
/// -inf where a boolean mask hides the key, plus an additive mask's value.
template <typename T, typename C>
__device__ C masked(const AttentionShape &a, const void *mask, C s, int64_t b, int64_t h,
                    int64_t i, int64_t j) {
  if (!a.mask)
    return s;
  int64_t off = b * a.maskStride[0] + h * a.maskStride[1] + i * a.maskStride[2] +
                j * a.maskStride[3];
  if (a.mask == 1)
    return static_cast<const uint8_t *>(mask)[off] ? s : negInf<C>();
  return s + (C) static_cast<const T *>(mask)[off];
}

} // namespace zrt::cuda::attention_device

#endif // ZRT_LIB_CUDA_ATTENTIONDEVICE_H
