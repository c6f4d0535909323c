//===- ConstantFolding.h - What the evaluator's folders share ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Private to the importer: shapes, broadcasting and elementwise arithmetic over
// ConstTensors (ConstantFolding.cpp), and what a folder of ConstantEvaluator.cpp
// reads.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_IMPORT_ONNX_CONSTANTFOLDING_H
#define ZERO_IMPORT_ONNX_CONSTANTFOLDING_H

#include "OnnxImporter.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zero::onnx_import::folding {

/// 16-bit floats are computed as float32 (elementTypeOf): a constant of either
/// holds its exact values as a FLOAT one.
int32_t widenedType(int32_t t);

/// True when a folded tensor of `shape` stays within kMaxFoldedElements; else an
/// error that says so (and no allocation is made).
bool fitsFolding(const std::vector<int64_t> &shape, std::string &error);

/// Row-major strides. An empty tensor may have huge other dimensions: a stride that
/// would overflow saturates (nothing is ever read through it).
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// Value k of `c` converted to ONNX type `to`, stored into `out`.
void pushConverted(ConstTensor &out, const ConstTensor &c, int64_t k);

/// An empty tensor of `dtype` and `shape`, for a folder to fill.
ConstTensor withShape(int32_t dtype, std::vector<int64_t> shape);

/// Numpy broadcast of all inputs' shapes.
std::optional<std::vector<int64_t>>
broadcast(const std::vector<const ConstTensor *> &ins);

/// Linear index into `in` for the output multi-index of a broadcast.
int64_t broadcastIndex(const std::vector<int64_t> &outIdx,
                       const std::vector<int64_t> &inShape);

/// Calls `fn` with every multi-index of `shape`, in row-major order.
void forEachIndex(const std::vector<int64_t> &shape,
                  const std::function<void(const std::vector<int64_t> &)> &fn);

/// The elementwise ONNX op `op` (Add, Sub, Mul, Div, comparisons, And, Or, Max,
/// Min, Where) over numpy-broadcast inputs; nothing, with `error`, when it fails.
std::optional<ConstTensor> elementwise(const std::string &op,
                                       const std::vector<const ConstTensor *> &ins,
                                       std::string &error);

/// An integer tensor's values, or false (with `error` naming `what`) for a float one.
bool intValues(const ConstTensor &c, const char *what, std::vector<int64_t> &out,
               std::string &error);

/// Attribute `name` of `node`, or null.
const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     const std::string &name);

/// What a folder reads: the node, its inputs' values (null where an input is
/// not a known constant) and the first input's static shape (Shape folds without
/// the values). A folder returns nothing when it cannot fold (an input unknown);
/// with `error` set when the node itself is invalid.
struct FoldInput {
  const onnx::NodeProto &node;
  const std::vector<const ConstTensor *> &in;
  const std::vector<int64_t> *firstInputShape;
  std::string &error;

  int64_t intAttr(const char *name, int64_t dflt) const {
    const auto *a = findAttr(node, name);
    return a ? a->i() : dflt;
  }
  /// Whether the first n inputs are known constants.
  bool has(size_t n) const {
    if (in.size() < n)
      return false;
    for (size_t i = 0; i < n; ++i)
      if (!in[i])
        return false;
    return true;
  }
};

using Folder = std::optional<ConstTensor> (*)(const FoldInput &);

} // namespace zero::onnx_import::folding

#endif // ZERO_IMPORT_ONNX_CONSTANTFOLDING_H
