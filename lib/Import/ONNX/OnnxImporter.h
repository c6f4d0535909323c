//===- OnnxImporter.h - Importer state shared by the op builders -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Internal to lib/Import/ONNX.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_LIB_IMPORT_ONNX_ONNXIMPORTER_H
#define ZERO_LIB_IMPORT_ONNX_ONNXIMPORTER_H

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Import/ONNX/ImportOnnx.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zero::onnx_import {

/// A tensor the importer knows at compile time: a Constant node, or the folded
/// result of a shape computation. Integers and bools live in `ints`, floats in
/// `floats`; `dtype` is the ONNX TensorProto data type.
struct ConstTensor {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  bool isFloat() const;
  int64_t numel() const;
  /// Element k as a double or an integer, whatever the storage.
  double floatAt(int64_t k) const { return isFloat() ? floats[k] : (double)ints[k]; }
  int64_t intAt(int64_t k) const { return isFloat() ? (int64_t)floats[k] : ints[k]; }
};

/// Constants the importer folds are capped at this many elements (shape operands
/// and masks are far smaller); a larger one is an error, never an allocation.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;

/// numel of `shape`, or -1 when a dimension is negative or the product exceeds
/// kMaxFoldedElements (no overflow on the way).
int64_t checkedNumel(const std::vector<int64_t> &shape);
/// The element count of `shape`: 0 for any shape with a zero dimension, however
/// large the others; INT64_MAX past it (the evaluator only builds shapes that
/// checkedNumel accepts).
int64_t elementCount(const std::vector<int64_t> &shape);
/// The ONNX element types a ConstTensor holds (16-bit floats read widened to
/// FLOAT: elementTypeOf).
bool isSupportedType(int32_t onnxType);

/// Reads a TensorProto's values (raw_data or typed fields; external data from
/// `modelDir`, within it). Fails for data types the importer does not handle, for
/// bad or oversized shapes and for external data when `modelDir` is null.
std::optional<ConstTensor> constFromProto(const onnx::TensorProto &t,
                                          std::string &error,
                                          const std::string *modelDir = nullptr);
onnx::TensorProto constToProto(const ConstTensor &c);

/// Evaluates `node` when every input is known; `shapeOf` gives static shapes of
/// values (for Shape). Returns nullopt when the op is not one the evaluator folds.
std::optional<ConstTensor>
evaluateConstant(const onnx::NodeProto &node,
                 const std::vector<const ConstTensor *> &inputs,
                 const std::vector<int64_t> *firstInputShape, std::string &error);

/// True for ops that the evaluator folds (and so never reach an op builder when all
/// their inputs are known).
bool isFoldableOp(const std::string &opType);

/// Converts an ONNX data type to an MLIR element type, or null.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int32_t onnxType);

/// State of one import: values by ONNX name, known constants, inferred types.
class OnnxImporter {
public:
  OnnxImporter(mlir::MLIRContext &ctx, std::string file, int64_t opset,
               const OnnxImportOptions &options)
      : ctx(&ctx), builder(&ctx), file(std::move(file)), opset(opset),
        options(options) {}

  mlir::MLIRContext *ctx;
  mlir::OpBuilder builder;
  std::string file;
  int64_t opset;
  const OnnxImportOptions &options;
  std::map<std::string, mlir::Value> values;
  std::map<std::string, ConstTensor> constants;
  std::map<std::string, onnx::TypeProto> types;
  /// The model's folder, where external data lives.
  std::string modelDir;
  /// Float initializers that are not trained: parameters the runtime loads, but
  /// read here too when an op needs one at compile time (Dropout's ratio, say).
  std::map<std::string, const onnx::TensorProto *> untrainedInitializers;
  /// Graph inputs (not initializers), and the trained initializers.
  std::set<std::string> graphInputs, trainedInitializers;
  /// The node that computes each value, for messages.
  std::map<std::string, const onnx::NodeProto *> producers;
  /// Untrained initializers that could not be read when an op needed them, and why.
  std::map<std::string, std::string> unreadable;
  /// Sequence values (SplitToSequence's result): their tensors, in order.
  std::map<std::string, std::vector<mlir::Value>> sequences;

  /// Location of a node: its name (or first output) fused with the file.
  mlir::Location locOf(const onnx::NodeProto &node);
  /// An error that names the node, its op type and the opset.
  mlir::InFlightDiagnostic error(const onnx::NodeProto &node);

  /// True if input `i` is present (ONNX marks a skipped optional input with "").
  static bool hasInput(const onnx::NodeProto &node, int i) {
    return i < node.input_size() && !node.input(i).empty();
  }
  /// Input `i` as an SSA value; known constants become compute.constant ops.
  mlir::FailureOr<mlir::Value> operand(const onnx::NodeProto &node, int i);
  /// Input `i` if it is known at compile time.
  const ConstTensor *constantInput(const onnx::NodeProto &node, int i);
  /// Input `i`, which the op needs at compile time; when it is not known, an error
  /// that names the node, the operand (position and schema name) and what to do.
  const ConstTensor *requireConstant(const onnx::NodeProto &node, int i);
  /// Input `i` as a compile-time scalar, `dflt` when it is absent; an error
  /// naming `what` when it is not known or not one element.
  mlir::FailureOr<double> scalarInput(const onnx::NodeProto &node, int i, double dflt,
                                      const char *what);
  /// The static type inferred for value `name`.
  mlir::FailureOr<mlir::RankedTensorType> typeOf(const onnx::NodeProto &node,
                                                 const std::string &name);
  mlir::FailureOr<mlir::RankedTensorType> outputType(const onnx::NodeProto &node,
                                                     int i) {
    return typeOf(node, node.output(i));
  }
  /// Gives ONNX value `name` its SSA value.
  void define(const std::string &name, mlir::Value v) { values[name] = v; }
  /// Materializes a constant as a compute.constant op.
  mlir::FailureOr<mlir::Value> materialize(const ConstTensor &c, mlir::Location loc);

  /// Integer attribute `name` of `node`, or `dflt`.
  static int64_t intAttr(const onnx::NodeProto &node, const std::string &name,
                         int64_t dflt);
  static float floatAttr(const onnx::NodeProto &node, const std::string &name,
                         float dflt);
  static std::string stringAttr(const onnx::NodeProto &node, const std::string &name,
                                const std::string &dflt);
  static std::optional<std::vector<int64_t>> intsAttr(const onnx::NodeProto &node,
                                                      const std::string &name);
};

/// Which float initializers train, and where that came from (TrainableSet.cpp).
struct TrainableSet {
  static constexpr const char *kListed = "the model's zero.trainable metadata";
  static constexpr const char *kExporter = "torch.export's graph signature";
  static constexpr const char *kEveryFloat = "every float initializer";
  std::set<std::string> names;
  /// One of the three above.
  const char *source = kEveryFloat;
  /// Initializers the exporter folded from one parameter (a transposed weight, a
  /// slice of a table): the parameter's PyTorch name.
  std::map<std::string, std::string> derivedFrom;
};

/// The trainable set, as PyTorch defines it where the exporter recorded it:
/// `zero.trainable` metadata wins; else torch.export's graph signature (its
/// PARAMETER inputs, and initializers folded from exactly one of them); else every
/// float initializer. A parameter the signature lists that the graph lost (merged
/// with an equal initializer, or dropped as an all-zero bias, by the exporter's
/// optimizer) is an error naming it.
mlir::FailureOr<TrainableSet> findTrainableSet(mlir::MLIRContext &ctx,
                                               llvm::StringRef path,
                                               const onnx::ModelProto &model);

/// The opsets of the default domain the importer reads: 13 up to the newest the
/// linked ONNX library defines (ImportOnnx.cpp).
constexpr int64_t kMinOpset = 13;

/// The schema versions (since_version) of `opType` the importer handles, or null
/// for an op it does not handle at all (SupportedOps.cpp).
const std::vector<int> *supportedVersions(llvm::StringRef opType);

/// The checks that come before ONNX shape inference, which trusts its input: SSA
/// and topological order, supported ops only, the ONNX checker, axes and shapes in
/// bounds. Emits an error naming the value, node or attribute at fault. `model` is
/// only borrowed: it is as it was when this returns.
mlir::LogicalResult checkModelStructure(mlir::MLIRContext &ctx, llvm::StringRef path,
                                        onnx::ModelProto &model, int64_t opset);

/// Softmax cross-entropy of `scores` against the node's labels (input 1), weights
/// (input 2) and its reduction and ignore_index (OpBuilders.cpp): the loss as
/// output 0, the log-probabilities as output 1 where the node has one.
mlir::LogicalResult buildCrossEntropyOf(OnnxImporter &imp, const onnx::NodeProto &node,
                                        mlir::Value scores);

/// Ops imported as compositions of compute ops (CompositeOps.cpp).
mlir::LogicalResult buildIsNaN(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildNot(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildAndOr(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildPad(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildCastLike(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildGelu(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildRmsNorm(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildAttention(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildNllLoss(OnnxImporter &imp, const onnx::NodeProto &node);
mlir::LogicalResult buildSplitToSequence(OnnxImporter &imp,
                                         const onnx::NodeProto &node);
mlir::LogicalResult buildSequenceAt(OnnxImporter &imp, const onnx::NodeProto &node);

/// Builds the compute ops for one node (a node the evaluator did not fold).
/// Emits a diagnostic naming the node when its op or an attribute is unsupported.
mlir::LogicalResult buildNode(OnnxImporter &imp, const onnx::NodeProto &node);
/// Whether `op` is built as an op (not folded from constants only).
bool hasRunTimeKernel(const std::string &op);

} // namespace zero::onnx_import

#endif // ZERO_LIB_IMPORT_ONNX_ONNXIMPORTER_H
