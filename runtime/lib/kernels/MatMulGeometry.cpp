//===- MatMulGeometry.cpp - One matmul call as GEMMs ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "MatMulGeometry.h"
#include "StridedOperand.h"

#include "../cpu/KernelUtil.h"

#include <algorithm>
#include <numeric>

using namespace zrt;
using namespace zrt::cpu;
using kernels::coversOnce;
using kernels::StridedOperand;
using kernels::stridedOperandOf;

namespace {

/// How BLAS reads a rows x cols matrix whose steps along a row and along a
/// column are rowStride and colStride: row-major (its rows contiguous) or
/// transposed (its columns), with a leading dimension; false if neither.
bool blasLayout(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride,
                kernels::GemmOperand &o) {
  if ((cols <= 1 || colStride == 1) && (rows <= 1 || rowStride >= std::max<int64_t>(cols, 1))) {
    o.transpose = false;
    o.ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rowStride;
    return true;
  }
  if ((rows <= 1 || rowStride == 1) && (cols <= 1 || colStride >= std::max<int64_t>(rows, 1))) {
    o.transpose = true;
    o.ld = cols <= 1 ? std::max<int64_t>(rows, 1) : colStride;
    return true;
  }
  return false;
}

/// Per batch dimension of `batch`, how far `v` moves (0 where it is broadcast).
Shape batchStrides(const StridedOperand &v, const Shape &batch) {
  Shape s(batch.size(), 0);
  size_t rank = v.shape.size() - 2;
  for (size_t d = 0; d < rank; ++d)
    if (v.shape[d] != 1)
      s[batch.size() - rank + d] = v.strides[d];
  return s;
}

} // namespace

int64_t kernels::MatMulGeometry::uniformStride(const std::vector<int64_t> &offsets) {
  int64_t stride = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
  for (size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] != offsets[0] + (int64_t)i * stride)
      return -1;
  return stride;
}

kernels::MatMulGeometry::Groups kernels::MatMulGeometry::uniformGroups() const {
  int64_t total = batches();
  for (int64_t size = total; size > 1; --size) {
    if (total % size)
      continue;
    auto stepOf = [&](const GemmOperand &o) { return o.offsets[1] - o.offsets[0]; };
    Groups g{size, stepOf(a), stepOf(b), stepOf(c)};
    auto uniform = [&](const GemmOperand &o, int64_t stride) {
      for (int64_t j = 0; j < total; j += size)
        for (int64_t i = 1; i < size; ++i)
          if (o.offsets[j + i] != o.offsets[j] + i * stride)
            return false;
      return stride >= 0;
    };
    if (uniform(a, g.strideA) && uniform(b, g.strideB) && uniform(c, g.strideC))
      return g;
  }
  return Groups{};
}

namespace {

/// The epilogue's inputs as `operand_segments` lists them, checked against the
/// result `out` of shape `expected`.
void epilogueInputs(const KernelCall &call, const TensorView &out, const Shape &expected,
                    kernels::MatMulGeometry &g) {
  if (!call.hasAttr("operand_segments"))
    return call.expectArity(2, 1);
  std::vector<int64_t> seg = call.intsAttr("operand_segments");
  if (seg.size() == 4)
    seg.push_back(0);
  bool wellFormed = seg.size() == 5 && seg[0] == 1 && seg[1] == 1;
  for (size_t i = 2; i < seg.size(); ++i)
    wellFormed = wellFormed && (seg[i] == 0 || seg[i] == 1);
  ZRT_CHECK(wellFormed &&
                (int64_t)call.ins.size() == seg[0] + seg[1] + seg[2] + seg[3] + seg[4],
            call.where() << ": its operand_segments do not describe its " << call.ins.size()
                         << " inputs (lhs, rhs, then an optional bias, addend and "
                            "activation input)");
  if (call.hasAttr("activation")) {
    std::string act = call.stringAttr("activation");
    ZRT_CHECK(act == "gelu_tanh", call.where() << ": activation '" << act
                                               << "' is not one the matmul kernel has "
                                                  "(gelu_tanh)");
    ZRT_CHECK(!seg[3] && (seg[4] ? !seg[2] && call.outs.size() == 1 : call.outs.size() == 2),
              call.where() << ": an activation takes a pre-activation output (with an "
                              "optional bias) or an activation input (its gradient), and "
                              "no addend");
    g.geluTanh = true;
    if (seg[4]) {
      g.activationInput = (int)(call.ins.size() - 1);
      const TensorView &in = call.ins[g.activationInput];
      expectShape(call, in, expected, "activation input");
      ZRT_CHECK(in.dtype == out.dtype,
                call.where() << ": the activation input's dtype is not the result's");
    } else {
      g.preActivation = 1;
      expectShape(call, call.outs[1], expected, "pre-activation");
      ZRT_CHECK(call.outs[1].dtype == out.dtype,
                call.where() << ": the pre-activation's dtype is not the result's");
    }
  } else {
    ZRT_CHECK(!seg[4], call.where() << ": an activation input without an activation");
  }
  if (call.outs.size() == 2 && !g.geluTanh) {
    const TensorView &sums = call.outs[1];
    ZRT_CHECK(expected.size() == 2 && call.ins[0].shape.size() == 2 &&
                  call.ins[1].shape.size() == 2,
              call.where() << ": lhs_sums need 2-D operands and result");
    expectShape(call, sums, Shape{expected[0]}, "lhs_sums");
    ZRT_CHECK(sums.dtype == out.dtype,
              call.where() << ": the lhs_sums' dtype is not the result's");
    g.lhsSums = 1;
  }
  ZRT_CHECK(!call.hasAttr("out_shape"),
            call.where() << ": a result with a bias or addend cannot be a view");
  int next = 2;
  if (seg[2]) {
    g.bias = next++;
    const TensorView &bias = call.ins[g.bias];
    bool columns = !expected.empty() && !bias.shape.empty() &&
                   bias.shape.size() <= expected.size() && bias.shape.back() == expected.back() &&
                   std::all_of(bias.shape.begin(), bias.shape.end() - 1,
                               [](int64_t d) { return d == 1; });
    ZRT_CHECK(columns, call.where() << ": the bias is " << shapeString(bias.shape)
                                    << ", not one value per column of the "
                                    << shapeString(expected) << " result");
    ZRT_CHECK(bias.dtype == out.dtype, call.where() << ": the bias's dtype is not the result's");
  }
  if (seg[3]) {
    g.addend = next++;
    const TensorView &addend = call.ins[g.addend];
    expectShape(call, addend, expected, "addend");
    ZRT_CHECK(addend.dtype == out.dtype,
              call.where() << ": the addend's dtype is not the result's");
  }
}

} // namespace

kernels::MatMulGeometry kernels::matMulGeometry(const KernelCall &call) {
  ZRT_CHECK(call.ins.size() >= 2 &&
                (call.outs.size() == 1 || (call.outs.size() == 2 && call.hasAttr("operand_segments"))),
            call.where() << ": takes lhs and rhs (and an optional bias and addend) and "
                            "gives one result (and optionally lhs_sums)");
  const TensorView &a = call.ins[0], &b = call.ins[1], &out = call.outs[0];
  ZRT_CHECK(a.dtype == b.dtype && a.dtype == out.dtype,
            call.where() << ": operand dtypes differ");
  MatMulGeometry g;
  StridedOperand A = stridedOperandOf(call, "lhs", a), B = stridedOperandOf(call, "rhs", b);
  ZRT_CHECK(!A.shape.empty() && !B.shape.empty(), call.where() << ": scalar operand");
  bool aVec = A.shape.size() == 1, bVec = B.shape.size() == 1;
  if (aVec) {
    A.shape.insert(A.shape.begin(), 1);
    A.strides.insert(A.strides.begin(), 0);
  }
  if (bVec) {
    B.shape.push_back(1);
    B.strides.push_back(0);
  }
  g.m = A.shape[A.shape.size() - 2];
  g.k = A.shape.back();
  g.n = B.shape.back();
  ZRT_CHECK(B.shape[B.shape.size() - 2] == g.k,
            call.where() << ": inner dimensions differ (" << shapeString(A.shape) << " x "
                         << shapeString(B.shape) << ")");
  Shape batch = broadcastShapes(
      {Shape(A.shape.begin(), A.shape.end() - 2), Shape(B.shape.begin(), B.shape.end() - 2)},
      call);
  Shape expected = batch;
  if (!aVec)
    expected.push_back(g.m);
  if (!bVec)
    expected.push_back(g.n);
  epilogueInputs(call, out, expected, g);
  StridedOperand C;
  if (call.hasAttr("out_shape")) {
    ZRT_CHECK(!aVec && !bVec, call.where() << ": a result view needs matrix operands");
    C = stridedOperandOf(call, "out", out);
    ZRT_CHECK(C.shape == expected, call.where() << ": the result view's shape "
                                                << shapeString(C.shape) << " is not "
                                                << shapeString(expected));
    ZRT_CHECK(coversOnce(C, out.numel()),
              call.where() << ": the result view does not cover its tensor exactly once");
  } else {
    expectShape(call, out, expected, "result");
    C.shape = batch;
    C.shape.push_back(g.m);
    C.shape.push_back(g.n);
    C.strides = stridesOf(C.shape); // the same places as without the 1-D extents
  }
  size_t r = C.shape.size();
  g.a.tensor = 0;
  g.b.tensor = 1;
  if (!blasLayout(g.m, g.n, C.strides[r - 2], C.strides[r - 1], g.c))
    ZRT_FAIL(call.where() << ": the result view is not a BLAS matrix layout");
  if (g.c.transpose) {
    // A column-major C: C^T = B^T A^T, row-major.
    std::swap(A, B);
    std::swap(g.a.tensor, g.b.tensor);
    A.swapLastTwo();
    B.swapLastTwo();
    C.swapLastTwo();
    std::swap(g.m, g.n);
    blasLayout(g.m, g.n, C.strides[r - 2], C.strides[r - 1], g.c);
  }
  auto matrix = [&](const StridedOperand &v, GemmOperand &o, int64_t rows, int64_t cols) {
    size_t vr = v.shape.size();
    ZRT_CHECK(blasLayout(rows, cols, v.strides[vr - 2], v.strides[vr - 1], o),
              call.where() << ": the " << (o.tensor == 0 ? "lhs" : "rhs")
                           << " view is not a BLAS matrix layout (strides "
                           << shapeString(v.strides) << ")");
  };
  matrix(A, g.a, g.m, g.k);
  matrix(B, g.b, g.k, g.n);
  forEachBroadcast<3>(batch,
                      std::array<Shape, 3>{batchStrides(A, batch), batchStrides(B, batch),
                                           batchStrides(C, batch)},
                      [&](int64_t, auto off) {
                        g.a.offsets.push_back(A.offset + off[0]);
                        g.b.offsets.push_back(B.offset + off[1]);
                        g.c.offsets.push_back(C.offset + off[2]);
                      });
  if (g.batches() > 1 && !g.a.transpose &&
      MatMulGeometry::uniformStride(g.a.offsets) == g.m * g.a.ld &&
      MatMulGeometry::uniformStride(g.b.offsets) == 0 &&
      MatMulGeometry::uniformStride(g.c.offsets) == g.m * g.c.ld) {
    g.m *= g.batches();
    g.a.offsets.resize(1);
    g.b.offsets.resize(1);
    g.c.offsets.resize(1);
  }
  return g;
}
