//===- LinearAlgebra.cpp - Matrix product on OpenBLAS ---------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <cblas.h>

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

/// numpy.matmul: 1-D operands are promoted to matrices and the added dimension is
/// dropped again; batch dimensions broadcast. `transpose_lhs` / `transpose_rhs`
/// (set by the plan lowering in place of a transpose kernel) say that an operand
/// is stored with its last two dimensions swapped.
BoundKernel bindMatMul(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  ZRT_CHECK(a.dtype == b.dtype && a.dtype == out.dtype,
            call.where() << ": operand dtypes differ");
  bool ta = call.hasAttr("transpose_lhs") && call.intAttr("transpose_lhs");
  bool tb = call.hasAttr("transpose_rhs") && call.intAttr("transpose_rhs");
  Shape as = a.shape, bs = b.shape;
  ZRT_CHECK(!as.empty() && !bs.empty(), call.where() << ": scalar operand");
  ZRT_CHECK((!ta || as.size() >= 2) && (!tb || bs.size() >= 2),
            call.where() << ": a transposed operand needs rank >= 2");
  if (ta)
    std::swap(as[as.size() - 1], as[as.size() - 2]);
  if (tb)
    std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  ZRT_CHECK(bs[bs.size() - 2] == k, call.where() << ": inner dimensions differ ("
                                                 << shapeString(as) << " x "
                                                 << shapeString(bs) << ")");
  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  Shape batch = broadcastShapes({aBatch, bBatch}, call);
  Shape expected = batch;
  if (!aVec)
    expected.push_back(m);
  if (!bVec)
    expected.push_back(n);
  expectShape(call, out, expected, "result");
  // Offsets (in matrices) of each batch's operands.
  std::vector<int64_t> aOff, bOff;
  std::array<Shape, 2> strides = {broadcastStrides(aBatch, batch),
                                  broadcastStrides(bBatch, batch)};
  forEachBroadcast<2>(batch, strides, [&](int64_t, auto off) {
    aOff.push_back(off[0]);
    bOff.push_back(off[1]);
  });
  return dispatchFloat(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      for (size_t i = 0; i < aOff.size(); ++i) {
        T *c = out.as<T>() + i * m * n;
        if (m == 0 || n == 0)
          continue;
        if (k == 0) {
          std::fill(c, c + m * n, T(0));
          continue;
        }
        gemm(ta, tb, a.as<T>() + aOff[i] * m * k, b.as<T>() + bOff[i] * k * n, c, m, n,
             k);
      }
    };
  });
}

} // namespace

void zrt::addLinearAlgebraKernels(KernelTable &t) { t["matmul"] = bindMatMul; }
