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

/// Writes `model` to `path` on rank 0 with every initializer that is a plan
/// parameter replaced by its current value (stored inline), gathered from the
/// ranks' shards where it is sharded; initializers the model keeps in external
/// data (read from `modelDir`, the model's folder) are written inline too. Every
/// rank must call it.
void saveWeights(const onnx::ModelProto &model, const std::string &modelDir,
                 Executor &exec, const std::string &path);

} // namespace zrt

#endif // ZRT_SAVEWEIGHTS_H
