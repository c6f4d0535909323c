//===- CudaKernels.cu - The project's GPU kernels -------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// One thread per output element, or a block per row where a row is reduced;
// accumulations in double like the CPU kernels (parity first); GEMMs go to cuBLASLt.
//
//===----------------------------------------------------------------------===//

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

template <typename T>
__global__ void binaryKernel(BinaryOp op, const T *a, Strided sa, const T *b, Strided sb,
                             void *out, int64_t n, int *error) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  T x = a[offsetOf(sa, i)], y = b[offsetOf(sb, i)];
  if (op == BinaryOp::Equal) {
    static_cast<uint8_t *>(out)[i] = x == y;
    return;
  }
  // Integer types truncate 0.5 to 0: their division by zero is an error (as on the
  // CPU), reported at the next synchronization; floats give inf or nan.
  if (op == BinaryOp::Div && y == T(0) && !(T(0.5) > T(0))) {
    *error = kIntegerDivisionByZero;
    static_cast<T *>(out)[i] = T(0);
    return;
  }
  using C = kernels::ComputeType<T>;
  static_cast<T *>(out)[i] = T(kernels::binary(op, C(x), C(y)));
}

template <typename T, typename U>
__global__ void powerKernel(const T *a, Strided sa, const U *b, Strided sb, T *out,
                            int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = kernels::power(a[offsetOf(sa, i)], b[offsetOf(sb, i)]);
}

template <typename T>
__global__ void unaryKernel(UnaryOp op, const T *in, T *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  // Integers have only Neg (the binders check).
  if constexpr (std::is_integral_v<T>)
    out[i] = (T)-in[i];
  else
    out[i] = T(kernels::unary(op, kernels::ComputeType<T>(in[i])));
}

template <typename T>
__global__ void whereKernel(const uint8_t *c, Strided sc, const T *a, Strided sa,
                            const T *b, Strided sb, T *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = c[offsetOf(sc, i)] ? a[offsetOf(sa, i)] : b[offsetOf(sb, i)];
}

template <typename In, typename Out>
__global__ void castKernel(const In *in, Out *out, bool toBool, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = toBool ? (Out)(in[i] != In(0)) : (Out)in[i];
}

template <typename T>
__global__ void copyKernel(const T *in, Strided v, int64_t base, T *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[base + offsetOf(v, i)];
}

template <typename T>
__global__ void scatterKernel(const T *in, Strided v, int64_t base, T *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[base + offsetOf(v, i)] = in[i];
}

template <typename T>
__global__ void triluKernel(const T *in, T *out, int64_t total, int64_t rows,
                            int64_t cols, bool upper, int64_t k) {
  int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (e >= total)
    return;
  int64_t j = e % cols, i = (e / cols) % rows;
  bool keep = upper ? j - i >= k : j - i <= k;
  out[e] = keep ? in[e] : T(0);
}

/// Element `pos` of an int64 or int32 index (or label) tensor.
__device__ inline int64_t indexAt(const void *index, bool index64, int64_t pos) {
  return index64 ? ((const int64_t *)index)[pos] : ((const int32_t *)index)[pos];
}

/// The row a gather index names (negative counts from the end), or -1 if it is
/// outside [-dim, dim).
__device__ inline int64_t rowOf(int64_t at, int64_t dim) {
  int64_t k = at < 0 ? at + dim : at;
  return k >= 0 && k < dim ? k : -1;
}

template <typename T>
__global__ void gatherKernel(const T *data, const void *idx, bool idx64, T *out,
                             int64_t outer, int64_t n, int64_t dim, int64_t inner,
                             int *error) {
  int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (e >= outer * n * inner)
    return;
  int64_t x = e % inner, j = (e / inner) % n, o = e / (inner * n);
  int64_t k = rowOf(indexAt(idx, idx64, j), dim);
  if (k < 0) {
    *error = kIndexOutOfRange;
    out[e] = T(0);
    return;
  }
  out[e] = data[(o * dim + k) * inner + x];
}

// The gather's gradient sums, for each row k, the gradient of every position j
// whose index names k, in ascending j and in f32 (f64 for f64), rounded once: no
// float atomics, whose order a GPU leaves open. Positions are counting-sorted by
// row: each row's count (integer atomics, exact in any order), each position's
// rank among the earlier positions of its row, the rows' starts (an exclusive
// scan), then each position's slot start[k] + rank.

/// Position j: its row's count, and its rank among positions j' < j of that row
/// (-1 for an index out of range, which sets the error flag).
__global__ void gatherGradRankKernel(const void *idx, bool idx64, int64_t n, int64_t dim,
                                     int *count, int *rank, int *error) {
  int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  int64_t k = rowOf(indexAt(idx, idx64, j), dim);
  if (k < 0) {
    *error = kIndexOutOfRange;
    rank[j] = -1;
    return;
  }
  atomicAdd(&count[k], 1);
  int r = 0;
  for (int64_t i = 0; i < j; ++i)
    r += rowOf(indexAt(idx, idx64, i), dim) == k;
  rank[j] = r;
}

/// start[k] = count[0] + ... + count[k - 1]: one block, each thread a chunk.
__global__ void gatherGradStartsKernel(const int *count, int *start, int64_t dim) {
  __shared__ int64_t partial[kThreads];
  int64_t chunk = (dim + kThreads - 1) / kThreads, first = threadIdx.x * chunk;
  int64_t last = first + chunk < dim ? first + chunk : dim, sum = 0;
  for (int64_t k = first; k < last; ++k)
    sum += count[k];
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t before = 0;
    for (int t = 0; t < kThreads; ++t) {
      int64_t v = partial[t];
      partial[t] = before;
      before += v;
    }
  }
  __syncthreads();
  int64_t at = partial[threadIdx.x];
  for (int64_t k = first; k < last; ++k) {
    start[k] = (int)at;
    at += count[k];
  }
}

__global__ void gatherGradOrderKernel(const void *idx, bool idx64, int64_t n, int64_t dim,
                                      const int *start, const int *rank, int *order) {
  int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= n || rank[j] < 0)
    return;
  order[start[rowOf(indexAt(idx, idx64, j), dim)] + rank[j]] = (int)j;
}

/// One thread per output element (o, k, x): its row's positions in ascending order.
template <typename T>
__global__ void gatherGradSumKernel(const T *g, T *out, const int *count, const int *start,
                                    const int *order, int64_t outer, int64_t n, int64_t dim,
                                    int64_t inner) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (e >= outer * dim * inner)
    return;
  int64_t x = e % inner, k = (e / inner) % dim, o = e / (inner * dim);
  Acc sum = 0;
  for (int p = start[k], end = start[k] + count[k]; p < end; ++p)
    sum = sum + (Acc)g[(o * n + order[p]) * inner + x];
  out[e] = T(sum);
}

/// Softmax along a strided axis (inner > 1): one thread per (outer, inner) pair,
/// neighbours reading neighbouring addresses.
template <typename T, typename TIn>
__global__ void softmaxKernel(const TIn *x, T *y, int64_t outer, int64_t dim, int64_t inner,
                              bool log) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= outer * inner)
    return;
  int64_t o = r / inner, i = r % inner;
  const TIn *px = x + o * dim * inner + i;
  T *py = y + o * dim * inner + i;
  auto in = [&](int64_t d) { return T(px[d * inner]); }; // widened: as an f32 copy
  double mx = -INFINITY;
  for (int64_t d = 0; d < dim; ++d)
    mx = fmax(mx, (double)in(d));
  T m = (T)mx;
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d)
    sum += (double)kernels::shiftedExp(in(d), m);
  T shift = kernels::logSoftmaxShift(m, sum);
  for (int64_t d = 0; d < dim; ++d)
    py[d * inner] = log ? T(in(d) - shift) : kernels::softmaxOf(in(d), m, sum);
}

/// A softmax's prologue on the device (SoftmaxPrologue): the row's input is x
/// scale + bias, computed again in each pass over the row.
template <typename T> struct DevicePrologue {
  T scale;
  const T *bias;          // null: none
  const int64_t *rowOff;  // per row, with a bias
  int64_t step;
};

/// Softmax along a contiguous axis: one block per row.
template <typename T, typename TIn>
__global__ void softmaxRowsKernel(const TIn *x, T *y, int64_t dim, bool log,
                                  DevicePrologue<T> pro) {
  const TIn *px = x + (int64_t)blockIdx.x * dim;
  T *py = y + (int64_t)blockIdx.x * dim;
  const T *bias = pro.bias ? pro.bias + pro.rowOff[blockIdx.x] : nullptr;
  auto in = [&](int64_t d) { // widened: as an f32 copy of a 16-bit input
    return kernels::softmaxInput(T(px[d]), pro.scale, bias ? bias + d * pro.step : nullptr);
  };
  double mx = -INFINITY;
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    mx = fmax(mx, (double)in(d));
  mx = blockReduce(mx, Max{});
  T m = (T)mx;
  double sum = 0;
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    sum += (double)kernels::shiftedExp(in(d), m);
  sum = blockReduce(sum, Add{});
  T shift = kernels::logSoftmaxShift(m, sum);
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    py[d] = log ? T(in(d) - shift) : kernels::softmaxOf(in(d), m, sum);
}

/// Softmax's gradient along a strided axis (inner > 1): one thread per (outer,
/// inner) pair.
template <typename T>
__global__ void softmaxGradKernel(const T *y, const T *g, T scale, T *dx, int64_t outer,
                                  int64_t dim, int64_t inner) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= outer * inner)
    return;
  int64_t at = (r / inner) * dim * inner + r % inner;
  double dot = 0;
  for (int64_t d = 0; d < dim; ++d)
    dot += (double)y[at + d * inner] * (double)g[at + d * inner];
  for (int64_t d = 0; d < dim; ++d)
    dx[at + d * inner] =
        kernels::scaledSoftmaxInputGrad(y[at + d * inner], g[at + d * inner], dot, scale);
}

/// Softmax's gradient along a contiguous axis: one block per row.
template <typename T>
__global__ void softmaxGradRowsKernel(const T *y, const T *g, T scale, T *dx, int64_t dim) {
  int64_t at = (int64_t)blockIdx.x * dim;
  double dot = 0;
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    dot += (double)y[at + d] * (double)g[at + d];
  dot = blockReduce(dot, Add{});
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    dx[at + d] = kernels::scaledSoftmaxInputGrad(y[at + d], g[at + d], dot, scale);
}

/// One block per normalized row.
template <typename T, typename S>
__global__ void layerNormKernel(const T *x, const T *scale, const T *bias,
                                const int64_t *sOff, const int64_t *bOff, T *y, S *mean,
                                S *rstd, int64_t inner, double eps) {
  int64_t o = blockIdx.x;
  const T *row = x + o * inner;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < inner; i += kThreads)
    sum += (double)row[i];
  double mu = blockReduce(sum, Add{}) / inner, sq = 0;
  for (int64_t i = threadIdx.x; i < inner; i += kThreads)
    sq += ((double)row[i] - mu) * ((double)row[i] - mu);
  double r = kernels::inverseStdDev(blockReduce(sq, Add{}) / inner, eps);
  if (threadIdx.x == 0) {
    mean[o] = (S)mu;
    rstd[o] = (S)r;
  }
  using C = kernels::ComputeType<T>;
  C cmu = C(mu), cr = C(r);
  for (int64_t i = threadIdx.x; i < inner; i += kThreads)
    y[o * inner + i] = kernels::normalized(row[i], cmu, cr, scale[sOff[i]], bias[bOff[i]]);
}

/// dx, one block per row.
template <typename T, typename S>
__global__ void layerNormGradRows(const T *x, const T *scale, const int64_t *sOff,
                                  const S *mean, const S *rstd, const T *gy, const T *acc,
                                  T *dx, int64_t inner) {
  using C = kernels::ComputeType<T>;
  int64_t o = blockIdx.x;
  const T *row = x + o * inner, *g = gy + o * inner;
  C mu = C(mean[o]), r = C(rstd[o]);
  double sumG = 0, sumGX = 0;
  for (int64_t i = threadIdx.x; i < inner; i += kThreads) {
    C xhat = kernels::layerNormXhat(C(row[i]), mu, r), gx = C(g[i]) * C(scale[sOff[i]]);
    sumG += (double)gx;
    sumGX += (double)(gx * xhat);
  }
  C meanG = C(blockReduce(sumG, Add{}) / inner);
  C meanGX = C(blockReduce(sumGX, Add{}) / inner);
  for (int64_t i = threadIdx.x; i < inner; i += kThreads) {
    C xhat = kernels::layerNormXhat(C(row[i]), mu, r), gx = C(g[i]) * C(scale[sOff[i]]);
    dx[o * inner + i] = kernels::layerNormStored(
        kernels::layerNormInputGrad(r, xhat, gx, meanG, meanGX),
        acc ? acc + o * inner + i : nullptr);
  }
}

// Column sums of row-major [rows, n] data: bias gradients, layer norm's dscale and
// dbias. A block takes kColumns adjacent columns and one chunk of the rows; its
// threads are kColumns columns by kLanes rows, so a warp reads kColumns adjacent
// elements of one row (coalesced) and a thread adds every kLanes-th row of its
// column. A block's sums go to a scratch row of its chunk, and a second kernel
// adds the chunks in order (one chunk: the block stores its sums itself): the
// same sums every run, no atomics. Sums accumulate in double, as the row kernels'.
constexpr int kColumns = 32, kLanes = kThreads / kColumns;

/// F: load(r, j, v[K]) gives row r, column j's K values; store(j, sums[K]).
template <int K, typename F>
__global__ void columnPartialsKernel(F f, int64_t rows, int64_t n, int64_t chunkRows,
                                     int64_t chunks, double *partial) {
  int col = threadIdx.x % kColumns, lane = threadIdx.x / kColumns;
  int64_t tiles = (n + kColumns - 1) / kColumns;
  int64_t tile = blockIdx.x % tiles, chunk = blockIdx.x / tiles;
  int64_t j = tile * kColumns + col, r0 = chunk * chunkRows;
  int64_t r1 = r0 + chunkRows < rows ? r0 + chunkRows : rows;
  double acc[K] = {};
  if (j < n)
    for (int64_t r = r0 + lane; r < r1; r += kLanes) {
      double v[K];
      f.load(r, j, v);
      for (int q = 0; q < K; ++q)
        acc[q] += v[q];
    }
  __shared__ double lanes[K][kThreads];
  for (int q = 0; q < K; ++q)
    lanes[q][threadIdx.x] = acc[q];
  __syncthreads();
  if (lane != 0 || j >= n)
    return;
  double sums[K];
  for (int q = 0; q < K; ++q) {
    sums[q] = 0;
    for (int l = 0; l < kLanes; ++l)
      sums[q] += lanes[q][l * kColumns + col];
  }
  if (chunks == 1) {
    f.store(j, sums);
    return;
  }
  for (int q = 0; q < K; ++q)
    partial[(q * chunks + chunk) * n + j] = sums[q];
}

template <int K, typename F>
__global__ void columnChunksKernel(F f, int64_t n, int64_t chunks, const double *partial) {
  int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  double sums[K];
  for (int q = 0; q < K; ++q) {
    sums[q] = 0;
    for (int64_t c = 0; c < chunks; ++c)
      sums[q] += partial[(q * chunks + c) * n + j];
  }
  f.store(j, sums);
}

/// Launches the column sums of `f` over [rows, n]: chunks of rows enough for about
/// kColumnBlocks blocks (each chunk at least kMinChunkRows rows), as many as the
/// scratch holds.
template <int K, typename F>
void launchColumns(const char *name, F f, int64_t rows, int64_t n, Scratch scratch,
                   cudaStream_t s) {
  constexpr int64_t kColumnBlocks = 512, kMinChunkRows = 64;
  if (n <= 0)
    return;
  int64_t tiles = (n + kColumns - 1) / kColumns;
  int64_t chunks = (kColumnBlocks + tiles - 1) / tiles;
  chunks = std::min(chunks, std::max<int64_t>(1, rows / kMinChunkRows));
  chunks = std::min<int64_t>(chunks, scratch.bytes / (sizeof(double) * K * n));
  chunks = std::max<int64_t>(chunks, 1);
  int64_t chunkRows = (rows + chunks - 1) / chunks;
  launch<true>(name, columnPartialsKernel<K, F>, tiles * chunks, kThreads, s, f, rows, n,
               chunkRows, chunks, (double *)scratch.data);
  if (chunks > 1)
    launchN(name, columnChunksKernel<K, F>, n, s, f, n, chunks, (const double *)scratch.data);
}

template <typename T> struct ColumnSum {
  const T *in;
  T *out;
  bool mean;
  int64_t rows, n;
  __device__ void load(int64_t r, int64_t j, double *v) const { v[0] = (double)in[r * n + j]; }
  __device__ void store(int64_t j, const double *s) const {
    out[j] = (T)(mean ? (rows ? s[0] / rows : 0.0) : s[0]);
  }
};

/// dscale (the sum of gy xhat) and dbias (of gy) for every normalized position.
template <typename T, typename S> struct LayerNormColumns {
  const T *x, *gy;
  const S *mean, *rstd;
  T *dscale, *dbias;
  int64_t inner;
  __device__ void load(int64_t o, int64_t i, double *v) const {
    using C = kernels::ComputeType<T>;
    C xhat = kernels::layerNormXhat(C(x[o * inner + i]), C(mean[o]), C(rstd[o]));
    v[0] = (double)(C(gy[o * inner + i]) * xhat);
    v[1] = (double)gy[o * inner + i];
  }
  __device__ void store(int64_t i, const double *s) const {
    dscale[i] = (T)s[0];
    dbias[i] = (T)s[1];
  }
};


/// One block: the mean needs the summed weights of every counted position.
template <typename T>
__global__ void crossEntropyKernel(const T *logp, const void *labels, bool labels64,
                                   const T *weights, int reduction, bool hasIgnore,
                                   int64_t ignore, T *loss, int64_t n, int64_t c,
                                   int64_t inner, int *error) {
  double total = 0, weightSum = 0;
  for (int64_t pos = threadIdx.x; pos < n * inner; pos += kThreads) {
    int64_t i = pos / inner, j = pos % inner, label = indexAt(labels, labels64, pos);
    double l = 0, w = 0;
    if (!(hasIgnore && label == ignore)) {
      if (label < 0 || label >= c) {
        *error = kIndexOutOfRange;
        continue;
      }
      w = weights ? (double)weights[label] : 1.0;
      l = -w * (double)logp[(i * c + label) * inner + j];
    }
    if (reduction == 0)
      loss[pos] = (T)l;
    total += l;
    weightSum += w;
  }
  total = blockReduce(total, Add{});
  weightSum = blockReduce(weightSum, Add{});
  if (threadIdx.x == 0 && reduction == 1)
    loss[0] = (T)total;
  else if (threadIdx.x == 0 && reduction == 2)
    loss[0] = (T)(total / weightSum);
}

/// The mean's denominator: one block.
template <typename T>
__global__ void weightSumKernel(const void *labels, bool labels64, const T *weights,
                                bool hasIgnore, int64_t ignore, int64_t positions,
                                int64_t c, double *sum) {
  double s = 0;
  for (int64_t pos = threadIdx.x; pos < positions; pos += kThreads) {
    int64_t label = indexAt(labels, labels64, pos);
    if (!(hasIgnore && label == ignore) && label >= 0 && label < c)
      s += weights ? (double)weights[label] : 1.0;
  }
  s = blockReduce(s, Add{});
  if (threadIdx.x == 0)
    *sum = s;
}

template <typename T, typename TOut>
__global__ void crossEntropyGradKernel(const T *logp, const void *labels, bool labels64,
                                       const T *g, const T *weights, int reduction,
                                       bool hasIgnore, int64_t ignore, const double *denom,
                                       TOut *out, int64_t n, int64_t c, int64_t inner,
                                       int *error) {
  int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (e >= n * c * inner)
    return;
  int64_t j = e % inner, k = (e / inner) % c, i = e / (inner * c);
  int64_t pos = i * inner + j, label = indexAt(labels, labels64, pos);
  using C = kernels::ComputeType<T>;
  if (hasIgnore && label == ignore) {
    out[e] = TOut(C(0));
    return;
  }
  if (label < 0 || label >= c) {
    *error = kIndexOutOfRange;
    out[e] = TOut(C(0));
    return;
  }
  double gl = reduction == 0 ? (double)g[pos] : (double)g[0];
  double w = weights ? (double)weights[label] : 1.0;
  double coef = w * gl / (reduction == 2 ? *denom : 1.0);
  out[e] = TOut(kernels::crossEntropyGrad(C(coef), C(logp[e]), k == label));
}

/// The fused classifier, one block per position: the row's maximum and sum of
/// exponentials, then each score's gradient written (possibly over the score).
/// Every read of the row, the label's score included, comes before the block
/// reduction's last barrier, and every write after it. The position's loss goes
/// to `rowLoss` (double), or to `loss` itself for reduction none.
template <typename T, typename TIn>
__global__ void crossEntropyWithGradKernel(const TIn *scores, TIn *ds, const void *labels,
                                           bool labels64, const T *g, const T *weights,
                                           int reduction, bool hasIgnore, int64_t ignore,
                                           const double *denom, double *rowLoss, T *loss,
                                           int64_t c, int64_t inner, int *error) {
  int64_t pos = blockIdx.x, first = (pos / inner) * c * inner + pos % inner;
  auto in = [&](int64_t k) { return T(scores[first + k * inner]); };
  double mx = -INFINITY;
  for (int64_t k = threadIdx.x; k < c; k += kThreads)
    mx = fmax(mx, (double)in(k));
  mx = blockReduce(mx, Max{});
  T m = (T)mx;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < c; k += kThreads)
    sum += (double)kernels::shiftedExp(in(k), m);
  int64_t label = indexAt(labels, labels64, pos);
  bool ignored = hasIgnore && label == ignore;
  bool counted = !ignored && label >= 0 && label < c;
  T atLabel = counted ? in(label) : T(0);
  sum = blockReduce(sum, Add{});
  T shift = kernels::logSoftmaxShift(m, sum);
  double w = counted ? (weights ? (double)weights[label] : 1.0) : 0.0;
  if (threadIdx.x == 0) {
    if (!ignored && !counted)
      *error = kIndexOutOfRange;
    double l = counted ? -w * (double)T(atLabel - shift) : 0.0;
    rowLoss[pos] = l;
    if (reduction == 0)
      loss[pos] = (T)l;
  }
  using C = kernels::ComputeType<T>;
  double gl = reduction == 0 ? (double)g[pos] : (double)g[0];
  C coef = C(w * gl / (reduction == 2 ? *denom : 1.0));
  for (int64_t k = threadIdx.x; k < c; k += kThreads)
    ds[first + k * inner] =
        counted ? TIn(kernels::crossEntropyGrad(coef, C(T(in(k) - shift)), k == label))
                : TIn(C(0));
}

/// The fused classifier's summed (or mean) loss: one block, in the order
/// crossEntropyKernel sums.
template <typename T>
__global__ void crossEntropyTotalKernel(const double *rowLoss, int64_t positions,
                                        const double *denom, int reduction, T *loss) {
  double total = 0;
  for (int64_t pos = threadIdx.x; pos < positions; pos += kThreads)
    total += rowLoss[pos];
  total = blockReduce(total, Add{});
  if (threadIdx.x == 0)
    loss[0] = (T)(reduction == 2 ? total / *denom : total);
}

/// A fused product's starting values: addend + bias (either may be null), in
/// the compute type, over a contiguous result of `n` columns.
template <typename T>
__global__ void matmulStartKernel(T *c, const T *bias, const T *addend, int64_t n,
                                  int64_t total) {
  int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (e >= total)
    return;
  using C = kernels::ComputeType<T>;
  c[e] = T((addend ? C(addend[e]) : C(0)) + (bias ? C(bias[e % n]) : C(0)));
}

/// Few values per output: one thread each.
template <typename T>
__global__ void reduceKernel(bool mean, const T *in, Strided keep, Strided red,
                             int64_t count, T *out, int64_t n) {
  int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  int64_t base = offsetOf(keep, j);
  double acc = 0;
  for (int64_t r = 0; r < count; ++r)
    acc += (double)in[base + offsetOf(red, r)];
  out[j] = (T)(mean ? (count ? acc / count : 0.0) : acc);
}

/// Many values per output (bias gradients over the batch): one block each.
template <typename T>
__global__ void reduceRowsKernel(bool mean, const T *in, Strided keep, Strided red,
                                 int64_t count, T *out) {
  int64_t j = blockIdx.x, base = offsetOf(keep, j);
  double acc = 0;
  for (int64_t r = threadIdx.x; r < count; r += kThreads)
    acc += (double)in[base + offsetOf(red, r)];
  acc = blockReduce(acc, Add{});
  if (threadIdx.x == 0)
    out[j] = (T)(mean ? (count ? acc / count : 0.0) : acc);
}

/// The element at `i` of a tensor of storage type `t`, in f32.
__device__ inline float loadAsFloat(Elem t, const void *p, int64_t i) {
  switch (t) {
  case Elem::BF16:
    return (float)static_cast<const bf16 *>(p)[i];
  case Elem::F16:
    return (float)static_cast<const f16 *>(p)[i];
  case Elem::U8:
    return (float)static_cast<const uint8_t *>(p)[i];
  default:
    return static_cast<const float *>(p)[i];
  }
}

__global__ void fusedKernel(FusedArgs args, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float value[fused::kMaxInputs + fused::kMaxInstructions];
  value[0] = 0.0f; // what an unused operand names when there are no inputs
  for (int k = 0; k < args.inputs; ++k)
    value[k] = loadAsFloat(args.inType[k], args.in[k], offsetOf(args.view[k], i));
  for (int j = 0; j < args.instructions; ++j) {
    const FusedArgs::Step &s = args.code[j];
    float v = kernels::fusedApply(s.op, value[s.a], value[s.b], value[s.c], s.constant);
    value[args.inputs + j] = kernels::roundTo(s.type, v);
  }
  float r = value[args.inputs + args.instructions - 1];
  if (args.outType == Elem::BF16)
    static_cast<bf16 *>(args.out)[i] = bf16(r);
  else if (args.outType == Elem::F16)
    static_cast<f16 *>(args.out)[i] = f16(r);
  else
    static_cast<float *>(args.out)[i] = r;
}

template <typename T>
__global__ void activationGradKernel(ActivationGrad op, const T *x, const T *g, T *out,
                                     int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = kernels::activationGrad(op, x[i], g[i]);
}

/// The gradient in the parameter's type T, multiplied by `scale` when there is one
/// (mixed precision's 1 / (loss scale * ranks), clipping's coefficient). False when
/// the step is skipped (an overflow): then every output keeps its input.
template <typename T, typename G>
__device__ bool gradientOf(const G *g, int64_t i, const float *scale, const float *found,
                           T &gi) {
  if (found && *found != 0.0f)
    return false;
  gi = scale ? T(g[i]) * T(*scale) : T(g[i]);
  return true;
}

/// The span of a multi-tensor launch that block blockIdx.x works on: the last
/// whose first block is at most its own (spans in order of firstBlock).
template <typename Span> __device__ const Span &spanOfBlock(const Span *spans, int count) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (spans[mid].firstBlock <= (int64_t)blockIdx.x)
      lo = mid;
    else
      hi = mid - 1;
  }
  return spans[lo];
}

/// torch.optim.AdamW's arithmetic, element by element, in the parameter's type,
/// over every span (tensor) of the launch; with C not void, also the new
/// parameter's 16-bit copy.
template <typename T, typename G, typename C>
__global__ void adamwKernel(const OptimizerSpan *spans, int count, const int64_t *step,
                            const float *scale, const float *found, const double *lrValue,
                            double lr, double b1, double b2, double eps, double wd) {
  const OptimizerSpan &sp = spanOfBlock(spans, count);
  int64_t i = ((int64_t)blockIdx.x - sp.firstBlock) * blockDim.x + threadIdx.x;
  if (i >= sp.n)
    return;
  const G *g = static_cast<const G *>(sp.g);
  T gi, pi = static_cast<const T *>(sp.p)[i], mi = static_cast<const T *>(sp.m)[i],
        vi = static_cast<const T *>(sp.v)[i];
  if (gradientOf(g, i, scale, found, gi)) {
    if (lrValue)
      lr = *lrValue;
    kernels::adamwElement(kernels::adamwStep<T>(lr, b1, b2, eps, wd, *step), gi, pi, mi,
                          vi);
  } // else skipped: every output keeps its input
  static_cast<T *>(sp.po)[i] = pi;
  static_cast<T *>(sp.mo)[i] = mi;
  static_cast<T *>(sp.vo)[i] = vi;
  if constexpr (!std::is_void_v<C>)
    static_cast<C *>(sp.copy)[i] = C(pi);
}

/// SGD with momentum over every span (m: the momentum buffer).
template <typename T, typename G>
__global__ void sgdKernel(const OptimizerSpan *spans, int count, const float *scale,
                          const float *found, const double *lrValue, double lr, double mom,
                          double wd) {
  const OptimizerSpan &sp = spanOfBlock(spans, count);
  int64_t i = ((int64_t)blockIdx.x - sp.firstBlock) * blockDim.x + threadIdx.x;
  if (i >= sp.n)
    return;
  const T *p = static_cast<const T *>(sp.p), *buf = static_cast<const T *>(sp.m);
  T *po = static_cast<T *>(sp.po), *bo = static_cast<T *>(sp.mo);
  T gi;
  if (!gradientOf(static_cast<const G *>(sp.g), i, scale, found, gi)) {
    po[i] = p[i];
    bo[i] = buf[i];
    return;
  }
  if (lrValue)
    lr = *lrValue;
  T pi = p[i], bi = buf[i];
  kernels::sgdElement(kernels::sgdStep<T>(lr, mom, wd), gi, pi, bi);
  po[i] = pi;
  bo[i] = bi;
}

/// Element i of a span, squared, in f64.
__device__ inline double squareAt(const SquareSpan &sp, int64_t i) {
  double v = sp.type == Elem::F64   ? static_cast<const double *>(sp.data)[i]
             : sp.type == Elem::F32 ? (double)static_cast<const float *>(sp.data)[i]
             : sp.type == Elem::BF16
                 ? (double)(float)static_cast<const bf16 *>(sp.data)[i]
                 : (double)(float)static_cast<const f16 *>(sp.data)[i];
  return v * v;
}

/// Each block: the squares (f64) of its chunk of kSquareChunk elements of its span,
/// summed in a fixed order, into partials[block].
__global__ void sumSquaresPartialsKernel(const SquareSpan *spans, int count, double *partials) {
  const SquareSpan &sp = spanOfBlock(spans, count);
  int64_t first = ((int64_t)blockIdx.x - sp.firstBlock) * kSquareChunk;
  int64_t last = first + kSquareChunk < sp.n ? first + kSquareChunk : sp.n;
  double sum = 0;
  for (int64_t i = first + threadIdx.x; i < last; i += kThreads)
    sum += squareAt(sp, i);
  sum = blockReduce(sum, Add{});
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

/// One block: the partials summed in a fixed order, as one f32.
__global__ void sumSquaresTotalKernel(const double *partials, int64_t blocks, float *out) {
  double sum = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += kThreads)
    sum += partials[b];
  sum = blockReduce(sum, Add{});
  if (threadIdx.x == 0)
    *out = (float)sum;
}

/// torch.nn.utils.clip_grad_norm_'s coefficient folded into the gradient scale.
__global__ void clipGradScaleKernel(const float *sumSq, const float *scale, float *out,
                                    float *norm, double maxNorm) {
  kernels::ClippedScale c = kernels::clippedScale(*sumSq, *scale, maxNorm);
  *out = c.scale;
  *norm = c.norm;
}

/// One thread per element of every span: a block finds its span (the last whose
/// first block is at most its own) and tests one element's exponent bits.
__global__ void nonfiniteCountSpansKernel(const CountSpan *spans, int count, float *total) {
  const CountSpan &span = spanOfBlock(spans, count);
  int64_t i = ((int64_t)blockIdx.x - span.firstBlock) * blockDim.x + threadIdx.x;
  if (i >= span.n)
    return;
  uint64_t bits = span.bytes == 2   ? static_cast<const uint16_t *>(span.data)[i]
                  : span.bytes == 4 ? static_cast<const uint32_t *>(span.data)[i]
                                    : static_cast<const uint64_t *>(span.data)[i];
  if ((bits & span.mask) == span.mask)
    atomicAdd(total, 1.0f);
}

} // namespace

int64_t countBlocks(int64_t n) { return (n + kThreads - 1) / kThreads; }

void nonfiniteCountSpans(cudaStream_t s, const CountSpan *spans, int count, int64_t blocks,
                         float *total) {
  checkCuda(cudaMemsetAsync(total, 0, sizeof(float), s), "cudaMemsetAsync");
  launch("nonfiniteCountSpans", nonfiniteCountSpansKernel, blocks, kThreads, s, spans, count,
         total);
}

void binary(cudaStream_t s, BinaryOp op, Elem t, const void *a, Strided sa, const void *b,
            Strided sb, void *out, int64_t n, int *errorFlag) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("binary", binaryKernel<T>, n, s, op, (const T *)a, sa, (const T *)b, sb, out, n,
                                     errorFlag);
  });
}

void power(cudaStream_t s, Elem base, Elem exponent, const void *a, Strided sa,
           const void *b, Strided sb, void *out, int64_t n) {
  dispatch(base, [&](auto bt) {
    using T = decltype(bt);
    dispatch(exponent, [&](auto et) {
      using U = decltype(et);
      launchN("power", powerKernel<T, U>, n, s, (const T *)a, sa, (const U *)b, sb, (T *)out, n);
    });
  });
}

void unary(cudaStream_t s, UnaryOp op, Elem t, const void *in, void *out, int64_t n) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("unary", unaryKernel<T>, n, s, op, (const T *)in, (T *)out, n);
  });
}

void where(cudaStream_t s, Elem t, const void *cond, Strided sc, const void *a, Strided sa,
           const void *b, Strided sb, void *out, int64_t n) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("where", whereKernel<T>, n, s, (const uint8_t *)cond, sc, (const T *)a, sa,
                                    (const T *)b, sb, (T *)out, n);
  });
}

void cast(cudaStream_t s, Elem from, Elem to, bool toBool, const void *in, void *out,
          int64_t n) {
  dispatch(from, [&](auto ft) {
    using In = decltype(ft);
    dispatch(to, [&](auto tt) {
      using Out = decltype(tt);
      launchN("cast", castKernel<In, Out>, n, s, (const In *)in, (Out *)out, toBool, n);
    });
  });
}

void fusedElementwise(cudaStream_t s, const FusedArgs &args, int64_t n) {
  launchN("fused", fusedKernel, n, s, args, n);
}

void stridedCopy(cudaStream_t s, int elemSize, const void *in, Strided view, int64_t base,
                 void *out, int64_t n) {
  dispatchSize(elemSize, [&](auto tag) {
    using T = decltype(tag);
    launchN("copy", copyKernel<T>, n, s, (const T *)in, view, base, (T *)out, n);
  });
}

void stridedScatter(cudaStream_t s, int elemSize, const void *in, Strided view,
                    int64_t base, void *out, int64_t n) {
  dispatchSize(elemSize, [&](auto tag) {
    using T = decltype(tag);
    launchN("scatter", scatterKernel<T>, n, s, (const T *)in, view, base, (T *)out, n);
  });
}

void trilu(cudaStream_t s, int elemSize, const void *in, void *out, int64_t mats,
           int64_t rows, int64_t cols, bool upper, int64_t k) {
  int64_t n = mats * rows * cols;
  dispatchSize(elemSize, [&](auto tag) {
    using T = decltype(tag);
    launchN("trilu", triluKernel<T>, n, s, (const T *)in, (T *)out, n, rows, cols, upper, k);
  });
}

void gather(cudaStream_t s, int elemSize, const void *data, const void *idx, bool idx64,
            void *out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
            int *errorFlag) {
  int64_t total = outer * n * inner;
  dispatchSize(elemSize, [&](auto tag) {
    using T = decltype(tag);
    launchN("gather", gatherKernel<T>, total, s, (const T *)data, idx, idx64, (T *)out, outer, n,
                                         dim, inner, errorFlag);
  });
}

void gatherGrad(cudaStream_t s, Elem t, const void *idx, bool idx64, const void *grad,
                void *out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
                int *scratch, int *errorFlag) {
  int *count = scratch, *start = scratch + dim, *rank = start + dim, *order = rank + n;
  checkCuda(cudaMemsetAsync(count, 0, dim * sizeof(int), s), "cudaMemsetAsync");
  launchN("gatherGradRank", gatherGradRankKernel, n, s, idx, idx64, n, dim, count, rank,
          errorFlag);
  launch<true>("gatherGradStarts", gatherGradStartsKernel, 1, kThreads, s,
               (const int *)count, start, dim);
  launchN("gatherGradOrder", gatherGradOrderKernel, n, s, idx, idx64, n, dim,
          (const int *)start, (const int *)rank, order);
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("gatherGradSum", gatherGradSumKernel<T>, outer * dim * inner, s, (const T *)grad,
            (T *)out, (const int *)count, (const int *)start, (const int *)order, outer, n,
            dim, inner);
  });
}

namespace {
template <typename T, typename TIn>
void launchSoftmax(cudaStream_t s, const TIn *x, T *y, int64_t outer, int64_t dim,
                   int64_t inner, bool log, DevicePrologue<T> pro = {T(1), nullptr, nullptr, 0}) {
  if (inner == 1)
    launchRows("softmaxRows", softmaxRowsKernel<T, TIn>, outer, s, x, y, dim, log, pro);
  else // a prologue needs rows (the binder checks)
    launchN("softmax", softmaxKernel<T, TIn>, outer * inner, s, x, y, outer, dim, inner, log);
}
} // namespace

void softmax(cudaStream_t s, Elem t, const void *x, void *y, int64_t outer, int64_t dim,
             int64_t inner, bool log, double scale, const void *bias,
             const int64_t *biasRowOffsets, int64_t biasStep) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    launchSoftmax(s, (const T *)x, (T *)y, outer, dim, inner, log,
                  DevicePrologue<T>{T(scale), (const T *)bias, biasRowOffsets, biasStep});
  });
}

void softmaxGrad(cudaStream_t s, Elem t, const void *y, const void *g, double scale,
                 void *dx, int64_t outer, int64_t dim, int64_t inner) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1)
      launchRows("softmaxGradRows", softmaxGradRowsKernel<T>, outer, s, (const T *)y,
                 (const T *)g, T(scale), (T *)dx, dim);
    else
      launchN("softmaxGrad", softmaxGradKernel<T>, outer * inner, s, (const T *)y,
              (const T *)g, T(scale), (T *)dx, outer, dim, inner);
  });
}

void layerNorm(cudaStream_t s, Elem t, bool wideStats, const void *x, const void *scale,
               const void *bias, const int64_t *sOff, const int64_t *bOff, void *y,
               void *mean, void *rstd, int64_t outer, int64_t inner, double eps) {
  dispatchWidened(t, wideStats, [&](auto tag, auto statTag) {
    using T = decltype(tag);
    using S = decltype(statTag);
    launchRows("layerNorm", layerNormKernel<T, S>, outer, s, (const T *)x, (const T *)scale,
               (const T *)bias, sOff, bOff, (T *)y, (S *)mean, (S *)rstd, inner, eps);
  });
}

void layerNormGrad(cudaStream_t s, Elem t, bool wideStats, const void *x, const void *scale,
                   const int64_t *sOff, const void *mean, const void *rstd, const void *gy,
                   const void *acc, void *dx, void *dscale, void *dbias, int64_t outer,
                   int64_t inner, Scratch scratch) {
  dispatchWidened(t, wideStats, [&](auto tag, auto statTag) {
    using T = decltype(tag);
    using S = decltype(statTag);
    launchRows("layerNormGradRows", layerNormGradRows<T, S>, outer, s, (const T *)x,
               (const T *)scale, sOff, (const S *)mean, (const S *)rstd, (const T *)gy,
               (const T *)acc, (T *)dx, inner);
    LayerNormColumns<T, S> columns{(const T *)x, (const T *)gy, (const S *)mean,
                                   (const S *)rstd, (T *)dscale, (T *)dbias, inner};
    launchColumns<2>("layerNormGradColumns", columns, outer, inner, scratch, s);
  });
}

void crossEntropy(cudaStream_t s, Elem t, bool wide, const void *scores, const void *labels,
                  bool labels64, const void *weights, int reduction, bool hasIgnore,
                  int64_t ignore, void *loss, void *logp, int64_t n, int64_t c,
                  int64_t inner, int *errorFlag) {
  dispatchWidened(t, wide, [&](auto inTag, auto tag) {
    using T = decltype(tag);
    using TIn = decltype(inTag);
    launchSoftmax(s, (const TIn *)scores, (T *)logp, n, c, inner, true);
    launchRows("crossEntropy", crossEntropyKernel<T>, 1, s, (const T *)logp, labels,
               labels64, (const T *)weights, reduction, hasIgnore, ignore, (T *)loss, n, c,
               inner, errorFlag);
  });
}

void crossEntropyGrad(cudaStream_t s, Elem t, bool wide, const void *logp, const void *labels,
                      bool labels64, const void *grad, const void *weights, int reduction,
                      bool hasIgnore, int64_t ignore, void *out, int64_t n, int64_t c,
                      int64_t inner, double *denom, int *errorFlag) {
  dispatchWidened(t, wide, [&](auto outTag, auto tag) {
    using T = decltype(tag);
    using TOut = decltype(outTag);
    // The mean's denominator, on the device, in the stream's order.
    launchRows("weightSum", weightSumKernel<T>, 1, s, labels, labels64, (const T *)weights,
               hasIgnore, ignore, n * inner, c, denom);
    launchN("crossEntropyGrad", crossEntropyGradKernel<T, TOut>, n * c * inner, s,
            (const T *)logp, labels, labels64, (const T *)grad, (const T *)weights,
            reduction, hasIgnore, ignore, denom, (TOut *)out, n, c, inner, errorFlag);
  });
}

void matmulStart(cudaStream_t s, Elem t, void *c, const void *bias, const void *addend,
                 int64_t n, int64_t total) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("matmulStart", matmulStartKernel<T>, total, s, (T *)c, (const T *)bias,
            (const T *)addend, n, total);
  });
}

void crossEntropyWithGrad(cudaStream_t s, Elem t, bool wide, const void *scores,
                          void *scoresGrad, const void *labels, bool labels64,
                          const void *grad, const void *weights, int reduction,
                          bool hasIgnore, int64_t ignore, void *loss, double *scratch,
                          int64_t n, int64_t c, int64_t inner, int *errorFlag) {
  dispatchWidened(t, wide, [&](auto inTag, auto tag) {
    using T = decltype(tag);
    using TIn = decltype(inTag);
    int64_t positions = n * inner;
    double *denom = scratch, *rowLoss = scratch + 1;
    launchRows("weightSum", weightSumKernel<T>, 1, s, labels, labels64, (const T *)weights,
               hasIgnore, ignore, positions, c, denom);
    launchRows("crossEntropyWithGrad", crossEntropyWithGradKernel<T, TIn>, positions, s,
               (const TIn *)scores, (TIn *)scoresGrad, labels, labels64, (const T *)grad,
               (const T *)weights, reduction, hasIgnore, ignore, (const double *)denom, rowLoss,
               (T *)loss, c, inner, errorFlag);
    if (reduction != 0)
      launchRows("crossEntropyTotal", crossEntropyTotalKernel<T>, 1, s,
                 (const double *)rowLoss, positions, (const double *)denom, reduction,
                 (T *)loss);
  });
}

void columnSums(cudaStream_t s, Elem t, bool mean, const void *in, int64_t rows, int64_t n,
                void *out, Scratch scratch) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    launchColumns<1>("columnSums", ColumnSum<T>{(const T *)in, (T *)out, mean, rows, n}, rows,
                     n, scratch, s);
  });
}

void reduce(cudaStream_t s, Elem t, bool mean, const void *in, Strided keep, Strided red,
            int64_t count, void *out, int64_t n) {
  // A block per output once its values outnumber what one thread sums quickly.
  constexpr int64_t kRowsFrom = 64;
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    if (count >= kRowsFrom)
      launchRows("reduceRows", reduceRowsKernel<T>, n, s, mean, (const T *)in, keep, red,
                 count, (T *)out);
    else
      launchN("reduce", reduceKernel<T>, n, s, mean, (const T *)in, keep, red, count,
              (T *)out, n);
  });
}

void activationGrad(cudaStream_t s, ActivationGrad op, Elem t, const void *x, const void *g,
                    void *out, int64_t n) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("activationGrad", activationGradKernel<T>, n, s, op, (const T *)x, (const T *)g,
            (T *)out, n);
  });
}

/// Calls f(T{}, G{}) for an f32/f64 parameter T and a gradient G of any float type.
template <typename F> void dispatchOptimizer(Elem t, Elem gt, F f) {
  auto withGrad = [&](auto pt) {
    dispatchFloat(gt, [&](auto g) {
      if constexpr (!std::is_same_v<decltype(g), double> ||
                    std::is_same_v<decltype(pt), double>)
        f(pt, g);
    });
  };
  if (t == Elem::F64)
    withGrad(double{});
  else
    withGrad(float{});
}

void adamw(cudaStream_t s, Elem t, Elem gt, Elem ct, bool copies, const OptimizerSpan *spans,
           int count, int64_t blocks, const int64_t *step, const float *scale,
           const float *found, const double *lrValue, double lr, double beta1, double beta2,
           double eps, double weightDecay) {
  dispatchOptimizer(t, gt, [&](auto pt, auto g16) {
    using T = decltype(pt);
    using G = decltype(g16);
    auto go = [&](auto *copyTag) {
      using C = std::remove_pointer_t<decltype(copyTag)>;
      launch("adamw", adamwKernel<T, G, C>, blocks, kThreads, s, spans, count, step, scale,
             found, lrValue, lr, beta1, beta2, eps, weightDecay);
    };
    if (!copies)
      go((void *)nullptr);
    else if constexpr (std::is_same_v<T, float>) { // the binder checked: f32 masters only
      if (ct == Elem::BF16)
        go((bf16 *)nullptr);
      else
        go((f16 *)nullptr);
    }
  });
}

void sgd(cudaStream_t s, Elem t, Elem gt, const OptimizerSpan *spans, int count,
         int64_t blocks, const float *scale, const float *found, const double *lrValue,
         double lr, double momentum, double weightDecay) {
  dispatchOptimizer(t, gt, [&](auto pt, auto g16) {
    using T = decltype(pt);
    using G = decltype(g16);
    launch("sgd", sgdKernel<T, G>, blocks, kThreads, s, spans, count, scale, found, lrValue,
           lr, momentum, weightDecay);
  });
}

int64_t squareBlocks(int64_t n) { return (n + kSquareChunk - 1) / kSquareChunk; }

void sumSquaresSpans(cudaStream_t s, const SquareSpan *spans, int count, int64_t blocks,
                     double *partials, float *out) {
  launch<true>("sumSquaresPartials", sumSquaresPartialsKernel, blocks, kThreads, s, spans,
               count, partials);
  launch<true>("sumSquaresTotal", sumSquaresTotalKernel, 1, kThreads, s,
               (const double *)partials, blocks, out);
}

void clipGradScale(cudaStream_t s, const float *sumSq, const float *scale, float *out,
                   float *norm, double maxNorm) {
  launch("clipGradScale", clipGradScaleKernel, 1, 1, s, sumSq, scale, out, norm, maxNorm);
}

} // namespace zrt::cuda
