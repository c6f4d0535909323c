//===- AttentionKernels.cu - Fused attention on the GPU -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The project's own fused attention for f32, f64 and heads over 128 (16-bit heads
// of up to 128 go to the tensor-core kernels, TensorCoreAttention.cu), tiled as
// FlashAttention-2 is but on the CUDA cores: a block's threads are query rows
// (forward, query gradient) or keys (key and value gradients), and the other side
// comes through shared memory a tile at a time, which every thread of the block
// reads (a broadcast). The forward keeps an online softmax per row; the backward
// recomputes probabilities from the saved log-sum-exp, each key's gradients
// summed over the queries of every head that shares it, so no two threads write
// one element. Rows and tiles are padded with zeros to the head size's bucket
// (64, 128 or 256: registers and tiles are sized at compile time). No T x T
// matrix is ever stored.
//
//===----------------------------------------------------------------------===//

#include "AttentionDevice.h"
#include "CudaLaunch.h"

#include "zrt/Float16.h"

#include <zrt_kernel_launch.h> // the GPU's or the emulator's (see the header)

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace zrt::cuda {
namespace {

using namespace attention_device;

/// Block shapes for a head-size bucket and compute type C: the forward's and the
/// query gradient's rows per block (threads) and keys per shared tile (K and V
/// tiles 32 KiB together); the key gradients' keys per block (threads: their own
/// keys and values about 16 KiB) and queries per tile (queries and their
/// gradients 16 KiB). Every kernel stays under the 48 KiB of static shared memory.
template <int Head, typename C> struct Tiles {
  static constexpr int kRows = Head <= 64 ? 64 : 32;
  static constexpr int kKeys = 16384 / (Head * (int)sizeof(C));
  static constexpr int kGradKeys = 8192 / (Head * (int)sizeof(C));
  static constexpr int kGradRows = 8192 / (Head * (int)sizeof(C));
};

/// `n` rows of `width` elements from `src` (row stride `stride`) into the shared
/// tile `tile` (row stride Stride), zeros past `width` up to Head; every thread of
/// the block takes part.
template <int Head, int Stride, typename T, typename C>
__device__ void loadTile(C *tile, const T *src, int64_t n, int64_t width, int64_t stride) {
  for (int64_t e = threadIdx.x; e < n * Head; e += blockDim.x) {
    int64_t r = e / Head, d = e % Head;
    tile[r * Stride + d] = d < width ? (C)src[r * stride + d] : C(0);
  }
}

/// One row of `width` elements into registers, zeros past it up to Head.
template <int Head, typename T, typename C>
__device__ void loadRow(C (&row)[Head], const T *src, int64_t width) {
  for (int d = 0; d < Head; ++d)
    row[d] = d < width ? (C)src[d] : C(0);
}

template <int Head, typename C> __device__ C dotRow(const C (&x)[Head], const C *y) {
  C s = 0;
  for (int d = 0; d < Head; ++d)
    s += x[d] * y[d];
  return s;
}

/// A block of `rows` query rows of one head, a thread per row (the forward and the
/// query gradient): its head, its first row and this thread's, the key/value head
/// its rows read and the keys they see (to the last row's, when causal).
struct QueryRows {
  int64_t bh, i0, b, h, i, kvh, keyEnd;
  bool active;
  __device__ QueryRows(const AttentionShape &a, int rows) {
    int64_t blocks = (a.qLen + rows - 1) / rows;
    bh = blockIdx.x / blocks;
    i0 = (blockIdx.x % blocks) * rows;
    b = bh / a.qHeads;
    h = bh % a.qHeads;
    i = i0 + threadIdx.x;
    active = i < a.qLen;
    kvh = h / (a.qHeads / a.kvHeads);
    int64_t lastRow = i0 + rows < a.qLen ? i0 + rows : a.qLen;
    keyEnd = a.causal && lastRow < a.kvLen ? lastRow : a.kvLen;
  }
  /// This thread's row (the block's first row for a thread past the end, which
  /// reads but computes nothing), and its place in the log-sum-exp.
  __device__ int64_t row() const { return active ? i : i0; }
  __device__ int64_t lseAt(const AttentionShape &a) const { return bh * a.qLen + row(); }
  /// Of the `n` keys of the tile at j0, how many this thread's row sees.
  __device__ int64_t seen(const AttentionShape &a, int64_t j0, int64_t n) const {
    if (!active)
      return 0;
    return a.causal ? (i + 1 - j0 < n ? i + 1 - j0 : n) : n;
  }
};

/// The forward: a block of Tiles::kRows query rows of one head, a thread per row,
/// meets the keys a tile at a time with an online softmax.
template <typename T, typename C, int Head>
__global__ void attentionKernel(AttentionShape a, const T *q, const T *k, const T *v,
                                const void *mask, T *out, C *lse) {
  constexpr int kRows = Tiles<Head, C>::kRows, kKeys = Tiles<Head, C>::kKeys;
  __shared__ C keys[kKeys * Head];
  __shared__ C values[kKeys * Head];
  QueryRows block(a, kRows);
  const T *kh = k + a.key.at(block.b, block.kvh, 0);
  const T *vh = v + a.value.at(block.b, block.kvh, 0);
  C qi[Head], acc[Head];
  loadRow(qi, q + a.query.at(block.b, block.h, block.row()), a.size);
  for (int d = 0; d < Head; ++d)
    acc[d] = 0;
  C m = negInf<C>(), l = 0, scale = (C)a.scale;
  for (int64_t j0 = 0; j0 < block.keyEnd; j0 += kKeys) {
    int64_t n = block.keyEnd - j0 < kKeys ? block.keyEnd - j0 : kKeys;
    loadTile<Head, Head>(keys, kh + j0 * a.key.row, n, a.size, a.key.row);
    loadTile<Head, Head>(values, vh + j0 * a.value.row, n, a.vSize, a.value.row);
    __syncthreads();
    for (int64_t c = 0, seen = block.seen(a, j0, n); c < seen; ++c) {
      C s = masked<T, C>(a, mask, dotRow(qi, keys + c * Head) * scale, block.b, block.h,
                         block.i, j0 + c);
      if (s == negInf<C>())
        continue;
      if (s > m) { // rescale what the row has summed to the new maximum
        C alpha = m == negInf<C>() ? C(0) : std::exp(m - s);
        l *= alpha;
        for (int d = 0; d < Head; ++d)
          acc[d] *= alpha;
        m = s;
      }
      C p = std::exp(s - m);
      l += p;
      const C *vc = values + c * Head;
      for (int d = 0; d < Head; ++d)
        acc[d] += p * vc[d];
    }
    __syncthreads(); // before the next tile overwrites these
  }
  if (!block.active)
    return;
  T *o = out + a.out.at(block.b, block.h, block.i);
  for (int64_t d = 0; d < a.vSize; ++d)
    o[d] = T(l > 0 ? acc[d] / l : C(0)); // no key seen: zeros
  lse[block.lseAt(a)] = l > 0 ? m + std::log(l) : negInf<C>();
}

/// The query gradient: a thread per query row, the keys and values a tile at a
/// time; dQ = scale * sum_j P (dP - delta) K_j, dP = dO . V_j, delta = dO . O.
template <typename T, typename C, int Head>
__global__ void attentionQueryGradKernel(AttentionShape a, const T *q, const T *k,
                                         const T *v, const T *out, const C *lse,
                                         const T *dout, const void *mask, T *dq) {
  constexpr int kRows = Tiles<Head, C>::kRows, kKeys = Tiles<Head, C>::kKeys;
  __shared__ C keys[kKeys * Head];
  __shared__ C values[kKeys * Head];
  QueryRows block(a, kRows);
  int64_t row = block.row();
  const T *kh = k + a.key.at(block.b, block.kvh, 0);
  const T *vh = v + a.value.at(block.b, block.kvh, 0);
  const T *o = out + a.out.at(block.b, block.h, row);
  C qi[Head], doi[Head], acc[Head];
  loadRow(qi, q + a.query.at(block.b, block.h, row), a.size);
  loadRow(doi, dout + a.dout.at(block.b, block.h, row), a.vSize);
  C delta = 0;
  for (int64_t d = 0; d < a.vSize; ++d)
    delta += doi[d] * (C)o[d];
  for (int d = 0; d < Head; ++d)
    acc[d] = 0;
  C rowLse = lse[block.lseAt(a)], scale = (C)a.scale;
  for (int64_t j0 = 0; j0 < block.keyEnd; j0 += kKeys) {
    int64_t n = block.keyEnd - j0 < kKeys ? block.keyEnd - j0 : kKeys;
    loadTile<Head, Head>(keys, kh + j0 * a.key.row, n, a.size, a.key.row);
    loadTile<Head, Head>(values, vh + j0 * a.value.row, n, a.vSize, a.value.row);
    __syncthreads();
    int64_t seen = rowLse == negInf<C>() ? 0 : block.seen(a, j0, n);
    for (int64_t c = 0; c < seen; ++c) {
      C s = masked<T, C>(a, mask, dotRow(qi, keys + c * Head) * scale, block.b, block.h,
                         block.i, j0 + c);
      if (s == negInf<C>())
        continue;
      C p = std::exp(s - rowLse);
      C ds = p * (dotRow(doi, values + c * Head) - delta);
      const C *kc = keys + c * Head;
      for (int d = 0; d < Head; ++d)
        acc[d] += ds * kc[d];
    }
    __syncthreads();
  }
  if (!block.active)
    return;
  T *dqRow = dq + a.dquery.at(block.b, block.h, row);
  for (int64_t d = 0; d < a.size; ++d)
    dqRow[d] = T(acc[d] * scale);
}

/// The key and value gradients: a thread per key (its key and value in shared
/// rows padded by one, so that threads reading one column hit distinct banks), the
/// queries of every head sharing it a tile at a time with their gradients, log-sum-
/// exps and deltas.
template <typename T, typename C, int Head>
__global__ void attentionKeyValueGradKernel(AttentionShape a, const T *q, const T *k,
                                            const T *v, const T *out, const C *lse,
                                            const T *dout, const void *mask, T *dk, T *dv) {
  constexpr int kKeys = Tiles<Head, C>::kGradKeys, kRows = Tiles<Head, C>::kGradRows;
  constexpr int kPadded = Head + 1;
  __shared__ C ownKeys[kKeys * kPadded];
  __shared__ C ownValues[kKeys * kPadded];
  __shared__ C queries[kRows * Head];
  __shared__ C grads[kRows * Head];
  __shared__ C rowLse[kRows];
  __shared__ C rowDelta[kRows];
  int64_t kBlocks = (a.kvLen + kKeys - 1) / kKeys;
  int64_t bkv = blockIdx.x / kBlocks, j0 = (blockIdx.x % kBlocks) * kKeys;
  int64_t b = bkv / a.kvHeads, kvh = bkv % a.kvHeads, group = a.qHeads / a.kvHeads;
  int64_t j = j0 + threadIdx.x;
  bool active = j < a.kvLen;
  int64_t n = a.kvLen - j0 < kKeys ? a.kvLen - j0 : kKeys;
  loadTile<Head, kPadded>(ownKeys, k + a.key.at(b, kvh, j0), n, a.size, a.key.row);
  loadTile<Head, kPadded>(ownValues, v + a.value.at(b, kvh, j0), n, a.vSize, a.value.row);
  C dkAcc[Head], dvAcc[Head];
  for (int d = 0; d < Head; ++d)
    dkAcc[d] = dvAcc[d] = 0;
  const C *kj = ownKeys + threadIdx.x * kPadded, *vj = ownValues + threadIdx.x * kPadded;
  C scale = (C)a.scale;
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
    int64_t bh = b * a.qHeads + h;
    // Causal: query rows before j0 see none of these keys.
    for (int64_t i0 = a.causal ? j0 : 0; i0 < a.qLen; i0 += kRows) {
      int64_t rows = a.qLen - i0 < kRows ? a.qLen - i0 : kRows;
      __syncthreads(); // the last tile's readers are done (and the own tiles loaded)
      loadTile<Head, Head>(queries, q + a.query.at(b, h, i0), rows, a.size, a.query.row);
      loadTile<Head, Head>(grads, dout + a.dout.at(b, h, i0), rows, a.vSize, a.dout.row);
      if (threadIdx.x < rows) {
        int64_t i = i0 + threadIdx.x;
        const T *dor = dout + a.dout.at(b, h, i), *o = out + a.out.at(b, h, i);
        C delta = 0;
        for (int64_t d = 0; d < a.vSize; ++d)
          delta += (C)dor[d] * (C)o[d];
        rowDelta[threadIdx.x] = delta;
        rowLse[threadIdx.x] = lse[bh * a.qLen + i];
      }
      __syncthreads();
      for (int64_t r = 0; active && r < rows; ++r) {
        int64_t i = i0 + r;
        if ((a.causal && j > i) || rowLse[r] == negInf<C>())
          continue;
        const C *qr = queries + r * Head, *dor = grads + r * Head;
        C s = 0;
        for (int d = 0; d < Head; ++d)
          s += qr[d] * kj[d];
        s = masked<T, C>(a, mask, s * scale, b, h, i, j);
        if (s == negInf<C>())
          continue;
        C p = std::exp(s - rowLse[r]), dp = 0;
        for (int d = 0; d < Head; ++d) {
          dvAcc[d] += p * dor[d];
          dp += dor[d] * vj[d];
        }
        C ds = p * (dp - rowDelta[r]);
        for (int d = 0; d < Head; ++d)
          dkAcc[d] += ds * qr[d];
      }
    }
  }
  if (!active)
    return;
  T *dkRow = dk + a.dkey.at(b, kvh, j), *dvRow = dv + a.dvalue.at(b, kvh, j);
  for (int64_t d = 0; d < a.size; ++d)
    dkRow[d] = T(dkAcc[d] * scale);
  for (int64_t d = 0; d < a.vSize; ++d)
    dvRow[d] = T(dvAcc[d]);
}

/// Calls f with the head-size bucket (64, 128 or 256) as a compile-time value.
template <typename F> void dispatchHead(const AttentionShape &a, F &&f) {
  int64_t head = a.size > a.vSize ? a.size : a.vSize;
  if (head <= 64)
    f(std::integral_constant<int, 64>{});
  else if (head <= 128)
    f(std::integral_constant<int, 128>{});
  else
    f(std::integral_constant<int, kMaxAttentionHead>{});
}

} // namespace

void attention(cudaStream_t s, Elem t, const AttentionShape &a, const void *q, const void *k,
               const void *v, const void *mask, void *out, void *lse) {
  if (tensorCoreAttentionFits(t, a))
    return tensorCoreAttention(s, t, a, q, k, v, mask, out, lse);
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Acc<T>::type;
    dispatchHead(a, [&](auto head) {
      constexpr int Head = decltype(head)::value, kRows = Tiles<Head, C>::kRows;
      launchBlocks<true>("attention", attentionKernel<T, C, Head>,
                         a.batch * a.qHeads * ((a.qLen + kRows - 1) / kRows), kRows, s, a,
                         (const T *)q, (const T *)k, (const T *)v, mask, (T *)out, (C *)lse);
    });
  });
}

void attentionGrad(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                   const void *k, const void *v, const void *out, const void *lse,
                   const void *dout, const void *mask, void *dq, void *dk, void *dv) {
  if (tensorCoreAttentionFits(t, a))
    return tensorCoreAttentionGrad(s, t, a, q, k, v, out, lse, dout, mask, dq, dk, dv);
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Acc<T>::type;
    dispatchHead(a, [&](auto head) {
      constexpr int Head = decltype(head)::value, kRows = Tiles<Head, C>::kRows,
                    kKeys = Tiles<Head, C>::kGradKeys;
      launchBlocks<true>("attentionQueryGrad", attentionQueryGradKernel<T, C, Head>,
                         a.batch * a.qHeads * ((a.qLen + kRows - 1) / kRows), kRows, s, a,
                         (const T *)q, (const T *)k, (const T *)v, (const T *)out,
                         (const C *)lse, (const T *)dout, mask, (T *)dq);
      launchBlocks<true>("attentionKeyValueGrad", attentionKeyValueGradKernel<T, C, Head>,
                         a.batch * a.kvHeads * ((a.kvLen + kKeys - 1) / kKeys), kKeys, s, a,
                         (const T *)q, (const T *)k, (const T *)v, (const T *)out,
                         (const C *)lse, (const T *)dout, mask, (T *)dk, (T *)dv);
    });
  });
}

} // namespace zrt::cuda
