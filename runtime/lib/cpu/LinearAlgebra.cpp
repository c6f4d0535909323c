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

void gemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n,
              0.0f, c, n);
}
void gemm(const double *a, const double *b, double *c, int64_t m, int64_t n,
          int64_t k) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n,
              0.0, c, n);
}

/// numpy.matmul: 1-D operands are promoted to matrices and the added dimension is
/// dropped again; batch dimensions broadcast.
BoundKernel bindMatMul(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  ZRT_CHECK(a.dtype == b.dtype && a.dtype == out.dtype,
            call.where() << ": operand dtypes differ");
  Shape as = a.shape, bs = b.shape;
  ZRT_CHECK(!as.empty() && !bs.empty(), call.where() << ": scalar operand");
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  ZRT_CHECK(bs[bs.size() - 2] == k, call.where() << ": inner dimensions differ ("
                                                 << shapeString(a.shape) << " x "
                                                 << shapeString(b.shape) << ")");
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
        gemm(a.as<T>() + aOff[i] * m * k, b.as<T>() + bOff[i] * k * n, c, m, n, k);
      }
    };
  });
}

} // namespace

void zrt::addLinearAlgebraKernels(KernelTable &t) { t["matmul"] = bindMatMul; }
