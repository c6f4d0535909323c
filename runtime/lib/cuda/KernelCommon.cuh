//===- KernelCommon.cuh - What the kernel files share ---------------*- CUDA -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The launch helpers, block reductions, dtype dispatch and index reads the kernel
// files share (CudaKernels.cu, OptimizerKernels.cu, SoftmaxLossKernels.cu). In an unnamed namespace: device code is
// linked within each file (no relocatable device code), so each gets its own.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CUDA_KERNELCOMMON_CUH
#define ZRT_CUDA_KERNELCOMMON_CUH

#include "CheckedLaunch.h"
#include "CudaLaunch.h"

#include "../kernels/ElementwiseMath.h"
#include "../kernels/FusedMath.h"
#include "../kernels/NormalizationMath.h"
#include "../kernels/OptimizerMath.h"

#include "zrt/Float16.h"

#include <zrt_kernel_launch.h> // the GPU's or the emulator's (see the header)

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <string>
#include <type_traits>

namespace zrt::cuda {
namespace {

constexpr int kThreads = 256;

/// Launches `kernel` as `grid` blocks of `block` threads on `s`; an empty grid has
/// nothing to do (CUDA refuses it). A failed launch is an error naming `name`.
/// `Barriers`: the kernel calls __syncthreads (the emulator runs such blocks'
/// threads as fibers).
template <bool Barriers = false, typename... P, typename... A>
void launch(const char *name, void (*kernel)(P...), int64_t grid, int block,
            cudaStream_t s, A... args) {
  launchChecked<Barriers>(name, kernel, grid, block, s, args...);
}

/// One thread per element of `n`.
template <typename... P, typename... A>
void launchN(const char *name, void (*kernel)(P...), int64_t n, cudaStream_t s,
             A... args) {
  launch(name, kernel, (n + kThreads - 1) / kThreads, kThreads, s, args...);
}

/// One block of kThreads per row (or column) of `rows`; the threads of a block
/// share its work and combine with blockReduce.
template <typename... P, typename... A>
void launchRows(const char *name, void (*kernel)(P...), int64_t rows, cudaStream_t s,
                A... args) {
  launch<true>(name, kernel, rows, kThreads, s, args...);
}

struct Add {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct Max {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

/// Combines every thread's `v` of the block (kThreads of them); all get the result.
/// Every thread of the block must call it, as it holds __syncthreads.
template <typename Op> __device__ double blockReduce(double v, Op op) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if ((int)threadIdx.x < k)
      partial[threadIdx.x] = op(partial[threadIdx.x], partial[threadIdx.x + k]);
    __syncthreads();
  }
  double r = partial[0];
  __syncthreads(); // before the next call reuses `partial`
  return r;
}

__device__ inline int64_t offsetOf(const Strided &v, int64_t linear) {
  if (v.contiguous) // no index arithmetic for the common, unbroadcast case
    return linear;
  if (v.index32) {
    uint32_t at = (uint32_t)linear, off = 0;
    for (int d = v.rank - 1; d >= 0; --d) {
      uint32_t size = (uint32_t)v.shape[d], next = at / size;
      off += (at - next * size) * (uint32_t)v.stride[d];
      at = next;
    }
    return off;
  }
  int64_t off = 0;
  for (int d = v.rank - 1; d >= 0; --d) {
    int64_t i = linear % v.shape[d];
    linear /= v.shape[d];
    off += i * v.stride[d];
  }
  return off;
}

/// Calls f(T{}) for the storage type of `t`.
template <typename F> void dispatch(Elem t, F f) {
  switch (t) {
  case Elem::F32:
    return f(float{});
  case Elem::F64:
    return f(double{});
  case Elem::BF16:
    return f(bf16{});
  case Elem::F16:
    return f(f16{});
  case Elem::I32:
    return f(int32_t{});
  case Elem::I64:
    return f(int64_t{});
  case Elem::I8:
    return f(int8_t{});
  case Elem::U8:
    return f(uint8_t{});
  }
}

template <typename F> void dispatchSize(int size, F f) {
  switch (size) {
  case 1:
    return f(uint8_t{});
  case 2:
    return f(uint16_t{});
  case 4:
    return f(uint32_t{});
  default:
    return f(uint64_t{});
  }
}

/// Element `pos` of an int64 or int32 index (or label) tensor.
__device__ inline int64_t indexAt(const void *index, bool index64, int64_t pos) {
  return index64 ? ((const int64_t *)index)[pos] : ((const int32_t *)index)[pos];
}

} // namespace
} // namespace zrt::cuda

#endif // ZRT_CUDA_KERNELCOMMON_CUH
