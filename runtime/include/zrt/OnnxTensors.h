//===- OnnxTensors.h - ONNX TensorProto in and out of the runtime -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_ONNXTENSORS_H
#define ZRT_ONNXTENSORS_H

#include "zrt/OnnxTypes.h"
#include "zrt/Tensor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace zrt {

/// Reads an ONNX model file (no size limit below 2 GiB per message).
onnx::ModelProto readOnnxModel(const std::string &path);
/// Reads one TensorProto file (the backend-test `input_K.pb` layout).
onnx::TensorProto readTensorFile(const std::string &path);

/// Copies tensor `t` into `dst`, which has the dtype and shape the plan expects;
/// throws naming `what` if they differ. External data is read from `baseDir`
/// and may not leave it (readExternalData).
void copyTensorInto(const onnx::TensorProto &t, const TensorView &dst,
                    const std::string &what, const std::string &baseDir = "");
/// Copies elements [first, first + count) of tensor `t`, flattened, to `dst`;
/// `whole` (its data unused) is the dtype and shape the plan expects of all of
/// `t`. External data is read for that range only: a rank loading its slice of a
/// sharded parameter never holds the whole tensor.
void copyTensorRangeInto(const onnx::TensorProto &t, const TensorView &whole,
                         int64_t first, int64_t count, void *dst, const std::string &what,
                         const std::string &baseDir = "");

/// A TensorProto holding a copy of `v`.
onnx::TensorProto tensorFromView(const TensorView &v, const std::string &name);

} // namespace zrt

#endif // ZRT_ONNXTENSORS_H
