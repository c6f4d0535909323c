//===- ImportOnnx.h - ONNX model to the compute dialect ---------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_IMPORT_ONNX_IMPORTONNX_H
#define ZERO_IMPORT_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace zero {

struct OnnxImportOptions {
  /// Static shapes for graph inputs with symbolic dimensions (`--input-shape`).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs to treat as compile-time constants, each read from a TensorProto
  /// file (`--constant-input`): for inputs that set shapes, such as Reshape's shape
  /// or Slice's starts. The other inputs keep their original positions.
  std::map<std::string, std::string> constantInputs;
  /// The size of a symbolic first dimension of graph inputs (the micro-batch a
  /// DeepSpeed config asks for); fixed dimensions are left as they are.
  std::optional<int64_t> batch;
  /// ONNX's Attention as the fused compute.attention (false: built from its
  /// parts, a matmul, a softmax and a matmul, for comparisons:
  /// --no-attention-fusion).
  bool fuseAttention = true;
};

/// Imports the ONNX model at `path` (binary `.onnx`, or ONNX's textual syntax for
/// `.onnxtxt`) as a module holding `func.func @main`: initializers first (as
/// `compute.param` arguments), then graph inputs. Only initializers' shapes and
/// types are read, never their bytes (save anonymous ones of the TorchScript
/// exporter's folding, matched against named weights: zrt/FoldedTransposes.h).
/// Returns null after emitting a diagnostic.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &context,
                                                  llvm::StringRef path,
                                                  const OnnxImportOptions &options);

/// The same for a model already in memory (consumed); `path` names it in messages
/// and its folder is where external data is read from.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &context,
                                                  onnx::ModelProto &&model,
                                                  llvm::StringRef path,
                                                  const OnnxImportOptions &options);

/// The ONNX ops (default domain) the importer reads, each with the schema
/// versions (since_version) it handles; `zero-opt --list-onnx-ops` prints them.
std::map<std::string, std::vector<int>> supportedOnnxOps();

} // namespace zero

#endif // ZERO_IMPORT_ONNX_IMPORTONNX_H
