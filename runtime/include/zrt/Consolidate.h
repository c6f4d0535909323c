//===- Consolidate.h - One model file from a sharded checkpoint -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// `zero-run --consolidate DIR -o OUT`: the checkpoint's parameters, whole, in one
// file. OUT.safetensors is Hugging Face's layout (an 8-byte little-endian header
// length, a JSON header of dtype, shape and data_offsets per tensor plus
// __metadata__, then the data), written tensor by tensor: memory stays near the
// largest tensor, never the model. OUT.onnx is the model given with --init with
// its initializers replaced (ONNX is one protobuf message, so that one is built in
// memory).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CONSOLIDATE_H
#define ZRT_CONSOLIDATE_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace zrt {

struct ConsolidateResult {
  int64_t tensors = 0, bytes = 0, step = 0;
};

/// Writes the parameters of checkpoint `path` (optimizer state too with
/// `withState`) to `out` (.safetensors), whole or not at all. With `model` (the
/// exported ONNX model), parameters go under their PyTorch names
/// (zrt/TorchNames.h), as load_state_dict takes them; without, under the
/// initializers' names. Throws zrt::Error.
ConsolidateResult consolidateToSafetensors(const std::string &path, const std::string &out,
                                           bool withState,
                                           const onnx::ModelProto *model = nullptr);

/// Writes `model` (an ONNX file) with its initializers replaced by the
/// checkpoint's parameters to `out` (.onnx). Throws zrt::Error.
ConsolidateResult consolidateToOnnx(const std::string &path, const std::string &model,
                                    const std::string &out);

} // namespace zrt

#endif // ZRT_CONSOLIDATE_H
