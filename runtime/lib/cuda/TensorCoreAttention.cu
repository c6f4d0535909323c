//===- TensorCoreAttention.cu - Fused attention on the tensor cores -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// FlashAttention-2's schedule for bf16 and f16 heads of up to 128, its products
// on the tensor cores (WMMA, 16x16x16 tiles, f32 accumulation); the CUDA-core
// kernels (AttentionKernels.cu) keep f32, f64 and larger heads. A block is four
// warps. Operands come into shared memory a tile at a time (zeros past the head
// size, the sequence and the head-size bucket of 64 or 128), so the fragments
// always read aligned, padded tiles. The fragments' layout across a warp is not
// known to the program, so everything done to single scores (scale, masks,
// the online softmax, exp) goes through shared memory in f32: a product is
// stored, threads work on rows, and 16-bit probabilities (or score gradients)
// are written back (the forward's beside the scores, the backward's over them)
// for the next product, as FlashAttention rounds them.
//
// Forward: 64 query rows per block (16 per warp), the keys a tile at a time; a
// thread owns half of one row's output in registers. Backward: as the CUDA-core
// kernels, no element written twice and no atomics: one kernel per 32-row query
// tile for dQ (dS K), one per key tile for dK and dV (dS^T Q, P^T dO summed over
// the query heads that share the key head), both recomputing P from the saved
// log-sum-exp. No T x T matrix is ever stored.
//
//===----------------------------------------------------------------------===//

#include "AttentionDevice.h"
#include "CudaLaunch.h"

#include "zrt/Float16.h"

#include <zrt_kernel_launch.h> // the GPU's or the emulator's (see the header)

#include <mma.h>
#ifndef ZERO_CUDA_EMULATOR
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace zrt::cuda {
namespace {

using namespace attention_device;
namespace wmma = nvcuda::wmma;

/// The element type the fragments name for storage type T (the same bits).
#ifdef ZERO_CUDA_EMULATOR
template <typename T> struct Wmma { using type = T; };
#else
template <typename T> struct Wmma;
template <> struct Wmma<bf16> { using type = __nv_bfloat16; };
template <> struct Wmma<f16> { using type = __half; };
#endif
template <typename T> using W = typename Wmma<T>::type;
template <typename T> __device__ const W<T> *frag(const T *p) {
  return reinterpret_cast<const W<T> *>(p);
}

template <typename T>
using RowA = wmma::fragment<wmma::matrix_a, 16, 16, 16, W<T>, wmma::row_major>;
template <typename T>
using ColA = wmma::fragment<wmma::matrix_a, 16, 16, 16, W<T>, wmma::col_major>;
template <typename T>
using RowB = wmma::fragment<wmma::matrix_b, 16, 16, 16, W<T>, wmma::row_major>;
template <typename T>
using ColB = wmma::fragment<wmma::matrix_b, 16, 16, 16, W<T>, wmma::col_major>;
using Sum = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

constexpr int kWarps = 4, kThreads = 32 * kWarps;
/// Forward query rows per block; backward query rows per tile.
constexpr int kRows = 64, kGradRows = 32;
/// Keys per tile: a K or V tile of Head-wide rows is 8 KiB.
template <int Head> constexpr int kKeys = 4096 / Head;

/// Eight 16-bit elements: one 128-bit load or store.
struct alignas(16) Pack {
  uint32_t word[4];
};

/// `rows` rows of the Head-wide tile `tile` from `src` (row stride `stride`):
/// the first `n` rows' first `width` elements, zeros elsewhere. Full-width rows
/// whose starts are 16-byte aligned (a head of 64 or 128 in a QKV projection)
/// move 128 bits per thread; others an element at a time.
template <int Head, typename T>
__device__ void stage(T *tile, const T *src, int64_t n, int64_t width, int64_t stride,
                      int rows) {
  constexpr int kPacks = Head / 8;
  if (width == Head && stride % 8 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0) {
    for (int e = threadIdx.x; e < rows * kPacks; e += blockDim.x) {
      int r = e / kPacks, c = e % kPacks;
      Pack p = {};
      if (r < n)
        p = reinterpret_cast<const Pack *>(src + r * stride)[c];
      reinterpret_cast<Pack *>(tile + r * Head)[c] = p;
    }
    return;
  }
  for (int e = threadIdx.x; e < rows * Head; e += blockDim.x) {
    int r = e / Head, d = e % Head;
    tile[e] = r < n && d < width ? src[r * stride + d] : T(0.0f);
  }
}

/// The log-sum-exp and delta = dO . O of the tile's query rows (-inf and 0 past
/// the last row): four threads per row, each summing every fourth element (so a
/// warp reads 32 adjacent ones), then the first kGradRows threads add the four.
/// Ends with a barrier.
template <typename T>
__device__ void rowStatistics(const AttentionShape &a, const T *out, const T *dout,
                              const float *lse, int64_t b, int64_t h, int64_t i0,
                              int64_t rows, float *partial, float *rowLse, float *rowDelta) {
  static_assert(kThreads == 4 * kGradRows, "four threads per query row");
  int r = threadIdx.x / 4, quarter = threadIdx.x % 4;
  float delta = 0;
  if (r < rows) {
    const T *o = out + a.out.at(b, h, i0 + r), *g = dout + a.dout.at(b, h, i0 + r);
    for (int64_t d = quarter; d < a.vSize; d += 4)
      delta += (float)o[d] * (float)g[d];
  }
  partial[threadIdx.x] = delta;
  __syncthreads();
  if (threadIdx.x < kGradRows) {
    int row = threadIdx.x;
    const float *p = partial + 4 * row;
    rowDelta[row] = (p[0] + p[1]) + (p[2] + p[3]);
    rowLse[row] = row < rows ? lse[(b * a.qHeads + h) * a.qLen + i0 + row] : negInf<float>();
  }
}

/// Writes the warp's 16x16 tile `sum` (times `factor`) at rows r0 and columns c0
/// of a [rows, width] operand laid out by `layout`, through the warp's 256 floats
/// of `stage`; every thread of the block calls it the same number of times.
template <typename T>
__device__ void writeTile(const Sum &sum, float *stage, float factor, T *dst,
                          const kernels::HeadLayout &layout, int64_t b, int64_t h, int64_t r0,
                          int64_t c0, int64_t rows, int64_t width) {
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float *mine = stage + warp * 256;
  wmma::store_matrix_sync(mine, sum, 16, wmma::mem_row_major);
  __syncthreads();
  for (int e = lane; e < 256; e += 32) {
    int64_t r = r0 + e / 16, c = c0 + e % 16;
    if (r < rows && c < width)
      dst[layout.at(b, h, r) + c] = T(mine[e] * factor);
  }
  __syncthreads();
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

// Shared tiles of T are declared as their bits: a __shared__ variable may not
// have a constructor, and T's sets its bits to zero.
template <typename T, int Head> struct alignas(32) ForwardShared {
  uint16_t keyBits[kKeys<Head> * Head];
  uint16_t valueBits[kKeys<Head> * Head];
  /// Scores (f32), then 64 columns of P V (f32); first the staged query tile (T).
  float scores[kRows * 64];
  /// Probabilities (T): apart from the scores, so that P V is computed and
  /// stored 64 columns at a time (its fragments for every column at once would
  /// not fit in registers at head 128).
  uint16_t probBits[kRows * 64];
  float partMax[kThreads], partSum[kThreads];
  __device__ T *keys() { return reinterpret_cast<T *>(keyBits); }
  __device__ T *values() { return reinterpret_cast<T *>(valueBits); }
  __device__ T *probs() { return reinterpret_cast<T *>(probBits); }
};

template <typename T, int Head>
__global__ void tensorCoreAttentionKernel(AttentionShape a, const T *q, const T *k,
                                          const T *v, const void *mask, T *out, float *lse) {
  constexpr int kK = kKeys<Head>, kHalf = kK / 2, kGroups = Head / 64;
  __shared__ ForwardShared<T, Head> sm;
  QueryTile tile(a, kRows);
  int64_t bh = tile.bh, i0 = tile.i0, b = tile.b, h = tile.h, kvh = tile.kvh;
  int64_t rows = tile.rows, keyEnd = tile.keyEnd;
  int warp = threadIdx.x / 32, r = threadIdx.x / 2, half = threadIdx.x % 2;
  int64_t i = i0 + r;
  bool active = r < rows;

  // The warp's 16 query rows, as fragments for the whole tile loop.
  T *staged = reinterpret_cast<T *>(sm.scores);
  stage<Head>(staged, q + a.query.at(b, h, i0), rows, a.size, a.query.row, kRows);
  __syncthreads();
  RowA<T> qf[Head / 16];
  for (int d = 0; d < Head / 16; ++d)
    wmma::load_matrix_sync(qf[d], frag(staged + warp * 16 * Head + d * 16), Head);
  __syncthreads();

  const T *kh = k + a.key.at(b, kvh, 0), *vh = v + a.value.at(b, kvh, 0);
  T *probs = sm.probs();
  float o[kGroups * 32];
  for (float &x : o)
    x = 0;
  float m = negInf<float>(), l = 0, scale = (float)a.scale;
  for (int64_t j0 = 0; j0 < keyEnd; j0 += kK) {
    int64_t n = keyEnd - j0 < kK ? keyEnd - j0 : kK;
    stage<Head>(sm.keys(), kh + j0 * a.key.row, n, a.size, a.key.row, kK);
    stage<Head>(sm.values(), vh + j0 * a.value.row, n, a.vSize, a.value.row, kK);
    __syncthreads();
    for (int c = 0; c < kK / 16; ++c) { // S = Q K^T, the warp's rows
      Sum s;
      wmma::fill_fragment(s, 0.0f);
      for (int d = 0; d < Head / 16; ++d) {
        ColB<T> kf; // K^T: element (d, j) at keys[j * Head + d]
        wmma::load_matrix_sync(kf, frag(sm.keys() + c * 16 * Head + d * 16), Head);
        wmma::mma_sync(s, qf[d], kf, s);
      }
      wmma::store_matrix_sync(sm.scores + warp * 16 * kK + c * 16, s, kK,
                              wmma::mem_row_major);
    }
    __syncthreads();
    // The online softmax over this thread's half of row r.
    float x[kHalf], rowMax = negInf<float>();
    for (int c = 0; c < kHalf; ++c) {
      int col = half * kHalf + c;
      int64_t j = j0 + col;
      float s = negInf<float>();
      if (active && col < n && !(a.causal && j > i))
        s = masked<T, float>(a, mask, sm.scores[r * kK + col] * scale, b, h, i, j);
      x[c] = s;
      rowMax = s > rowMax ? s : rowMax;
    }
    sm.partMax[threadIdx.x] = rowMax;
    __syncthreads(); // every lane's maximum is in
    float other = sm.partMax[threadIdx.x ^ 1];
    float mNew = m > rowMax ? m : rowMax;
    mNew = mNew > other ? mNew : other;
    float sum = 0;
    for (int c = 0; c < kHalf; ++c) {
      float p = x[c] == negInf<float>() ? 0.0f : std::exp(x[c] - mNew);
      sum += p;
      probs[r * kK + half * kHalf + c] = T(p);
    }
    sm.partSum[threadIdx.x] = sum;
    float alpha = m == negInf<float>() ? 0.0f : std::exp(m - mNew);
    __syncthreads();
    l = l * alpha + sum + sm.partSum[threadIdx.x ^ 1];
    m = mNew;
    for (float &e : o)
      e *= alpha;
    // The loops over kGroups index o[]: unrolled, or it lives in local memory.
    ZRT_UNROLL
    for (int g = 0; g < kGroups; ++g) { // P V, 64 columns at a time through shared memory
      Sum pv[4];
      for (int cc = 0; cc < 4; ++cc) {
        wmma::fill_fragment(pv[cc], 0.0f);
        for (int kk = 0; kk < kK / 16; ++kk) {
          RowA<T> pf;
          RowB<T> vf;
          wmma::load_matrix_sync(pf, frag(probs + warp * 16 * kK + kk * 16), kK);
          wmma::load_matrix_sync(vf, frag(sm.values() + kk * 16 * Head + g * 64 + cc * 16),
                                 Head);
          wmma::mma_sync(pv[cc], pf, vf, pv[cc]);
        }
      }
      __syncthreads();
      for (int cc = 0; cc < 4; ++cc)
        wmma::store_matrix_sync(sm.scores + warp * 16 * 64 + cc * 16, pv[cc], 64,
                                wmma::mem_row_major);
      __syncthreads();
      ZRT_UNROLL
      for (int c = 0; c < 32; ++c)
        o[g * 32 + c] += sm.scores[r * 64 + half * 32 + c];
    }
    __syncthreads(); // before the next tile overwrites keys, values and scores
  }
  if (!active)
    return;
  T *row = out + a.out.at(b, h, i);
  ZRT_UNROLL
  for (int g = 0; g < kGroups; ++g)
    ZRT_UNROLL
    for (int c = 0; c < 32; ++c) {
      int64_t d = g * 64 + half * 32 + c;
      if (d < a.vSize)
        row[d] = T(l > 0 ? o[g * 32 + c] / l : 0.0f); // no key seen: zeros
    }
  if (half == 0)
    lse[bh * a.qLen + i] = l > 0 ? m + std::log(l) : negInf<float>();
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

template <typename T, int Head> struct alignas(32) BackwardShared {
  uint16_t queryBits[kGradRows * Head];
  uint16_t gradBits[kGradRows * Head]; // dO
  uint16_t keyBits[kKeys<Head> * Head];
  uint16_t valueBits[kKeys<Head> * Head];
  /// S, then P (T); dP, then dS (T): [kGradRows, kKeys].
  float scores[kGradRows * kKeys<Head>];
  float scoreGrads[kGradRows * kKeys<Head>];
  float stage[kWarps * 256]; // also the row statistics' partial sums
  float rowLse[kGradRows], rowDelta[kGradRows];
  __device__ T *queries() { return reinterpret_cast<T *>(queryBits); }
  __device__ T *grads() { return reinterpret_cast<T *>(gradBits); }
  __device__ T *keys() { return reinterpret_cast<T *>(keyBits); }
  __device__ T *values() { return reinterpret_cast<T *>(valueBits); }
};

/// S = Q K^T and dP = dO V^T of the staged tiles, into shared memory (f32).
template <typename T, int Head> __device__ void scoresAndGrads(BackwardShared<T, Head> &sm) {
  constexpr int kK = kKeys<Head>, kCols = kK / 16;
  for (int t = threadIdx.x / 32; t < (kGradRows / 16) * kCols; t += kWarps) {
    int rt = t / kCols, ct = t % kCols;
    Sum s, dp;
    wmma::fill_fragment(s, 0.0f);
    wmma::fill_fragment(dp, 0.0f);
    for (int d = 0; d < Head / 16; ++d) {
      RowA<T> qf, gf;
      ColB<T> kf, vf;
      wmma::load_matrix_sync(qf, frag(sm.queries() + rt * 16 * Head + d * 16), Head);
      wmma::load_matrix_sync(kf, frag(sm.keys() + ct * 16 * Head + d * 16), Head);
      wmma::mma_sync(s, qf, kf, s);
      wmma::load_matrix_sync(gf, frag(sm.grads() + rt * 16 * Head + d * 16), Head);
      wmma::load_matrix_sync(vf, frag(sm.values() + ct * 16 * Head + d * 16), Head);
      wmma::mma_sync(dp, gf, vf, dp);
    }
    wmma::store_matrix_sync(sm.scores + rt * 16 * kK + ct * 16, s, kK, wmma::mem_row_major);
    wmma::store_matrix_sync(sm.scoreGrads + rt * 16 * kK + ct * 16, dp, kK,
                            wmma::mem_row_major);
  }
}

/// P = exp(S scale - lse) and dS = P (dP - delta) over the tile of `rows` query
/// rows from i0 against `n` keys from j0, written as T over S and dP.
template <typename T, int Head>
__device__ void probabilitiesAndScoreGrads(const AttentionShape &a, const void *mask,
                                           BackwardShared<T, Head> &sm, int64_t b,
                                           int64_t h, int64_t i0, int64_t rows, int64_t j0,
                                           int64_t n) {
  constexpr int kK = kKeys<Head>, kElems = kGradRows * kK / kThreads;
  float p[kElems], ds[kElems], scale = (float)a.scale;
  for (int e = 0; e < kElems; ++e) {
    int idx = threadIdx.x + e * kThreads, r = idx / kK, c = idx % kK;
    int64_t i = i0 + r, j = j0 + c;
    p[e] = ds[e] = 0;
    float l = sm.rowLse[r];
    if (r >= rows || c >= n || (a.causal && j > i) || l == negInf<float>())
      continue;
    float s = masked<T, float>(a, mask, sm.scores[idx] * scale, b, h, i, j);
    if (s == negInf<float>())
      continue;
    p[e] = std::exp(s - l);
    ds[e] = p[e] * (sm.scoreGrads[idx] - sm.rowDelta[r]);
  }
  __syncthreads(); // all of S and dP are read: overwrite them
  T *probs = reinterpret_cast<T *>(sm.scores), *dscores = reinterpret_cast<T *>(sm.scoreGrads);
  for (int e = 0; e < kElems; ++e) {
    int idx = threadIdx.x + e * kThreads;
    probs[idx] = T(p[e]);
    dscores[idx] = T(ds[e]);
  }
  __syncthreads();
}

/// dQ = scale dS K for a tile of kGradRows query rows of one head, over its keys.
template <typename T, int Head>
__global__ void tensorCoreQueryGradKernel(AttentionShape a, const T *q, const T *k,
                                          const T *v, const T *out, const float *lse,
                                          const T *dout, const void *mask, T *dq) {
  constexpr int kK = kKeys<Head>, kCols = Head / 16;
  constexpr int kOut = (kGradRows / 16) * kCols / kWarps; // dQ tiles per warp
  __shared__ BackwardShared<T, Head> sm;
  QueryTile tile(a, kGradRows);
  int64_t i0 = tile.i0, b = tile.b, h = tile.h, kvh = tile.kvh;
  int64_t rows = tile.rows, keyEnd = tile.keyEnd;
  int warp = threadIdx.x / 32;
  stage<Head>(sm.queries(), q + a.query.at(b, h, i0), rows, a.size, a.query.row, kGradRows);
  stage<Head>(sm.grads(), dout + a.dout.at(b, h, i0), rows, a.vSize, a.dout.row, kGradRows);
  rowStatistics(a, out, dout, lse, b, h, i0, rows, sm.stage, sm.rowLse, sm.rowDelta);
  Sum acc[kOut];
  for (Sum &s : acc)
    wmma::fill_fragment(s, 0.0f);
  const T *dscores = reinterpret_cast<const T *>(sm.scoreGrads);
  for (int64_t j0 = 0; j0 < keyEnd; j0 += kK) {
    int64_t n = keyEnd - j0 < kK ? keyEnd - j0 : kK;
    stage<Head>(sm.keys(), k + a.key.at(b, kvh, j0), n, a.size, a.key.row, kK);
    stage<Head>(sm.values(), v + a.value.at(b, kvh, j0), n, a.vSize, a.value.row, kK);
    __syncthreads();
    scoresAndGrads(sm);
    __syncthreads();
    probabilitiesAndScoreGrads(a, mask, sm, b, h, i0, rows, j0, n);
    for (int o = 0; o < kOut; ++o) {
      int t = warp + o * kWarps, rt = t / kCols, ct = t % kCols;
      for (int kk = 0; kk < kK / 16; ++kk) {
        RowA<T> sf;
        RowB<T> kf;
        wmma::load_matrix_sync(sf, frag(dscores + rt * 16 * kK + kk * 16), kK);
        wmma::load_matrix_sync(kf, frag(sm.keys() + kk * 16 * Head + ct * 16), Head);
        wmma::mma_sync(acc[o], sf, kf, acc[o]);
      }
    }
    __syncthreads(); // before the next tile's keys replace these
  }
  for (int o = 0; o < kOut; ++o) {
    int t = warp + o * kWarps;
    writeTile(acc[o], sm.stage, (float)a.scale, dq, a.dquery, b, h, i0 + (t / kCols) * 16,
              (t % kCols) * 16, a.qLen, a.size);
  }
}

/// dK = scale dS^T Q and dV = P^T dO for a tile of keys of one key/value head,
/// over the query rows of every head that shares it.
template <typename T, int Head>
__global__ void tensorCoreKeyValueGradKernel(AttentionShape a, const T *q, const T *k,
                                             const T *v, const T *out, const float *lse,
                                             const T *dout, const void *mask, T *dk, T *dv) {
  constexpr int kK = kKeys<Head>, kCols = Head / 16;
  constexpr int kOut = (kK / 16) * kCols / kWarps; // dK (and dV) tiles per warp
  __shared__ BackwardShared<T, Head> sm;
  int64_t blocks = (a.kvLen + kK - 1) / kK;
  int64_t bkv = blockIdx.x / blocks, j0 = (blockIdx.x % blocks) * kK;
  int64_t b = bkv / a.kvHeads, kvh = bkv % a.kvHeads, group = a.qHeads / a.kvHeads;
  int64_t n = a.kvLen - j0 < kK ? a.kvLen - j0 : kK;
  int warp = threadIdx.x / 32;
  stage<Head>(sm.keys(), k + a.key.at(b, kvh, j0), n, a.size, a.key.row, kK);
  stage<Head>(sm.values(), v + a.value.at(b, kvh, j0), n, a.vSize, a.value.row, kK);
  Sum dkAcc[kOut], dvAcc[kOut];
  for (int o = 0; o < kOut; ++o) {
    wmma::fill_fragment(dkAcc[o], 0.0f);
    wmma::fill_fragment(dvAcc[o], 0.0f);
  }
  const T *probs = reinterpret_cast<const T *>(sm.scores);
  const T *dscores = reinterpret_cast<const T *>(sm.scoreGrads);
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
    // Causal: query rows before j0 see none of these keys.
    for (int64_t i0 = a.causal ? j0 / kGradRows * kGradRows : 0; i0 < a.qLen;
         i0 += kGradRows) {
      int64_t rows = a.qLen - i0 < kGradRows ? a.qLen - i0 : kGradRows;
      __syncthreads(); // the last tile's readers are done (and the own tiles staged)
      stage<Head>(sm.queries(), q + a.query.at(b, h, i0), rows, a.size, a.query.row,
                  kGradRows);
      stage<Head>(sm.grads(), dout + a.dout.at(b, h, i0), rows, a.vSize, a.dout.row,
                  kGradRows);
      rowStatistics(a, out, dout, lse, b, h, i0, rows, sm.stage, sm.rowLse, sm.rowDelta);
      scoresAndGrads(sm); // the tiles are staged: rowStatistics ends with a barrier
      __syncthreads();
      probabilitiesAndScoreGrads(a, mask, sm, b, h, i0, rows, j0, n);
      for (int o = 0; o < kOut; ++o) {
        int t = warp + o * kWarps, rt = t / kCols, ct = t % kCols;
        for (int kk = 0; kk < kGradRows / 16; ++kk) {
          ColA<T> pf, sf; // P^T and dS^T: element (j, i) at [i * kK + j]
          RowB<T> gf, qf;
          wmma::load_matrix_sync(pf, frag(probs + kk * 16 * kK + rt * 16), kK);
          wmma::load_matrix_sync(gf, frag(sm.grads() + kk * 16 * Head + ct * 16), Head);
          wmma::mma_sync(dvAcc[o], pf, gf, dvAcc[o]);
          wmma::load_matrix_sync(sf, frag(dscores + kk * 16 * kK + rt * 16), kK);
          wmma::load_matrix_sync(qf, frag(sm.queries() + kk * 16 * Head + ct * 16), Head);
          wmma::mma_sync(dkAcc[o], sf, qf, dkAcc[o]);
        }
      }
    }
  }
  __syncthreads();
  for (int o = 0; o < kOut; ++o) {
    int t = warp + o * kWarps;
    int64_t r0 = j0 + (t / kCols) * 16, c0 = (t % kCols) * 16;
    writeTile(dkAcc[o], sm.stage, (float)a.scale, dk, a.dkey, b, kvh, r0, c0, a.kvLen, a.size);
    writeTile(dvAcc[o], sm.stage, 1.0f, dv, a.dvalue, b, kvh, r0, c0, a.kvLen, a.vSize);
  }
}

/// Calls f with T (bf16 or f16) and the head-size bucket (64 or 128).
template <typename F> void dispatch(Elem t, const AttentionShape &a, F &&f) {
  auto withHead = [&](auto tag) {
    if ((a.size > a.vSize ? a.size : a.vSize) <= 64)
      f(tag, std::integral_constant<int, 64>{});
    else
      f(tag, std::integral_constant<int, 128>{});
  };
  if (t == Elem::BF16)
    withHead(bf16{});
  else
    withHead(f16{});
}

} // namespace

bool tensorCoreAttentionFits(Elem t, const AttentionShape &a) {
  return (t == Elem::BF16 || t == Elem::F16) && a.size <= 128 && a.vSize <= 128;
}

void tensorCoreAttention(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                         const void *k, const void *v, const void *mask, void *out,
                         void *lse) {
  dispatch(t, a, [&](auto tag, auto head) {
    using T = decltype(tag);
    constexpr int Head = decltype(head)::value;
    launchBlocks<true>("tensorCoreAttention", tensorCoreAttentionKernel<T, Head>,
                       a.batch * a.qHeads * ((a.qLen + kRows - 1) / kRows), kThreads, s, a,
                       (const T *)q, (const T *)k, (const T *)v, mask, (T *)out,
                       (float *)lse);
  });
}

void tensorCoreAttentionGrad(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                             const void *k, const void *v, const void *out, const void *lse,
                             const void *dout, const void *mask, void *dq, void *dk,
                             void *dv) {
  dispatch(t, a, [&](auto tag, auto head) {
    using T = decltype(tag);
    constexpr int Head = decltype(head)::value;
    launchBlocks<true>("tensorCoreQueryGrad", tensorCoreQueryGradKernel<T, Head>,
                       a.batch * a.qHeads * ((a.qLen + kGradRows - 1) / kGradRows), kThreads,
                       s, a, (const T *)q, (const T *)k, (const T *)v, (const T *)out,
                       (const float *)lse, (const T *)dout, mask, (T *)dq);
    launchBlocks<true>("tensorCoreKeyValueGrad", tensorCoreKeyValueGradKernel<T, Head>,
                       a.batch * a.kvHeads * ((a.kvLen + kKeys<Head> - 1) / kKeys<Head>),
                       kThreads, s, a, (const T *)q, (const T *)k, (const T *)v,
                       (const T *)out, (const float *)lse, (const T *)dout, mask, (T *)dk,
                       (T *)dv);
  });
}

} // namespace zrt::cuda
