//===- AttentionKernels.cu - Fused attention on the GPU -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The project's own fused attention for f32, f64 and heads over 128 (16-bit heads
// of up to 128 go to the tensor-core kernels, TensorCoreAttention.cu):
// FlashAttention-2's schedule on the CUDA cores. A block takes a tile of query
// rows (forward, query gradient) or of keys (key and value gradients) and meets
// the other side a tile at a time through shared memory. Four threads share each
// of its rows: for the scores each computes whole dot products against every
// fourth column of the tile, for the outputs each owns every fourth element of
// the row, so a thread's registers are a fixed, fully unrolled handful (no array
// indexed at run time, nothing in local memory: the ctest
// attention-kernel-resources reads ptxas's report of the build). Rows of shared
// tiles are padded by one element so that the threads of a warp reading one
// column hit distinct banks.
//
// The forward keeps an online softmax per row (its maximum agreed by the row's
// four threads through shared memory once per key tile); the backward recomputes
// probabilities from the saved log-sum-exp, each key's gradients summed over the
// queries of every head that shares it, so no two threads write one element and
// every sum runs in a fixed order (the results do not depend on scheduling).
// Rows and tiles are zero-padded to the head size's bucket (64, 128 or 256). No
// T x T matrix is ever stored.
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

/// Threads per row of a tile.
constexpr int kLanes = 4;

/// Tile sizes for a head-size bucket and compute type C. kUnit rows of a Head-wide
/// tile are 8 KiB: the forward takes 2 kUnit query rows per block and kUnit keys
/// per tile (about 41 KiB of shared memory in all), the backward kUnit rows and
/// kUnit keys (about 38 KiB); every kernel stays under the 48 KiB of static
/// shared memory. Threads: kLanes per row of the block's own tile.
template <int Head, typename C> struct Tiles {
  static constexpr int kUnit = 8192 / (Head * (int)sizeof(C));
  static constexpr int kRows = 2 * kUnit, kKeys = kUnit;
  static constexpr int kGradRows = kUnit, kGradKeys = kUnit;
  static constexpr int kStride = Head + 1; // a padded shared row
  static_assert(kKeys % kLanes == 0 && Head % kLanes == 0, "lanes split rows evenly");
};

/// `rows` rows from `src` (row stride `stride`) into the shared tile `tile` (row
/// stride Head + 1): of the first `n`, the first `width` elements; zeros
/// elsewhere, so that every product over the tile reads finite values. Every
/// thread of the block takes part.
template <int Head, typename T, typename C>
__device__ void loadTile(C *tile, const T *src, int64_t n, int64_t width, int64_t stride,
                         int rows) {
  for (int e = threadIdx.x; e < rows * Head; e += blockDim.x) {
    int r = e / Head, d = e % Head;
    tile[r * (Head + 1) + d] = r < n && d < width ? (C)src[r * stride + d] : C(0);
  }
}

/// out[u] = x . rows[first + kLanes u], u < kCount: one shared row against every
/// fourth padded row of a shared tile, each element of x read once for all of
/// them (each dot summed over d in ascending order).
template <int Head, int kCount, typename C>
__device__ __forceinline__ void dots(C (&out)[kCount], const C *x, const C *rows, int first) {
  ZRT_UNROLL
  for (int u = 0; u < kCount; ++u)
    out[u] = 0;
  for (int d = 0; d < Head; ++d) {
    C xd = x[d];
    ZRT_UNROLL
    for (int u = 0; u < kCount; ++u)
      out[u] += xd * rows[(first + kLanes * u) * (Head + 1) + d];
  }
}

/// The four lanes' partial sums of one row, `partial` its four slots, added in
/// one fixed order.
template <typename C> __device__ C laneSum(const C *partial) {
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

/// delta = dO . O of the row at `row` of the shared dO tile (query row i), this
/// lane's part (every fourth element); zero for a row past the sequence.
template <int Head, typename T, typename C>
__device__ C deltaPart(const AttentionShape &a, const C *doutRow, const T *out, int64_t b,
                       int64_t h, int64_t i, bool inside, int lane) {
  C part = 0;
  if (!inside)
    return part;
  const T *o = out + a.out.at(b, h, i);
  for (int d = lane; d < Head; d += kLanes)
    if (d < a.vSize)
      part += doutRow[d] * (C)o[d];
  return part;
}

/// acc[u] += sum over c of w[c] * rows[c][lane + kLanes u], c ascending: this
/// thread's every fourth element of the product of a row of weights (shared,
/// kCount of them) and a shared tile of kCount padded rows.
template <int Head, int kCount, typename C>
__device__ __forceinline__ void accumulate(C (&acc)[Head / kLanes], const C *w, const C *rows,
                                           int lane) {
  for (int c = 0; c < kCount; ++c) {
    C x = w[c];
    const C *row = rows + c * (Head + 1) + lane;
    ZRT_UNROLL
    for (int u = 0; u < Head / kLanes; ++u)
      acc[u] += x * row[kLanes * u];
  }
}

/// f of this thread's every fourth element of a row, up to `width`.
template <int Head, typename T, typename C, typename F>
__device__ __forceinline__ void storeRow(T *dst, const C (&acc)[Head / kLanes], int64_t width,
                                         int lane, F f) {
  ZRT_UNROLL
  for (int u = 0; u < Head / kLanes; ++u) {
    int d = lane + kLanes * u;
    if (d < width)
      dst[d] = T(f(acc[u]));
  }
}

/// A thread of a block of query rows (the forward's and the query gradient's):
/// the block's tile, this thread's row r of it and lane, its query row i (inside
/// the sequence or not), and the key/value head its rows read.
template <typename T> struct QueryLane {
  QueryTile tile;
  int r, lane;
  int64_t i;
  bool active;
  const T *keys, *values; // the key/value head's first rows
  __device__ QueryLane(const AttentionShape &a, int rows, const T *k, const T *v)
      : tile(a, rows), r(threadIdx.x / kLanes), lane(threadIdx.x % kLanes), i(tile.i0 + r),
        active(r < tile.rows), keys(k + a.key.at(tile.b, tile.kvh, 0)),
        values(v + a.value.at(tile.b, tile.kvh, 0)) {}
  /// The kKeys-row key and value tiles at key j0 (n keys left) into shared memory,
  /// once every thread is done with the last ones; ends with a barrier.
  template <int Head, int kKeys, typename C>
  __device__ void loadKeys(const AttentionShape &a, C *ks, C *vs, int64_t j0, int64_t n) const {
    __syncthreads();
    loadTile<Head>(ks, keys + j0 * a.key.row, n, a.size, a.key.row, kKeys);
    loadTile<Head>(vs, values + j0 * a.value.row, n, a.vSize, a.value.row, kKeys);
    __syncthreads();
  }
  /// Whether this thread's row sees key j of a tile with n keys from j0.
  __device__ bool sees(const AttentionShape &a, int c, int64_t n, int64_t j) const {
    return active && c < n && !(a.causal && j > i);
  }
};

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <int Head, typename C> struct ForwardShared {
  static constexpr int kRows = Tiles<Head, C>::kRows, kKeys = Tiles<Head, C>::kKeys;
  static constexpr int kStride = Tiles<Head, C>::kStride;
  C queries[kRows * kStride];
  C keys[kKeys * kStride];
  C values[kKeys * kStride];
  C probs[kRows * (kKeys + 1)];
  C partial[kRows * kLanes]; // a row's four lanes' maxima, then sums
};

/// A block of Tiles::kRows query rows of one head (kLanes threads per row) meets
/// the keys a tile at a time with an online softmax.
template <typename T, typename C, int Head>
__global__ void attentionKernel(AttentionShape a, const T *q, const T *k, const T *v,
                                const void *mask, T *out, C *lse) {
  using S = ForwardShared<Head, C>;
  constexpr int kRows = S::kRows, kKeys = S::kKeys, kStride = S::kStride;
  constexpr int kMine = kKeys / kLanes, kOut = Head / kLanes;
  __shared__ S sm;
  QueryLane<T> t(a, kRows, k, v);
  const QueryTile &tile = t.tile;
  int r = t.r, lane = t.lane;
  loadTile<Head>(sm.queries, q + a.query.at(tile.b, tile.h, tile.i0), tile.rows, a.size,
                 a.query.row, kRows);
  const C *qr = sm.queries + r * kStride;
  C acc[kOut];
  ZRT_UNROLL
  for (int u = 0; u < kOut; ++u)
    acc[u] = 0;
  C m = negInf<C>(), l = 0, scale = (C)a.scale;
  for (int64_t j0 = 0; j0 < tile.keyEnd; j0 += kKeys) {
    int64_t n = tile.keyEnd - j0 < kKeys ? tile.keyEnd - j0 : kKeys;
    t.template loadKeys<Head, kKeys>(a, sm.keys, sm.values, j0, n);
    // This thread's scores: row r against every fourth key of the tile.
    C s[kMine], tileMax = negInf<C>();
    dots<Head>(s, qr, sm.keys, lane);
    ZRT_UNROLL
    for (int u = 0; u < kMine; ++u) {
      int c = lane + kLanes * u;
      int64_t j = j0 + c;
      C x = negInf<C>();
      if (t.sees(a, c, n, j))
        x = masked<T, C>(a, mask, s[u] * scale, tile.b, tile.h, t.i, j);
      s[u] = x;
      tileMax = x > tileMax ? x : tileMax;
    }
    sm.partial[threadIdx.x] = tileMax;
    __syncthreads();
    C mNew = m;
    ZRT_UNROLL
    for (int p = 0; p < kLanes; ++p) {
      C x = sm.partial[r * kLanes + p];
      mNew = x > mNew ? x : mNew;
    }
    if (mNew != negInf<C>()) { // rescale what the row has summed to the new maximum
      C alpha = m == negInf<C>() ? C(0) : std::exp(m - mNew);
      l *= alpha;
      ZRT_UNROLL
      for (int u = 0; u < kOut; ++u)
        acc[u] *= alpha;
      m = mNew;
    }
    ZRT_UNROLL
    for (int u = 0; u < kMine; ++u) {
      C p = s[u] == negInf<C>() ? C(0) : std::exp(s[u] - m);
      l += p;
      sm.probs[r * (kKeys + 1) + lane + kLanes * u] = p;
    }
    __syncthreads();
    accumulate<Head, kKeys>(acc, sm.probs + r * (kKeys + 1), sm.values, lane); // O += P V
  }
  // The row's sum: its four lanes' parts (each over its own keys, all scaled to
  // the row's one maximum).
  __syncthreads();
  sm.partial[threadIdx.x] = l;
  __syncthreads();
  l = laneSum(sm.partial + r * kLanes);
  if (!t.active)
    return;
  storeRow<Head>(out + a.out.at(tile.b, tile.h, t.i), acc, a.vSize, lane,
                 [l](C x) { return l > 0 ? x / l : C(0); }); // no key seen: zeros
  if (lane == 0)
    lse[tile.bh * a.qLen + t.i] = l > 0 ? m + std::log(l) : negInf<C>();
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

template <int Head, typename C> struct QueryGradShared {
  static constexpr int kRows = Tiles<Head, C>::kGradRows, kKeys = Tiles<Head, C>::kKeys;
  static constexpr int kStride = Tiles<Head, C>::kStride;
  C queries[kRows * kStride];
  C grads[kRows * kStride]; // dO
  C keys[kKeys * kStride];
  C values[kKeys * kStride];
  C scoreGrads[kRows * (kKeys + 1)];
  C partial[kRows * kLanes];
};

/// The query gradient: a block of query rows, the keys and values a tile at a
/// time; dQ = scale * sum_j P (dP - delta) K_j, dP = dO . V_j, delta = dO . O.
template <typename T, typename C, int Head>
__global__ void attentionQueryGradKernel(AttentionShape a, const T *q, const T *k,
                                         const T *v, const T *out, const C *lse,
                                         const T *dout, const void *mask, T *dq) {
  using S = QueryGradShared<Head, C>;
  constexpr int kRows = S::kRows, kKeys = S::kKeys, kStride = S::kStride;
  constexpr int kMine = kKeys / kLanes, kOut = Head / kLanes;
  __shared__ S sm;
  QueryLane<T> t(a, kRows, k, v);
  const QueryTile &tile = t.tile;
  int r = t.r, lane = t.lane;
  loadTile<Head>(sm.queries, q + a.query.at(tile.b, tile.h, tile.i0), tile.rows, a.size,
                 a.query.row, kRows);
  loadTile<Head>(sm.grads, dout + a.dout.at(tile.b, tile.h, tile.i0), tile.rows, a.vSize,
                 a.dout.row, kRows);
  __syncthreads();
  const C *qr = sm.queries + r * kStride, *gr = sm.grads + r * kStride;
  sm.partial[threadIdx.x] =
      deltaPart<Head, T, C>(a, gr, out, tile.b, tile.h, t.i, t.active, lane);
  __syncthreads();
  C delta = laneSum(sm.partial + r * kLanes);
  C rowLse = t.active ? lse[tile.bh * a.qLen + t.i] : negInf<C>(), scale = (C)a.scale;
  C acc[kOut];
  ZRT_UNROLL
  for (int u = 0; u < kOut; ++u)
    acc[u] = 0;
  for (int64_t j0 = 0; j0 < tile.keyEnd; j0 += kKeys) {
    int64_t n = tile.keyEnd - j0 < kKeys ? tile.keyEnd - j0 : kKeys;
    t.template loadKeys<Head, kKeys>(a, sm.keys, sm.values, j0, n);
    C scores[kMine], products[kMine]; // Q K^T and dO V^T of this thread's keys
    dots<Head>(scores, qr, sm.keys, lane);
    dots<Head>(products, gr, sm.values, lane);
    ZRT_UNROLL
    for (int u = 0; u < kMine; ++u) {
      int c = lane + kLanes * u;
      int64_t j = j0 + c;
      C ds = 0;
      if (rowLse != negInf<C>() && t.sees(a, c, n, j)) {
        C x = masked<T, C>(a, mask, scores[u] * scale, tile.b, tile.h, t.i, j);
        if (x != negInf<C>())
          ds = std::exp(x - rowLse) * (products[u] - delta);
      }
      sm.scoreGrads[r * (kKeys + 1) + c] = ds;
    }
    __syncthreads();
    accumulate<Head, kKeys>(acc, sm.scoreGrads + r * (kKeys + 1), sm.keys, lane); // dS K
  }
  if (t.active)
    storeRow<Head>(dq + a.dquery.at(tile.b, tile.h, t.i), acc, a.size, lane,
                   [scale](C x) { return x * scale; });
}

template <int Head, typename C> struct KeyValueGradShared {
  static constexpr int kKeys = Tiles<Head, C>::kGradKeys, kRows = Tiles<Head, C>::kGradRows;
  static constexpr int kStride = Tiles<Head, C>::kStride;
  C keys[kKeys * kStride];
  C values[kKeys * kStride];
  C queries[kRows * kStride];
  C grads[kRows * kStride]; // dO
  C probs[kKeys * (kRows + 1)];      // P^T
  C scoreGrads[kKeys * (kRows + 1)]; // dS^T
  C partial[kRows * kLanes];
  C rowLse[kRows], rowDelta[kRows];
};

/// The key and value gradients: a block of keys (kLanes threads per key), the
/// queries of every head sharing them a tile at a time with their gradients,
/// log-sum-exps and deltas; dV = sum_i P dO_i, dK = scale * sum_i dS Q_i.
template <typename T, typename C, int Head>
__global__ void attentionKeyValueGradKernel(AttentionShape a, const T *q, const T *k,
                                            const T *v, const T *out, const C *lse,
                                            const T *dout, const void *mask, T *dk, T *dv) {
  using S = KeyValueGradShared<Head, C>;
  constexpr int kKeys = S::kKeys, kRows = S::kRows, kStride = S::kStride;
  constexpr int kMine = kRows / kLanes, kOut = Head / kLanes;
  static_assert(kKeys == kRows, "the block's threads are also four per query row");
  __shared__ S sm;
  int64_t kBlocks = (a.kvLen + kKeys - 1) / kKeys;
  int64_t bkv = blockIdx.x / kBlocks, j0 = (blockIdx.x % kBlocks) * kKeys;
  int64_t b = bkv / a.kvHeads, kvh = bkv % a.kvHeads, group = a.qHeads / a.kvHeads;
  int own = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  int64_t j = j0 + own;
  bool active = j < a.kvLen;
  int64_t n = a.kvLen - j0 < kKeys ? a.kvLen - j0 : kKeys;
  loadTile<Head>(sm.keys, k + a.key.at(b, kvh, j0), n, a.size, a.key.row, kKeys);
  loadTile<Head>(sm.values, v + a.value.at(b, kvh, j0), n, a.vSize, a.value.row, kKeys);
  const C *kj = sm.keys + own * kStride, *vj = sm.values + own * kStride;
  C dkAcc[kOut], dvAcc[kOut];
  ZRT_UNROLL
  for (int u = 0; u < kOut; ++u)
    dkAcc[u] = dvAcc[u] = 0;
  C scale = (C)a.scale;
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
    int64_t bh = b * a.qHeads + h;
    // Causal: query rows before j0 see none of these keys.
    for (int64_t i0 = a.causal ? j0 : 0; i0 < a.qLen; i0 += kRows) {
      int64_t rows = a.qLen - i0 < kRows ? a.qLen - i0 : kRows;
      __syncthreads(); // the last tile's readers are done (and the own tiles loaded)
      loadTile<Head>(sm.queries, q + a.query.at(b, h, i0), rows, a.size, a.query.row, kRows);
      loadTile<Head>(sm.grads, dout + a.dout.at(b, h, i0), rows, a.vSize, a.dout.row, kRows);
      __syncthreads();
      { // the tile's deltas, four threads per query row as the query gradient's
        int row = threadIdx.x / kLanes;
        sm.partial[threadIdx.x] = deltaPart<Head, T, C>(
            a, sm.grads + row * kStride, out, b, h, i0 + row, row < rows, lane);
      }
      __syncthreads();
      if (threadIdx.x < kRows) {
        int row = threadIdx.x;
        sm.rowDelta[row] = laneSum(sm.partial + row * kLanes);
        sm.rowLse[row] = row < rows ? lse[bh * a.qLen + i0 + row] : negInf<C>();
      }
      __syncthreads();
      // This thread's key against every fourth query row of the tile.
      C scores[kMine], products[kMine]; // K Q^T and V dO^T
      dots<Head>(scores, kj, sm.queries, lane);
      dots<Head>(products, vj, sm.grads, lane);
      ZRT_UNROLL
      for (int u = 0; u < kMine; ++u) {
        int r = lane + kLanes * u;
        int64_t i = i0 + r;
        C p = 0, ds = 0;
        if (active && sm.rowLse[r] != negInf<C>() && !(a.causal && j > i)) {
          C x = masked<T, C>(a, mask, scores[u] * scale, b, h, i, j);
          if (x != negInf<C>()) {
            p = std::exp(x - sm.rowLse[r]);
            ds = p * (products[u] - sm.rowDelta[r]);
          }
        }
        sm.probs[own * (kRows + 1) + r] = p;
        sm.scoreGrads[own * (kRows + 1) + r] = ds;
      }
      __syncthreads();
      accumulate<Head, kRows>(dvAcc, sm.probs + own * (kRows + 1), sm.grads, lane); // P^T dO
      accumulate<Head, kRows>(dkAcc, sm.scoreGrads + own * (kRows + 1), sm.queries,
                              lane); // dS^T Q
    }
  }
  if (!active)
    return;
  storeRow<Head>(dk + a.dkey.at(b, kvh, j), dkAcc, a.size, lane,
                 [scale](C x) { return x * scale; });
  storeRow<Head>(dv + a.dvalue.at(b, kvh, j), dvAcc, a.vSize, lane, [](C x) { return x; });
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
                         a.batch * a.qHeads * ((a.qLen + kRows - 1) / kRows), kRows * kLanes,
                         s, a, (const T *)q, (const T *)k, (const T *)v, mask, (T *)out,
                         (C *)lse);
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
      constexpr int Head = decltype(head)::value, kRows = Tiles<Head, C>::kGradRows,
                    kKeys = Tiles<Head, C>::kGradKeys;
      launchBlocks<true>("attentionQueryGrad", attentionQueryGradKernel<T, C, Head>,
                         a.batch * a.qHeads * ((a.qLen + kRows - 1) / kRows), kRows * kLanes,
                         s, a, (const T *)q, (const T *)k, (const T *)v, (const T *)out,
                         (const C *)lse, (const T *)dout, mask, (T *)dq);
      launchBlocks<true>("attentionKeyValueGrad", attentionKeyValueGradKernel<T, C, Head>,
                         a.batch * a.kvHeads * ((a.kvLen + kKeys - 1) / kKeys),
                         kKeys * kLanes, s, a, (const T *)q, (const T *)k, (const T *)v,
                         (const T *)out, (const C *)lse, (const T *)dout, mask, (T *)dk,
                         (T *)dv);
    });
  });
}

} // namespace zrt::cuda
