//===- TorchNames.h - PyTorch's names for a model's initializers -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The ONNX exporter built on torch.export records which inputs were parameters
// (metadata `pkg.torch.export.ExportedProgram.graph_signature`: lines "p_x:
// PARAMETER target='x'"), folds parameter-only subgraphs into new initializers
// (their value metadata `pkg.onnxscript.optimizer.folded_from` lists what they came
// from) and merges initializers of equal value (tied weights among them). Shared
// by the compiler (the trainable set) and zero-run (safetensors by name).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TORCHNAMES_H
#define ZRT_TORCHNAMES_H

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zrt {

/// The PARAMETER targets of the model's graph signature, in order; nullopt when
/// the model has none, or (with `error` set) when a PARAMETER line is malformed.
std::optional<std::vector<std::string>> signatureParameters(const onnx::ModelProto &model,
                                                            std::string &error);

/// The same as (placeholder, target) pairs: "p_x: PARAMETER target='x'" is
/// ("p_x", "x"). The placeholder is how the exporter's `pkg.torch.onnx.fx_node`
/// node metadata names the parameter an FX node read.
std::optional<std::vector<std::pair<std::string, std::string>>>
signaturePlaceholders(const onnx::ModelProto &model, std::string &error);

/// The values initializer `t` was folded from (its folded_from metadata), or none.
std::vector<std::string> foldedFrom(const onnx::ModelProto &model,
                                    const onnx::TensorProto &t);

/// For parameter `param` ("module.weight") missing from the graph: the initializer
/// among `candidates` that nodes of its module read although it belongs to another
/// module (their `pkg.torch.onnx.name_scopes` metadata names the modules), or "".
std::string readInstead(const onnx::ModelProto &model, const std::string &param,
                        const std::set<std::string> &candidates);

/// One PyTorch name of an initializer: the parameter, and whether the initializer
/// holds it transposed (a Linear's weight the exporter folded).
struct TorchName {
  std::string name;
  bool transposed = false;
};

/// PyTorch's names for the float initializers of `model`: each its own name; for a
/// model with a graph signature, also the parameters it stands for (one folded
/// from a 2-D parameter holds it transposed; tied parameters its modules read).
/// An initializer folded from a parameter in another way (a slice of an
/// embedding) is in `unmapped`, with why.
struct TorchNameMap {
  std::map<std::string, std::vector<TorchName>> names;
  std::map<std::string, std::string> unmapped;
  /// Whether the model has a graph signature, and the initializers that hold one
  /// of its parameters (themselves, folded, or tied).
  bool hasSignature = false;
  std::set<std::string> parameters;
  /// Initializers whose own name is a parameter's (not a folded `val_N`).
  std::set<std::string> ownNameIsTorch;
};
TorchNameMap torchNames(const onnx::ModelProto &model);

} // namespace zrt

#endif // ZRT_TORCHNAMES_H
