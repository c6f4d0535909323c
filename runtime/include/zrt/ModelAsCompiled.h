//===- ModelAsCompiled.h - An ONNX model as the compiler reads it -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// zero-run reads the model whose weights a plan trains as zero-opt read it when
// it compiled the plan: the exporters' transposed copies folded back
// (FoldedTransposes.h), merged parameters split (MergedParameters.h), parameters
// exported as graph inputs made initializers (ParameterInputs.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_MODELASCOMPILED_H
#define ZRT_MODELASCOMPILED_H

#include <onnx/onnx_pb.h>

#include <string>

namespace zrt {

/// An ONNX model whose weights a plan trains, read as the compiler reads it: the
/// TorchScript exporter's transposed copies of named weights become Transpose
/// nodes (FoldedTransposes.h), so that each weight is held once, trained and
/// written back as one.
onnx::ModelProto readModelAsCompiled(const std::string &path);

} // namespace zrt

#endif // ZRT_MODELASCOMPILED_H
