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
#include "zrt/Kernels.h"

#include <gtest/gtest.h>

using namespace zrt;

namespace {

TensorView view(std::vector<float> &v, std::vector<int64_t> shape) {
  return TensorView{v.data(), zero::zplan::F32, std::move(shape)};
}

KernelCall callOf(const std::string &name, std::vector<TensorView> ins,
                  std::vector<TensorView> outs,
                  const google::protobuf::Map<std::string, zero::zplan::Attr> *attrs) {
  KernelCall c;
  c.name = name;
  c.ins = std::move(ins);
  c.outs = std::move(outs);
  c.attrs = attrs;
  return c;
}

TEST(Kernels, MatMulComputesAndChecksShapes) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, c(4);
  auto bound = cpuKernels().at("matmul")(
      callOf("matmul", {view(a, {2, 3}), view(b, {3, 2})}, {view(c, {2, 2})}, nullptr));
  bound();
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
  EXPECT_THROW(cpuKernels().at("matmul")(callOf(
                   "matmul", {view(a, {2, 3}), view(b, {2, 3})}, {view(c, {2, 2})},
                   nullptr)),
               Error);
}

TEST(Kernels, BroadcastAdd) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30}, c(6);
  cpuKernels().at("add")(
      callOf("add", {view(a, {2, 3}), view(b, {3})}, {view(c, {2, 3})}, nullptr))();
  EXPECT_EQ(c, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::vector<float> bad(4);
  EXPECT_THROW(cpuKernels().at("add")(callOf(
                   "add", {view(a, {2, 3}), view(bad, {4})}, {view(c, {2, 3})}, nullptr)),
               Error);
}

TEST(Kernels, GatherIndexOutOfRangeThrows) {
  std::vector<float> table = {1, 2, 3, 4}, out(2);
  std::vector<int64_t> idx = {1, 7};
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  attrs["axis"].set_i(0);
  KernelCall call = callOf("gather", {view(table, {4}), TensorView{idx.data(),
                                      zero::zplan::I64, {2}}},
                           {view(out, {2})}, &attrs);
  auto bound = cpuKernels().at("gather")(call);
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
  EXPECT_THROW(cpuKernels().at("softmax")(
                   callOf("softmax", {view(x, {4})}, {view(y, {4})}, &attrs)),
               Error);
}

} // namespace
