//===- OnnxTypes.h - ONNX element types and the plan's dtypes ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The one mapping between ONNX's TensorProto data types and the plan's dtypes,
// shared by the file formats (ZeroFormats), the tensor reader and the compiler's
// importer.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_ONNXTYPES_H
#define ZRT_ONNXTYPES_H

#include "zrt/Tensor.h"

#include <onnx/onnx_pb.h>

#include <cstdint>

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

} // namespace zrt

#endif // ZRT_ONNXTYPES_H
