//===- SupportedOps.cpp - Which ONNX ops, at which versions ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// An opset selects, for each op, the newest schema whose since_version is at most
// the opset. The importer handles an op only at the schema versions listed here:
// each was read against its builder (or folder). Between opset 13 and 28 most
// version bumps only add element types (bfloat16, float8, int4), which the
// importer's element-type check refuses on its own; the ones that change a
// signature are handled where the builder reads them: Reduce* axes as an input
// (18), Split's num_outputs (18), Pad's axes input (18) and wrap mode (19), Shape's
// start and end (15), Gelu (20), RMSNormalization and Attention (23). A schema
// version not listed is refused by name (CheckModel.cpp), never guessed at.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"
#include "zero/Import/ONNX/ImportOnnx.h"

#include "llvm/ADT/StringMap.h"

using namespace zero::onnx_import;

namespace {

#define ZERO_ONNX_OPSETS(...) __VA_ARGS__

const llvm::StringMap<std::vector<int>> &supportedTable() {
  static const llvm::StringMap<std::vector<int>> table = [] {
    llvm::StringMap<std::vector<int>> t = {
      // Elementwise arithmetic and math (the unary ops: their records, below).
      {"Add", {13, 14}},
      {"Sub", {13, 14}},
      {"Mul", {13, 14}},
      {"Div", {13, 14}},
      {"Pow", {13, 15}},
      {"Gelu", {20}},
      // Comparisons and logic (bool results).
      {"Equal", {13, 19}},
      {"IsNaN", {13, 20}},
      {"Not", {1}},
      {"And", {7}},
      {"Or", {7}},
      {"Where", {9, 16}},
      // Linear algebra, normalization, attention, losses.
      {"MatMul", {13}},
      {"Gemm", {13}},
      {"Softmax", {13}},
      {"LogSoftmax", {13}},
      {"LayerNormalization", {17}},
      {"RMSNormalization", {23}},
      {"Attention", {23, 24, 25}},
      {"SoftmaxCrossEntropyLoss", {13}},
      {"NegativeLogLikelihoodLoss", {13, 22}},
      {"ReduceMean", {13, 18}},
      {"ReduceSum", {13}},
      // Data movement and shapes.
      {"Gather", {13}},
      {"Reshape", {13, 14, 19, 21, 23, 24, 25}},
      {"Squeeze", {13, 21, 23, 24, 25}},
      {"Unsqueeze", {13, 21, 23, 24, 25}},
      {"Flatten", {13, 21, 23, 24, 25}},
      {"Transpose", {13, 21, 23, 24, 25}},
      {"Slice", {13}},
      {"Split", {13, 18}},
      {"SplitToSequence", {11, 24}},
      {"SequenceAt", {11}},
      {"Concat", {13}},
      {"Pad", {13, 18, 19, 21, 23, 24, 25}},
      {"Cast", {13, 19, 21, 23, 24, 25, 28}},
      {"CastLike", {15, 19, 21, 23, 24, 25}},
      {"Expand", {13}},
      {"Trilu", {14}},
      {"Identity", {13, 14, 16, 19, 21, 23, 24, 25}},
      {"Dropout", {13, 22}},
      // Folded at compile time only (masks and shapes are computed from constants).
      {"Constant", {13, 19, 21, 23, 24, 25}},
      {"ConstantOfShape", {9, 20, 21, 23, 24, 25}},
      {"Shape", {13, 15, 19, 21, 23, 24, 25}},
      {"Range", {11, 27}},
      {"CumSum", {11, 14}},
      {"Less", {13}},
      {"LessOrEqual", {12, 16}},
      {"Greater", {13}},
      {"GreaterOrEqual", {12, 16}},
      {"Max", {13}},
      {"Min", {13}},
      {"Sin", {7, 22}},
      {"Cos", {7, 22}},
    };
    // The unary ops ONNX has, at the versions their records name.
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, COST, FUSION, ONNX, OPSETS, ...)            \
  if (*ONNX)                                                                            \
    t[ONNX] = {ZERO_ONNX_OPSETS OPSETS};
#include "zplan/UnaryOps.def"
    return t;
  }();
  return table;
}

} // namespace

const std::vector<int> *zero::onnx_import::supportedVersions(llvm::StringRef opType) {
  auto it = supportedTable().find(opType);
  return it == supportedTable().end() ? nullptr : &it->second;
}

std::map<std::string, std::vector<int>> zero::supportedOnnxOps() {
  std::map<std::string, std::vector<int>> ops;
  for (const auto &entry : supportedTable())
    ops[entry.getKey().str()] = entry.getValue();
  return ops;
}
