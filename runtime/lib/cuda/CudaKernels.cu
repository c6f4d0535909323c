//===- CudaKernels.cu - The project's GPU kernels -------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// One thread per output element, or a block per row where a row is reduced;
// accumulations in double like the CPU kernels (parity first); GEMMs go to cuBLASLt.
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.cuh"

namespace zrt::cuda {
namespace {
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

} // namespace

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

void matmulStart(cudaStream_t s, Elem t, void *c, const void *bias, const void *addend,
                 int64_t n, int64_t total) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    launchN("matmulStart", matmulStartKernel<T>, total, s, (T *)c, (const T *)bias,
            (const T *)addend, n, total);
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

} // namespace zrt::cuda
