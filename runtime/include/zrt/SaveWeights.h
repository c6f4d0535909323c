//===- SaveWeights.h - Write trained parameters back as ONNX ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_SAVEWEIGHTS_H
#define ZRT_SAVEWEIGHTS_H

#include "zrt/Executor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace zrt {

/// Writes `model` to `path` with every initializer that is a plan parameter
/// replaced by its current value in `exec` (stored inline).
void saveWeights(const onnx::ModelProto &model, const Executor &exec,
                 const std::string &path);

} // namespace zrt

#endif // ZRT_SAVEWEIGHTS_H
