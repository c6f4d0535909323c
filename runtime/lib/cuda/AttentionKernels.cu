//===- AttentionKernels.cu - Fused attention on the GPU -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The project's own fused attention: one thread per query row walks the keys with
// an online softmax (forward) or recomputes its probabilities from the saved
// log-sum-exp (query gradient); one thread per key gathers its key and value
// gradients over the queries of the heads that share it, so no two threads write
// one element. Correct for every shape the op allows (head sizes up to
// kMaxAttentionHead), not yet fast: no tiles in shared memory, no tensor cores.
// No T x T matrix is ever stored.
//
//===----------------------------------------------------------------------===//

#include "CudaLaunch.h"

#include "zrt/Float16.h"

#include <zrt_kernel_launch.h> // the GPU's or the emulator's (see the header)

#include <cmath>
#include <cstdint>
#include <string>

namespace zrt::cuda {
namespace {

constexpr int kThreads = 128;

template <typename... P, typename... A>
void launchN(const char *name, void (*kernel)(P...), int64_t n, cudaStream_t s,
             A... args) {
  if (n <= 0)
    return;
  detail::startKernel<false>(name, kernel, (n + kThreads - 1) / kThreads, kThreads, s,
                             args...);
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess)
    checkCuda(rc, (std::string("launching the kernel ") + name).c_str());
}

/// The compute type: f32 for 16-bit and f32 storage, f64 for f64.
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename C> __device__ C negInf() { return -INFINITY; }

/// Query row i of head h against key j, scaled and masked (-inf where masked).
template <typename T, typename C>
__device__ C score(const AttentionShape &a, const T *qi, const T *kj, const void *mask,
                   int64_t b, int64_t h, int64_t i, int64_t j) {
  if (a.causal && j > i)
    return negInf<C>();
  C s = 0;
  for (int64_t d = 0; d < a.size; ++d)
    s += (C)qi[d] * (C)kj[d];
  s *= (C)a.scale;
  if (a.mask) {
    int64_t off = b * a.maskStride[0] + h * a.maskStride[1] + i * a.maskStride[2] +
                  j * a.maskStride[3];
    if (a.mask == 1) {
      if (!static_cast<const uint8_t *>(mask)[off])
        return negInf<C>();
    } else {
      s += (C) static_cast<const T *>(mask)[off];
    }
  }
  return s;
}

template <typename T, typename C>
__device__ C dot(const T *x, const T *y, int64_t n) {
  C s = 0;
  for (int64_t d = 0; d < n; ++d)
    s += (C)x[d] * (C)y[d];
  return s;
}

template <typename T, typename C>
__global__ void attentionKernel(AttentionShape a, const T *q, const T *k, const T *v,
                                const void *mask, T *out, C *lse) {
  int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= a.batch * a.qHeads * a.qLen)
    return;
  int64_t i = row % a.qLen, bh = row / a.qLen, h = bh % a.qHeads, b = bh / a.qHeads;
  int64_t kvh = h / (a.qHeads / a.kvHeads);
  const T *qi = q + row * a.size;
  const T *kh = k + (b * a.kvHeads + kvh) * a.kvLen * a.size;
  const T *vh = v + (b * a.kvHeads + kvh) * a.kvLen * a.vSize;
  C acc[kMaxAttentionHead];
  for (int64_t d = 0; d < a.vSize; ++d)
    acc[d] = 0;
  C m = negInf<C>(), l = 0;
  int64_t end = a.causal && i + 1 < a.kvLen ? i + 1 : a.kvLen;
  for (int64_t j = 0; j < end; ++j) {
    C s = score<T, C>(a, qi, kh + j * a.size, mask, b, h, i, j);
    if (s == negInf<C>())
      continue;
    if (s > m) { // rescale what the row has summed to the new maximum
      C alpha = m == negInf<C>() ? C(0) : std::exp(m - s);
      l *= alpha;
      for (int64_t d = 0; d < a.vSize; ++d)
        acc[d] *= alpha;
      m = s;
    }
    C p = std::exp(s - m);
    l += p;
    for (int64_t d = 0; d < a.vSize; ++d)
      acc[d] += p * (C)vh[j * a.vSize + d];
  }
  for (int64_t d = 0; d < a.vSize; ++d)
    out[row * a.vSize + d] = T(l > 0 ? acc[d] / l : C(0)); // no key seen: zeros
  lse[row] = l > 0 ? m + std::log(l) : negInf<C>();
}

template <typename T, typename C>
__global__ void attentionQueryGradKernel(AttentionShape a, const T *q, const T *k,
                                         const T *v, const T *out, const C *lse,
                                         const T *dout, const void *mask, T *dq) {
  int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= a.batch * a.qHeads * a.qLen)
    return;
  int64_t i = row % a.qLen, bh = row / a.qLen, h = bh % a.qHeads, b = bh / a.qHeads;
  int64_t kvh = h / (a.qHeads / a.kvHeads);
  const T *qi = q + row * a.size, *doi = dout + row * a.vSize;
  const T *kh = k + (b * a.kvHeads + kvh) * a.kvLen * a.size;
  const T *vh = v + (b * a.kvHeads + kvh) * a.kvLen * a.vSize;
  C acc[kMaxAttentionHead];
  for (int64_t d = 0; d < a.size; ++d)
    acc[d] = 0;
  C rowLse = lse[row];
  C delta = dot<T, C>(doi, out + row * a.vSize, a.vSize);
  int64_t end = a.causal && i + 1 < a.kvLen ? i + 1 : a.kvLen;
  for (int64_t j = 0; j < end && rowLse != negInf<C>(); ++j) {
    C s = score<T, C>(a, qi, kh + j * a.size, mask, b, h, i, j);
    if (s == negInf<C>())
      continue;
    C p = std::exp(s - rowLse);
    C ds = p * (dot<T, C>(doi, vh + j * a.vSize, a.vSize) - delta);
    for (int64_t d = 0; d < a.size; ++d)
      acc[d] += ds * (C)kh[j * a.size + d];
  }
  for (int64_t d = 0; d < a.size; ++d)
    dq[row * a.size + d] = T(acc[d] * (C)a.scale);
}

template <typename T, typename C>
__global__ void attentionKeyValueGradKernel(AttentionShape a, const T *q, const T *k,
                                            const T *v, const T *out, const C *lse,
                                            const T *dout, const void *mask, T *dk, T *dv) {
  int64_t key = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (key >= a.batch * a.kvHeads * a.kvLen)
    return;
  int64_t j = key % a.kvLen, bkv = key / a.kvLen, kvh = bkv % a.kvHeads, b = bkv / a.kvHeads;
  int64_t group = a.qHeads / a.kvHeads;
  const T *kj = k + key * a.size, *vj = v + key * a.vSize;
  C dkAcc[kMaxAttentionHead], dvAcc[kMaxAttentionHead];
  for (int64_t d = 0; d < a.size; ++d)
    dkAcc[d] = 0;
  for (int64_t d = 0; d < a.vSize; ++d)
    dvAcc[d] = 0;
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int64_t i = a.causal ? j : 0; i < a.qLen; ++i) {
      int64_t row = (b * a.qHeads + h) * a.qLen + i;
      C rowLse = lse[row];
      if (rowLse == negInf<C>())
        continue;
      C s = score<T, C>(a, q + row * a.size, kj, mask, b, h, i, j);
      if (s == negInf<C>())
        continue;
      const T *doi = dout + row * a.vSize;
      C p = std::exp(s - rowLse);
      C delta = dot<T, C>(doi, out + row * a.vSize, a.vSize);
      C ds = p * (dot<T, C>(doi, vj, a.vSize) - delta);
      for (int64_t d = 0; d < a.vSize; ++d)
        dvAcc[d] += p * (C)doi[d];
      for (int64_t d = 0; d < a.size; ++d)
        dkAcc[d] += ds * (C)q[row * a.size + d];
    }
  for (int64_t d = 0; d < a.size; ++d)
    dk[key * a.size + d] = T(dkAcc[d] * (C)a.scale);
  for (int64_t d = 0; d < a.vSize; ++d)
    dv[key * a.vSize + d] = T(dvAcc[d]);
}

} // namespace

void attention(cudaStream_t s, Elem t, const AttentionShape &a, const void *q, const void *k,
               const void *v, const void *mask, void *out, void *lse) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Acc<T>::type;
    launchN("attention", attentionKernel<T, C>, a.batch * a.qHeads * a.qLen, s, a,
            (const T *)q, (const T *)k, (const T *)v, mask, (T *)out, (C *)lse);
  });
}

void attentionGrad(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                   const void *k, const void *v, const void *out, const void *lse,
                   const void *dout, const void *mask, void *dq, void *dk, void *dv) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Acc<T>::type;
    launchN("attentionQueryGrad", attentionQueryGradKernel<T, C>,
            a.batch * a.qHeads * a.qLen, s, a, (const T *)q, (const T *)k, (const T *)v,
            (const T *)out, (const C *)lse, (const T *)dout, mask, (T *)dq);
    launchN("attentionKeyValueGrad", attentionKeyValueGradKernel<T, C>,
            a.batch * a.kvHeads * a.kvLen, s, a, (const T *)q, (const T *)k, (const T *)v,
            (const T *)out, (const C *)lse, (const T *)dout, mask, (T *)dk, (T *)dv);
  });
}

} // namespace zrt::cuda
