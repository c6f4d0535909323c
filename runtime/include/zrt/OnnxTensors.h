//===- OnnxTensors.h - ONNX TensorProto in and out of the runtime -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_ONNXTENSORS_H
#define ZRT_ONNXTENSORS_H

#include "zrt/Tensor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace zrt {

/// The plan dtype of an ONNX data type, or DTYPE_INVALID.
DType dtypeFromOnnx(int32_t onnxType);
int32_t onnxFromDtype(DType t);
/// FLOAT, DOUBLE, BFLOAT16 or FLOAT16: a type parameters may have. (Inline: the
/// compiler's importer shares it without linking the runtime.)
inline bool isFloatOnnxType(int32_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE ||
         t == onnx::TensorProto::BFLOAT16 || t == onnx::TensorProto::FLOAT16;
}

/// Reads an ONNX model file (no size limit below 2 GiB per message).
onnx::ModelProto readOnnxModel(const std::string &path);
/// An ONNX model whose weights a plan trains, read as the compiler reads it: the
/// TorchScript exporter's transposed copies of named weights become Transpose
/// nodes (FoldedTransposes.h), so that each weight is held once, trained and
/// written back as one.
onnx::ModelProto readModelAsCompiled(const std::string &path);
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
