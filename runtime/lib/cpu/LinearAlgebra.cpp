//===- LinearAlgebra.cpp - Matrix product on OpenBLAS ---------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "../kernels/MatMulGeometry.h"

#include <cblas.h>
#include <dlfcn.h>

#include <vector>

using namespace zrt;
using namespace zrt::cpu;

namespace {

void gemm(bool ta, bool tb, const float *a, const float *b, float *c, int64_t m,
          int64_t n, int64_t k) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n);
}
void gemm(bool ta, bool tb, const double *a, const double *b, double *c, int64_t m,
          int64_t n, int64_t k) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0, a, ta ? m : k, b, tb ? k : n, 0.0, c, n);
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

BoundKernel bindMatMul(const KernelCall &call) {
  kernels::MatMulGeometry g = kernels::matMulGeometry(call);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  return dispatchFloat(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      int64_t m = g.m, n = g.n, k = g.k;
      for (int64_t i = 0; i < g.batches(); ++i) {
        T *c = out.as<T>() + i * m * n;
        if (m == 0 || n == 0)
          continue;
        if (k == 0) {
          std::fill(c, c + m * n, T(0));
          continue;
        }
        gemm(g.transposeA, g.transposeB, a.as<T>() + g.aOffsets[i] * m * k,
             b.as<T>() + g.bOffsets[i] * k * n, c, m, n, k);
      }
    };
  });
}

} // namespace

void zrt::addLinearAlgebraKernels(KernelTable &t) { t["matmul"] = bindMatMul; }

const char *zrt::bf16MatmulPath() {
  return sbgemm() ? "OpenBLAS sbgemm (bf16 inputs, f32 accumulation)"
                  : "widened to f32 sgemm (this OpenBLAS has no sbgemm)";
}
