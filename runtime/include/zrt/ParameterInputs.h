//===- ParameterInputs.h - Parameters exported as graph inputs -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A model larger than the host's memory is exported without its weights: built
// with its parameters on the meta device, exported with optimize=False, its
// parameters turned into graph inputs (zero_export.export_without_weights). The
// graph signature still names them. Such an input becomes an initializer with
// its type and shape and no values: the compiler trains it like any parameter,
// and zero-run fills it from --init CHECKPOINT (or --random-init); reading its
// value from the model says the model has none.
//
// The compiler reads a model so, and so does zero-run
// (zrt/ModelAsCompiled.h's readModelAsCompiled).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_PARAMETERINPUTS_H
#define ZRT_PARAMETERINPUTS_H

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace zrt {

/// The key of the (empty) external_data entry that marks such an initializer.
inline constexpr const char *kNoValuesKey = "zero.no_values";

/// Turns each graph input that the graph signature names as a PARAMETER (a float
/// tensor of static shape, not an initializer) into an initializer without
/// values. Returns their names.
std::vector<std::string> parametersFromInputs(onnx::ModelProto &model);

/// Whether `t` is such an initializer.
bool hasNoValues(const onnx::TensorProto &t);

} // namespace zrt

#endif // ZRT_PARAMETERINPUTS_H
