//===- LinearAlgebra.cpp - Matrix product on OpenBLAS ---------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "../kernels/MatMulGeometry.h"
#include "zrt/ParallelFor.h"

#include <cblas.h>
#include <dlfcn.h>

#include <type_traits>
#include <vector>

using namespace zrt;
using namespace zrt::cpu;

namespace {

/// C = op(A) op(B) with A's leading dimension `lda` (a block of rows of a larger
/// product: its rows are A's rows, or with `ta` its columns).
void gemmRows(bool ta, bool tb, const float *a, int64_t lda, const float *b, float *c,
              int64_t m, int64_t n, int64_t k) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0f, a, lda, b, tb ? k : n, 0.0f, c, n);
}
void gemmRows(bool ta, bool tb, const double *a, int64_t lda, const double *b, double *c,
              int64_t m, int64_t n, int64_t k) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0, a, lda, b, tb ? k : n, 0.0, c, n);
}
void gemm(bool ta, bool tb, const float *a, const float *b, float *c, int64_t m,
          int64_t n, int64_t k) {
  gemmRows(ta, tb, a, ta ? m : k, b, c, m, n, k);
}
void gemm(bool ta, bool tb, const double *a, const double *b, double *c, int64_t m,
          int64_t n, int64_t k) {
  gemmRows(ta, tb, a, ta ? m : k, b, c, m, n, k);
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
void roundInto(const float *src, bf16 *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = bf16(src[i]);
}
void roundInto(const float *src, f16 *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = f16(src[i]);
}
using SbgemmFn = void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
                         blasint, blasint, blasint, float, const uint16_t *, blasint,
                         const uint16_t *, blasint, float, float *, blasint);
SbgemmFn sbgemm() {
  static SbgemmFn fn = (SbgemmFn)dlsym(RTLD_DEFAULT, "cblas_sbgemm");
  return fn;
}
template <typename H>
void widenedGemm(bool ta, bool tb, const H *a, const H *b, H *c, int64_t m, int64_t n,
                 int64_t k) {
  float *af = scratch(0, m * k).data(), *bf = scratch(1, k * n).data(),
        *cf = scratch(2, m * n).data();
  for (int64_t i = 0; i < m * k; ++i)
    af[i] = a[i];
  for (int64_t i = 0; i < k * n; ++i)
    bf[i] = b[i];
  gemm(ta, tb, af, bf, cf, m, n, k);
  roundInto(cf, c, m * n);
}
void gemm(bool ta, bool tb, const bf16 *a, const bf16 *b, bf16 *c, int64_t m, int64_t n,
          int64_t k) {
  SbgemmFn fn = sbgemm();
  if (!fn)
    return widenedGemm(ta, tb, a, b, c, m, n, k);
  float *cf = scratch(2, m * n).data();
  fn(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
     1.0f, &a->bits, ta ? m : k, &b->bits, tb ? k : n, 0.0f, cf, n);
  roundInto(cf, c, m * n);
}
void gemm(bool ta, bool tb, const f16 *a, const f16 *b, f16 *c, int64_t m, int64_t n,
          int64_t k) {
  widenedGemm(ta, tb, a, b, c, m, n, k);
}

/// Multiply-adds below which a GEMM runs on one thread: splitting a smaller one
/// costs more in packing and waking than it saves.
constexpr int64_t kParallelGemmMacs = 1 << 18;

BoundKernel bindMatMul(const KernelCall &call) {
  kernels::MatMulGeometry g = kernels::matMulGeometry(call);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  return dispatchFloat(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      int64_t m = g.m, n = g.n, k = g.k;
      if (m == 0 || n == 0)
        return;
      auto product = [&](int64_t i) {
        T *c = out.as<T>() + i * m * n;
        if (k == 0)
          return std::fill(c, c + m * n, T(0));
        gemm(g.transposeA, g.transposeB, a.as<T>() + g.aOffsets[i] * m * k,
             b.as<T>() + g.bOffsets[i] * k * n, c, m, n, k);
      };
      // OpenBLAS runs on one thread (setCpuThreads): the kernels' threads split
      // the GEMMs, by products when there are several, else by rows of f32/f64
      // results (16-bit products widen whole operands, so they stay whole).
      int64_t macs = m * n * std::max<int64_t>(k, 1);
      if (g.batches() > 1) {
        parallelFor(g.batches(), std::max<int64_t>(1, kParallelGemmMacs / macs),
                    [&](int64_t lo, int64_t hi) {
                      for (int64_t i = lo; i < hi; ++i)
                        product(i);
                    });
        return;
      }
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (k > 0) {
          const T *a0 = a.as<T>() + g.aOffsets[0] * m * k, *b0 = b.as<T>() + g.bOffsets[0] * k * n;
          int64_t lda = g.transposeA ? m : k;
          parallelFor(m, std::max<int64_t>(8, kParallelGemmMacs / (n * k)),
                      [&](int64_t lo, int64_t hi) {
                        gemmRows(g.transposeA, g.transposeB,
                                 a0 + (g.transposeA ? lo : lo * k), lda, b0,
                                 out.as<T>() + lo * n, hi - lo, n, k);
                      });
          return;
        }
      }
      product(0);
    };
  });
}

} // namespace

void zrt::addLinearAlgebraKernels(KernelTable &t) { t[Kernel::MATMUL] = bindMatMul; }

const char *zrt::bf16MatmulPath() {
  return sbgemm() ? "OpenBLAS sbgemm (bf16 inputs, f32 accumulation)"
                  : "widened to f32 sgemm (this OpenBLAS has no sbgemm)";
}
