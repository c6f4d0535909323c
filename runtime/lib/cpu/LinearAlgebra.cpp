//===- LinearAlgebra.cpp - Matrix product on OpenBLAS ---------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/MatMulGeometry.h"
#include "zrt/ParallelFor.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace zrt;
using namespace zrt::cpu;

namespace {

/// A fused product's epilogue (compute.fused_matmul): `bias` (n values, added to
/// every row) and `addend` (m x n, leading dimension ld), either may be absent.
template <typename T> struct Epilogue {
  const T *bias = nullptr, *addend = nullptr;
  int64_t ld = 0;
  /// The same for the rows from `row` on.
  Epilogue from(int64_t row) const {
    Epilogue e = *this;
    if (e.addend)
      e.addend += row * ld;
    return e;
  }
};

/// One row of C's starting values; a loop per case, so that each vectorizes.
template <typename S, typename T>
ZRT_VECTORIZED void startRow(S *c, const T *addend, const T *bias, int64_t n) {
  if (addend && bias)
    for (int64_t j = 0; j < n; ++j)
      c[j] = S(addend[j]) + S(bias[j]);
  else if (addend)
    for (int64_t j = 0; j < n; ++j)
      c[j] = S(addend[j]);
  else
    for (int64_t j = 0; j < n; ++j)
      c[j] = S(bias[j]);
}

/// The m x n matrix at `c` (leading dimension ldc) set to where its product's
/// accumulation starts: addend + bias, summed in S (f32 for 16-bit terms: the
/// result is rounded once, after the product), or zero.
template <typename S, typename T>
void startMatrix(S *c, int64_t ldc, int64_t m, int64_t n, const Epilogue<T> &e) {
  if (!e.bias && !e.addend) {
    if (ldc == n)
      return (void)std::memset(c, 0, sizeof(S) * m * n);
    for (int64_t i = 0; i < m; ++i)
      std::memset(c + i * ldc, 0, sizeof(S) * n);
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    startRow(c + i * ldc, e.addend ? e.addend + i * e.ld : nullptr, e.bias, n);
}

/// C = op(A) op(B) (+ the epilogue), row-major, with leading dimensions lda,
/// ldb, ldc (each matrix may be a block of a larger one: a view's rows, a block
/// of a product). C is set to its starting values here and the GEMM called with
/// beta = 1: OpenBLAS does beta = 0 as a clearing pass of its own (sgemm_beta)
/// followed by the same accumulation onto zeros, so the result is the same, and
/// memset clears C about three times as fast (the benchmark GPT's GEMMs at hidden
/// 384: 523 to 511-517 ms per step). A bias starts C as addmm starts it.
void gemm(bool ta, bool tb, const float *a, int64_t lda, const float *b, int64_t ldb,
          float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, const Epilogue<float> &e) {
  startMatrix(c, ldc, m, n, e);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
}
void gemm(bool ta, bool tb, const double *a, int64_t lda, const double *b, int64_t ldb,
          double *c, int64_t ldc, int64_t m, int64_t n, int64_t k, const Epilogue<double> &e) {
  startMatrix(c, ldc, m, n, e);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0, a, lda, b, ldb, 1.0, c, ldc);
}

/// 16-bit operands, f32 accumulation, the product rounded once to 16 bits. bf16
/// goes to OpenBLAS's sbgemm (bf16 inputs, f32 result; AVX512-BF16 where the CPU
/// has it) when the OpenBLAS in use was built with it (Debian's 0.3.21 is not: it
/// is looked up at run time, and zero-run says which path it takes); otherwise,
/// and always for f16, the operands are widened for sgemm.
std::vector<float> &scratch(int slot, size_t n) {
  thread_local std::vector<float> buffers[3];
  if (buffers[slot].size() < n)
    buffers[slot].resize(n);
  return buffers[slot];
}
/// The rows x cols f32 matrix `src` (dense) rounded into `dst` (leading dimension ld).
template <typename H>
void roundInto(const float *src, H *dst, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      dst[i * ld + j] = H(src[i * cols + j]);
}
/// The rows x cols matrix `src` (leading dimension ld) widened into dense `dst`.
template <typename H>
void widenInto(const H *src, int64_t ld, float *dst, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      dst[i * cols + j] = src[i * ld + j];
}
using SbgemmFn = void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
                         blasint, blasint, blasint, float, const uint16_t *, blasint,
                         const uint16_t *, blasint, float, float *, blasint);
SbgemmFn sbgemm() {
  static SbgemmFn fn = (SbgemmFn)dlsym(RTLD_DEFAULT, "cblas_sbgemm");
  return fn;
}
template <typename H>
void widenedGemm(bool ta, bool tb, const H *a, int64_t lda, const H *b, int64_t ldb, H *c,
                 int64_t ldc, int64_t m, int64_t n, int64_t k, const Epilogue<H> &e) {
  // As stored: A is m x k (k x m when transposed), B k x n (n x k).
  int64_t aRows = ta ? k : m, aCols = ta ? m : k, bRows = tb ? n : k, bCols = tb ? k : n;
  float *af = scratch(0, m * k).data(), *bf = scratch(1, k * n).data(),
        *cf = scratch(2, m * n).data();
  widenInto(a, lda, af, aRows, aCols);
  widenInto(b, ldb, bf, bRows, bCols);
  startMatrix(cf, n, m, n, e);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0f, af, aCols, bf, bCols, 1.0f, cf, n);
  roundInto(cf, c, m, n, ldc);
}
void gemm(bool ta, bool tb, const bf16 *a, int64_t lda, const bf16 *b, int64_t ldb, bf16 *c,
          int64_t ldc, int64_t m, int64_t n, int64_t k, const Epilogue<bf16> &e) {
  SbgemmFn fn = sbgemm();
  if (!fn)
    return widenedGemm(ta, tb, a, lda, b, ldb, c, ldc, m, n, k, e);
  float *cf = scratch(2, m * n).data();
  startMatrix(cf, n, m, n, e);
  fn(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
     1.0f, &a->bits, lda, &b->bits, ldb, 1.0f, cf, n);
  roundInto(cf, c, m, n, ldc);
}
void gemm(bool ta, bool tb, const f16 *a, int64_t lda, const f16 *b, int64_t ldb, f16 *c,
          int64_t ldc, int64_t m, int64_t n, int64_t k, const Epilogue<f16> &e) {
  widenedGemm(ta, tb, a, lda, b, ldb, c, ldc, m, n, k, e);
}

/// Multiply-adds below which a GEMM runs on one thread: splitting a smaller one
/// costs more in packing and waking than it saves.
constexpr int64_t kParallelGemmMacs = 1 << 18;

/// The rows of C that one OpenBLAS call computes when a product is split into
/// row blocks. OpenBLAS's result for a row depends on where the row falls among
/// the rows of its call: its x86 kernels compute C in tiles of several rows with
/// other code (another order of sums) for the last, partial tile, and some cores
/// (SkylakeX) switch to other kernels below a product size. Row blocks chosen by
/// the thread count or by whichever threads are free (another rank's thread may
/// hold the pool) made runs differ in their last bits on Zen (2 thread ranks,
/// 19 of 21 weights differed between runs). So a product's blocks are a function
/// of its shape alone: at most kMaxGemmBlocks of at least kMinGemmBlockRows rows
/// (each call repacks B, about ten rows' worth of work: 128 rows keep that under
/// 8%, and 8 blocks share evenly over 2, 4 or 8 threads), none below
/// kParallelGemmMacs. The threads share whole blocks; each block is one call of
/// the same shape at any thread count and load.
constexpr int64_t kMinGemmBlockRows = 128, kMaxGemmBlocks = 8;
int64_t gemmBlockRows(int64_t m, int64_t n, int64_t k) {
  int64_t blocks = std::clamp<int64_t>(m / kMinGemmBlockRows, 1, kMaxGemmBlocks);
  blocks = std::min(blocks, std::max<int64_t>(1, m * n * k / kParallelGemmMacs));
  int64_t rows = (m + blocks - 1) / blocks;
  return std::max<int64_t>(1, (rows + 15) / 16 * 16); // whole 16-row tiles
}

/// lhs_sums: each of the m rows of op(A) (one product, A at `a` with leading
/// dimension ld) summed over k in double, in the order of k, as reduce_sum sums
/// a column (a transposed A is a column-major matrix: its rows are G's columns).
template <typename T>
void rowSumsOf(const T *a, bool transpose, int64_t ld, int64_t m, int64_t k, T *sums) {
  if (transpose)
    return columnSumsInDouble(a, k, ld, m, [&](int64_t i, double s) { sums[i] = (T)s; });
  int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, k));
  parallelFor(m, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      sums[i] = (T)(k ? sumRun(a + i * ld, k) : 0.0);
  });
}

/// The GELU epilogue over the n elements of a fused product's result `c`, once the
/// product is there: as the gelu_tanh kernel after it, from the rounded result,
/// keeping that in `pre` (forward); or as gelu_tanh_grad after it, reading the
/// forward's pre-activation `input` (backward).
template <typename T> void geluTanhEpilogue(T *c, T *pre, const T *input, int64_t n) {
  using C = ComputeType<T>;
  parallelFor(n, kParallelGrain, [&](int64_t lo, int64_t hi) {
    if (pre)
      for (int64_t i = lo; i < hi; ++i) {
        pre[i] = c[i];
        c[i] = T(kernels::unary<kernels::UnaryOp::GeluTanh>(C(c[i])));
      }
    else
      for (int64_t i = lo; i < hi; ++i)
        c[i] = kernels::activationGrad<kernels::ActivationGrad::GeluTanh>(input[i], c[i]);
  });
}

/// The GEMMs of a matmul call, with their bias, addend and lhs_sums.
template <typename T>
BoundKernel productsOf(const kernels::MatMulGeometry &g, TensorView a, TensorView b,
                       TensorView out, TensorView bias, TensorView addend, TensorView sums) {
  return [=] {
    int64_t m = g.m, n = g.n, k = g.k;
    if (g.lhsSums >= 0) // a 2-D product (matMulGeometry): one A
      rowSumsOf(a.as<T>() + g.a.offsets[0], g.a.transpose, g.a.ld, m, k, sums.as<T>());
    if (m == 0 || n == 0)
      return;
    const T *pa = a.as<T>(), *pb = b.as<T>();
    T *pc = out.as<T>();
    // The epilogue of product i: its addend lies as its result does (no view).
    auto epilogue = [&](int64_t i) {
      Epilogue<T> e;
      e.bias = g.bias >= 0 ? bias.as<T>() : nullptr;
      e.addend = g.addend >= 0 ? addend.as<T>() + g.c.offsets[i] : nullptr;
      e.ld = g.c.ld;
      return e;
    };
    if (k == 0) { // the result's view covers it once: all of it is its start
      if (g.bias < 0 && g.addend < 0)
        return std::fill(out.as<T>(), out.as<T>() + out.numel(), T(0));
      using C = ComputeType<T>;
      for (int64_t i = 0; i < g.batches(); ++i) {
        Epilogue<T> e = epilogue(i);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j)
            pc[g.c.offsets[i] + r * g.c.ld + j] =
                T((e.addend ? C(e.addend[r * e.ld + j]) : C(0)) + (e.bias ? C(e.bias[j]) : C(0)));
      }
      return;
    }
    auto product = [&](int64_t i) {
      gemm(g.a.transpose, g.b.transpose, pa + g.a.offsets[i], g.a.ld, pb + g.b.offsets[i],
           g.b.ld, pc + g.c.offsets[i], g.c.ld, m, n, k, epilogue(i));
    };
    // OpenBLAS runs on one thread (setCpuThreads): the kernels' threads split
    // the GEMMs, by products when there are several (each one call), else by
    // the fixed row blocks of f32/f64 results (gemmBlockRows; 16-bit products
    // widen whole operands, so they stay whole).
    int64_t macs = m * n * k;
    if (g.batches() > 1) {
      parallelFor(g.batches(), std::max<int64_t>(1, kParallelGemmMacs / macs),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t i = lo; i < hi; ++i)
                      product(i);
                  });
      return;
    }
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T *a0 = pa + g.a.offsets[0], *b0 = pb + g.b.offsets[0];
      T *c0 = pc + g.c.offsets[0];
      int64_t rows = gemmBlockRows(m, n, k), blocks = (m + rows - 1) / rows;
      parallelFor(blocks, 1, [&](int64_t first, int64_t last) {
        for (int64_t block = first; block < last; ++block) {
          // Rows lo..hi of A: its rows, or with a transpose its columns.
          int64_t lo = block * rows, hi = std::min(m, lo + rows);
          gemm(g.a.transpose, g.b.transpose, a0 + (g.a.transpose ? lo : lo * g.a.ld), g.a.ld,
               b0, g.b.ld, c0 + lo * g.c.ld, g.c.ld, hi - lo, n, k, epilogue(0).from(lo));
        }
      });
      return;
    }
    product(0);
  };
}

BoundKernel bindMatMul(const KernelCall &call) {
  kernels::MatMulGeometry g = kernels::matMulGeometry(call);
  const TensorView a = call.ins[g.a.tensor], b = call.ins[g.b.tensor], out = call.outs[0];
  const TensorView bias = g.bias >= 0 ? call.ins[g.bias] : TensorView{},
                   addend = g.addend >= 0 ? call.ins[g.addend] : TensorView{},
                   sums = g.lhsSums >= 0 ? call.outs[g.lhsSums] : TensorView{},
                   pre = g.preActivation >= 0 ? call.outs[g.preActivation] : TensorView{},
                   actIn = g.activationInput >= 0 ? call.ins[g.activationInput] : TensorView{};
  return dispatchFloat(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    if (g.geluTanh) // the result is no view (matMulGeometry): its elements in a row
      return [=, products = productsOf<T>(g, a, b, out, bias, addend, sums)] {
        products();
        geluTanhEpilogue(out.as<T>(), pre.data ? pre.as<T>() : nullptr,
                         actIn.data ? actIn.as<T>() : nullptr, out.numel());
      };
    return productsOf<T>(g, a, b, out, bias, addend, sums);
  });
}

} // namespace

void zrt::addLinearAlgebraKernels(KernelTable &t) { t[Kernel::MATMUL] = bindMatMul; }

const char *zrt::bf16MatmulPath() {
  return sbgemm() ? "OpenBLAS sbgemm (bf16 inputs, f32 accumulation)"
                  : "widened to f32 sgemm (this OpenBLAS has no sbgemm)";
}
