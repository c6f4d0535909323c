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

/// Unrolls the loop that follows completely on the GPU: a register array indexed
/// by a loop the compiler does not unroll lives in local memory (ptxas reports
/// a stack frame). The host compiler of the emulator keeps arrays in memory anyway.
#ifdef __CUDACC__
#define ZRT_UNROLL _Pragma("unroll")
#else
#define ZRT_UNROLL
#endif

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

/// The query rows of a block (the forward's and the query gradient's): `tileRows`
/// rows from i0 of head h (its key/value head kvh), `rows` of them inside the
/// sequence, meeting the keys before keyEnd (all, or up to the last row's when
/// causal). The last tiles first: under a causal mask they meet the most keys,
/// and the GPU starts blocks roughly in order, so the longest ones do not trail.
struct QueryTile {
  int64_t bh, i0, b, h, kvh, rows, keyEnd;
  __device__ QueryTile(const AttentionShape &a, int tileRows) {
    int64_t blocks = (a.qLen + tileRows - 1) / tileRows;
    bh = blockIdx.x / blocks;
    i0 = (blocks - 1 - blockIdx.x % blocks) * tileRows;
    b = bh / a.qHeads;
    h = bh % a.qHeads;
    kvh = h / (a.qHeads / a.kvHeads);
    rows = a.qLen - i0 < tileRows ? a.qLen - i0 : tileRows;
    keyEnd = a.causal && i0 + rows < a.kvLen ? i0 + rows : a.kvLen;
  }
};

} // namespace zrt::cuda::attention_device

#endif // ZRT_LIB_CUDA_ATTENTIONDEVICE_H
