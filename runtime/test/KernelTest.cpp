//===- KernelTest.cpp - Kernel binding checks and run-time errors ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Numerics are checked by the ONNX backend node tests (test/onnx-node); this file
// checks what those cannot reach: a bad plan call is refused at bind time, and a
// data-dependent error is an exception, not an out-of-bounds access.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/Kernels.h"

#include "KernelCalls.h"

#include <gtest/gtest.h>

using namespace zrt;

namespace {

using zrt::test::callOf;

TensorView view(std::vector<float> &v, std::vector<int64_t> shape) {
  return zrt::test::view(v, zero::zplan::F32, std::move(shape));
}

// The compiler may emit any kind of the schema; the CPU runs each (and the CUDA
// table checks itself against the CPU's when it is built).
TEST(Kernels, EveryKindHasACpuKernel) {
  for (int k = Kernel::Kind_MIN; k <= Kernel::Kind_MAX; ++k)
    if (Kernel::Kind_IsValid(k) && k != Kernel::KIND_UNSPECIFIED)
      EXPECT_TRUE(cpuKernels().count(KernelKind(k))) << zero::zplan::kernelKindName(k);
  EXPECT_FALSE(cpuKernels().count(Kernel::KIND_UNSPECIFIED));
  EXPECT_EQ(zero::zplan::kernelKindName(Kernel::ALL_GATHER_START), "all_gather_start");
  EXPECT_EQ(zero::zplan::parseKernelKind("layer_norm_grad"), Kernel::LAYER_NORM_GRAD);
  EXPECT_FALSE(zero::zplan::parseKernelKind("MATMUL"));
  EXPECT_FALSE(zero::zplan::parseKernelKind("kind_unspecified"));
  EXPECT_FALSE(zero::zplan::parseKernelKind("gelu"));
}

TEST(Kernels, MatMulComputesAndChecksShapes) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, c(4);
  auto bound = cpuKernels().at(Kernel::MATMUL)(
      callOf(Kernel::MATMUL, {view(a, {2, 3}), view(b, {3, 2})}, {view(c, {2, 2})}, nullptr));
  bound();
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(a, {2, 3}), view(b, {2, 3})}, {view(c, {2, 2})},
                   nullptr)),
               Error);
}

TEST(Kernels, BroadcastAdd) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30}, c(6);
  cpuKernels().at(Kernel::ADD)(
      callOf(Kernel::ADD, {view(a, {2, 3}), view(b, {3})}, {view(c, {2, 3})}, nullptr))();
  EXPECT_EQ(c, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::vector<float> bad(4);
  EXPECT_THROW(cpuKernels().at(Kernel::ADD)(callOf(
                   Kernel::ADD, {view(a, {2, 3}), view(bad, {4})}, {view(c, {2, 3})}, nullptr)),
               Error);
}

TEST(Kernels, GatherIndexOutOfRangeThrows) {
  std::vector<float> table = {1, 2, 3, 4}, out(2);
  std::vector<int64_t> idx = {1, 7};
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  attrs["axis"].set_i(0);
  KernelCall call = callOf(Kernel::GATHER, {view(table, {4}), TensorView{idx.data(),
                                      zero::zplan::I64, {2}}},
                           {view(out, {2})}, &attrs);
  auto bound = cpuKernels().at(Kernel::GATHER)(call);
  try {
    bound();
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("index 7 out of range"), std::string::npos);
  }
}

TEST(Kernels, MissingAttributeIsAnError) {
  std::vector<float> x(4), y(4);
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX)(
                   callOf(Kernel::SOFTMAX, {view(x, {4})}, {view(y, {4})}, &attrs)),
               Error);
}

// softmax_grad, y (g - sum(g y)) along the axis, is no ONNX node: checked here over a
// contiguous axis (rows) and a strided one, in f32 and bf16, against the formula in
// double (the inputs are dyadic, so every product and sum is exact and both sides
// round the same double once).
TEST(Kernels, SoftmaxGradRowsAndStridedAxis) {
  const std::vector<double> y = {0.25, 0.5,   0.25, 0.125, 0.375, 0.5,
                                 0.75, 0.125, 0.125, 0.5,  0.25,  0.25};
  const std::vector<double> g = {1, -2, 0.5, 3, 0, -1, 0.25, 2, -0.5, 1.5, -3, 4};
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis, outer, dim, inner;
  };
  for (const Case &c : {Case{{4, 3}, 1, 4, 3, 1}, Case{{2, 3, 2}, 1, 2, 3, 2}}) {
    std::vector<double> want(y.size());
    for (int64_t o = 0; o < c.outer; ++o)
      for (int64_t i = 0; i < c.inner; ++i) {
        double dot = 0;
        for (int64_t d = 0; d < c.dim; ++d)
          dot += y[(o * c.dim + d) * c.inner + i] * g[(o * c.dim + d) * c.inner + i];
        for (int64_t d = 0; d < c.dim; ++d) {
          int64_t at = (o * c.dim + d) * c.inner + i;
          want[at] = y[at] * (g[at] - dot);
        }
      }
    google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
    attrs["axis"].set_i(c.axis);
    auto run = [&](auto tag, DType t) {
      using T = decltype(tag);
      std::vector<T> ty(y.begin(), y.end()), tg(g.begin(), g.end()), dx(y.size());
      cpuKernels().at(Kernel::SOFTMAX_GRAD)(callOf(
          Kernel::SOFTMAX_GRAD,
          {zrt::test::view(ty, t, c.shape), zrt::test::view(tg, t, c.shape)},
          {zrt::test::view(dx, t, c.shape)}, &attrs))();
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_EQ((float)dx[k], (float)T(want[k])) << "element " << k << " of dim " << c.dim;
    };
    run(float(), zero::zplan::F32);
    run(bf16(), zero::zplan::BF16);
  }
  std::vector<float> a(6), b(6), out(6);
  google::protobuf::Map<std::string, zero::zplan::Attr> far;
  far["axis"].set_i(2);
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX_GRAD)(callOf(
                   Kernel::SOFTMAX_GRAD, {view(a, {2, 3}), view(b, {2, 3})},
                   {view(out, {2, 3})}, &far)),
               Error);
}

google::protobuf::Map<std::string, zero::zplan::Attr> reduceAttrs(std::vector<int64_t> axes) {
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  for (int64_t a : axes)
    attrs["axes"].mutable_ints()->add_values(a);
  attrs["keepdims"].set_i(0);
  return attrs;
}

// The vectorized reductions: over leading dimensions, over trailing ones, over
// everything, and over empty extents (no division by a zero row length).
TEST(Kernels, ReduceSumFastPathsAndEmptyExtents) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, cols(3), rows(2), all(1);
  auto leading = reduceAttrs({0}), trailing = reduceAttrs({1}), both = reduceAttrs({0, 1});
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(x, {2, 3})}, {view(cols, {3})}, &leading))();
  EXPECT_EQ(cols, (std::vector<float>{5, 7, 9}));
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(x, {2, 3})}, {view(rows, {2})}, &trailing))();
  EXPECT_EQ(rows, (std::vector<float>{6, 15}));
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(x, {2, 3})}, {view(all, {})}, &both))();
  EXPECT_EQ(all, (std::vector<float>{21}));
  std::vector<float> empty, four(4, -1.0f);
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(empty, {4, 0})}, {view(four, {4})}, &trailing))();
  EXPECT_EQ(four, (std::vector<float>(4, 0.0f)));
  four.assign(4, -1.0f);
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(empty, {0, 4})}, {view(four, {4})}, &leading))();
  EXPECT_EQ(four, (std::vector<float>(4, 0.0f)));
}

} // namespace
