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

/// The metadata_props of a graph, node, tensor or value (ONNX IR version 10).
/// Debian's ONNX 1.12, which the demo's light build links (ZERO_DEBIAN_ONNX), has
/// none; that build reads models of IR version 8 at most (readOnnxModel, the
/// importer's checker), which cannot hold them.
#ifdef ZERO_DEBIAN_ONNX
template <typename M>
const google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> &metadataOf(const M &) {
  static const google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> none;
  return none;
}
#else
template <typename M> const auto &metadataOf(const M &m) { return m.metadata_props(); }
#endif

} // namespace zrt

#endif // ZRT_ONNXTYPES_H
