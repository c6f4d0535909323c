//===- ConstantFolding.cpp - Shapes and arithmetic over constants --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "ConstantFolding.h"
#include "zero/Support/ShapeRules.h"
#include "mlir/IR/BuiltinTypes.h"
#include "zrt/Error.h"
#include "zrt/ExternalData.h"
#include "zrt/Tensor.h"
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

using namespace zero::onnx_import;
using namespace zero::onnx_import::folding;
using onnx::TensorProto;

int32_t folding::widenedType(int32_t t) {
  return t == TensorProto::BFLOAT16 || t == TensorProto::FLOAT16 ? TensorProto::FLOAT : t;
}

bool folding::fitsFolding(const std::vector<int64_t> &shape, std::string &error) {
  if (checkedNumel(shape) >= 0)
    return true;
  std::string dims;
  for (int64_t d : shape)
    dims += (dims.empty() ? "" : "x") + std::to_string(d);
  error = "the result would have shape [" + dims + "]: a negative dimension, or more "
          "than the " + std::to_string(kMaxFoldedElements) +
          " elements a constant folded at compile time may have";
  return false;
}

std::vector<int64_t> folding::stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    if (__builtin_mul_overflow(st[i + 1], shape[i + 1], &st[i]))
      st[i] = INT64_MAX;
  return st;
}

void folding::pushConverted(ConstTensor &out, const ConstTensor &c, int64_t k) {
  if (out.isFloat()) {
    double v = c.floatAt(k);
    out.floats.push_back(out.dtype == TensorProto::FLOAT ? (double)(float)v : v);
    return;
  }
  int64_t v = c.isFloat() ? (int64_t)c.floats[k] : c.ints[k];
  switch (out.dtype) {
  case TensorProto::BOOL:
    v = c.isFloat() ? c.floats[k] != 0.0 : v != 0;
    break;
  case TensorProto::INT32:
    v = (int32_t)v;
    break;
  case TensorProto::INT8:
    v = (int8_t)v;
    break;
  case TensorProto::UINT8:
    v = (uint8_t)v;
    break;
  default:
    break;
  }
  out.ints.push_back(v);
}

ConstTensor folding::withShape(int32_t dtype, std::vector<int64_t> shape) {
  ConstTensor c;
  c.dtype = dtype;
  c.shape = std::move(shape);
  return c;
}

std::optional<std::vector<int64_t>>
folding::broadcast(const std::vector<const ConstTensor *> &ins) {
  llvm::SmallVector<int64_t> out;
  for (auto *c : ins) {
    auto joint = zero::broadcastShapes(out, c->shape);
    if (!joint)
      return std::nullopt;
    out = *joint;
  }
  return std::vector<int64_t>(out.begin(), out.end());
}

int64_t folding::broadcastIndex(const std::vector<int64_t> &outIdx,
                       const std::vector<int64_t> &inShape) {
  int64_t lin = 0, stride = 1;
  size_t off = outIdx.size() - inShape.size();
  for (int i = (int)inShape.size() - 1; i >= 0; --i) {
    if (inShape[i] != 1)
      lin += outIdx[off + i] * stride;
    stride *= inShape[i];
  }
  return lin;
}

void folding::forEachIndex(const std::vector<int64_t> &shape,
                  const std::function<void(const std::vector<int64_t> &)> &fn) {
  int64_t n = elementCount(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(idx);
    for (int d = (int)shape.size() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

std::optional<ConstTensor> folding::elementwise(const std::string &op,
                                       const std::vector<const ConstTensor *> &ins,
                                       std::string &error) {
  auto shape = broadcast(ins);
  if (!shape) {
    error = "operand shapes do not broadcast";
    return std::nullopt;
  }
  if (!fitsFolding(*shape, error))
    return std::nullopt;
  if (op == "Where" && ins[0]->isFloat()) {
    error = "Where's condition must be bool";
    return std::nullopt;
  }
  const ConstTensor &a = *ins[op == "Where" ? 1 : 0];
  bool boolResult = op == "Equal" || op == "Less" || op == "LessOrEqual" ||
                    op == "Greater" || op == "GreaterOrEqual" || op == "And" ||
                    op == "Or";
  int32_t dtype = boolResult ? (int32_t)TensorProto::BOOL : a.dtype;
  ConstTensor out = withShape(dtype, *shape);
  forEachIndex(*shape, [&](const std::vector<int64_t> &idx) {
    std::vector<int64_t> k;
    for (auto *c : ins)
      k.push_back(broadcastIndex(idx, c->shape));
    if (op == "Where") {
      const ConstTensor &src = ins[0]->ints[k[0]] ? *ins[1] : *ins[2];
      pushConverted(out, src, ins[0]->ints[k[0]] ? k[1] : k[2]);
      return;
    }
    if (op == "Expand") {
      pushConverted(out, a, k[0]);
      return;
    }
    const ConstTensor &b = *ins[1];
    if (boolResult) {
      // Integers compare exactly; a float operand compares as a double.
      bool exact = !a.isFloat() && !b.isFloat();
      auto cmp = [&](auto x, auto y) {
        return op == "Equal"            ? x == y
               : op == "Less"           ? x < y
               : op == "LessOrEqual"    ? x <= y
               : op == "Greater"        ? x > y
               : op == "GreaterOrEqual" ? x >= y
               : op == "And"            ? (x != 0 && y != 0)
                                        : (x != 0 || y != 0);
      };
      out.ints.push_back(exact ? cmp(a.ints[k[0]], b.ints[k[1]])
                               : cmp(a.floatAt(k[0]), b.floatAt(k[1])));
    } else if (a.isFloat()) {
      double x = a.floats[k[0]], y = b.floatAt(k[1]);
      double r = op == "Add"   ? x + y
                 : op == "Sub" ? x - y
                 : op == "Mul" ? x * y
                 : op == "Max" ? std::max(x, y)
                 : op == "Min" ? std::min(x, y)
                 : op == "Pow" ? std::pow(x, y)
                               : x / y;
      out.floats.push_back(a.dtype == TensorProto::FLOAT ? (double)(float)r : r);
    } else {
      int64_t x = a.ints[k[0]], y = b.intAt(k[1]);
      if (op == "Div" && y == 0) {
        error = "integer division by zero";
        y = 1;
      }
      out.ints.push_back(op == "Add"   ? x + y
                         : op == "Sub" ? x - y
                         : op == "Mul" ? x * y
                         : op == "Max" ? std::max(x, y)
                         : op == "Min" ? std::min(x, y)
                                       : x / y);
    }
  });
  if (!error.empty())
    return std::nullopt;
  return out;
}

bool folding::intValues(const ConstTensor &c, const char *what, std::vector<int64_t> &out,
               std::string &error) {
  if (c.isFloat() || c.shape.size() > 1) {
    error = std::string(what) + " must be a 1-D integer tensor";
    return false;
  }
  out = c.ints;
  return true;
}

const onnx::AttributeProto *folding::findAttr(const onnx::NodeProto &node,
                                     const std::string &name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}
