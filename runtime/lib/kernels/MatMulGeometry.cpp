//===- MatMulGeometry.cpp - One matmul call as GEMMs ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "MatMulGeometry.h"

#include "../cpu/KernelUtil.h"

using namespace zrt;
using namespace zrt::cpu;

int64_t kernels::MatMulGeometry::uniformStride(const std::vector<int64_t> &offsets) {
  int64_t stride = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
  for (size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] != (int64_t)i * stride)
      return -1;
  return stride;
}

kernels::MatMulGeometry kernels::matMulGeometry(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView &a = call.ins[0], &b = call.ins[1], &out = call.outs[0];
  ZRT_CHECK(a.dtype == b.dtype && a.dtype == out.dtype,
            call.where() << ": operand dtypes differ");
  MatMulGeometry g;
  g.transposeA = call.hasAttr("transpose_lhs") && call.intAttr("transpose_lhs");
  g.transposeB = call.hasAttr("transpose_rhs") && call.intAttr("transpose_rhs");
  Shape as = a.shape, bs = b.shape;
  ZRT_CHECK(!as.empty() && !bs.empty(), call.where() << ": scalar operand");
  ZRT_CHECK((!g.transposeA || as.size() >= 2) && (!g.transposeB || bs.size() >= 2),
            call.where() << ": a transposed operand needs rank >= 2");
  if (g.transposeA)
    std::swap(as[as.size() - 1], as[as.size() - 2]);
  if (g.transposeB)
    std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  g.m = as[as.size() - 2];
  g.k = as.back();
  g.n = bs.back();
  ZRT_CHECK(bs[bs.size() - 2] == g.k, call.where() << ": inner dimensions differ ("
                                                   << shapeString(as) << " x "
                                                   << shapeString(bs) << ")");
  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  Shape batch = broadcastShapes({aBatch, bBatch}, call);
  Shape expected = batch;
  if (!aVec)
    expected.push_back(g.m);
  if (!bVec)
    expected.push_back(g.n);
  expectShape(call, out, expected, "result");
  forEachBroadcast<2>(batch,
                      std::array<Shape, 2>{broadcastStrides(aBatch, batch),
                                           broadcastStrides(bBatch, batch)},
                      [&](int64_t, auto off) {
                        g.aOffsets.push_back(off[0]);
                        g.bOffsets.push_back(off[1]);
                      });
  if (g.batches() > 1 && !g.transposeA && MatMulGeometry::uniformStride(g.aOffsets) == 1 &&
      MatMulGeometry::uniformStride(g.bOffsets) == 0) {
    g.m *= g.batches();
    g.aOffsets.assign(1, 0);
    g.bOffsets.assign(1, 0);
  }
  return g;
}
