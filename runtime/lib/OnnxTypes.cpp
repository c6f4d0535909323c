//===- OnnxTypes.cpp - ONNX element types and the plan's dtypes ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/OnnxTypes.h"

using namespace zrt;
using onnx::TensorProto;

DType zrt::dtypeFromOnnx(int32_t t) {
  switch (t) {
  case TensorProto::FLOAT:
    return zero::zplan::F32;
  case TensorProto::DOUBLE:
    return zero::zplan::F64;
  case TensorProto::INT32:
    return zero::zplan::I32;
  case TensorProto::INT64:
    return zero::zplan::I64;
  case TensorProto::INT8:
    return zero::zplan::I8;
  case TensorProto::UINT8:
    return zero::zplan::U8;
  case TensorProto::BOOL:
    return zero::zplan::BOOL;
  case TensorProto::BFLOAT16:
    return zero::zplan::BF16;
  case TensorProto::FLOAT16:
    return zero::zplan::F16;
  default:
    return zero::zplan::DTYPE_INVALID;
  }
}

int32_t zrt::onnxFromDtype(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return TensorProto::FLOAT;
  case zero::zplan::F64:
    return TensorProto::DOUBLE;
  case zero::zplan::I32:
    return TensorProto::INT32;
  case zero::zplan::I64:
    return TensorProto::INT64;
  case zero::zplan::I8:
    return TensorProto::INT8;
  case zero::zplan::U8:
    return TensorProto::UINT8;
  case zero::zplan::BOOL:
    return TensorProto::BOOL;
  case zero::zplan::BF16:
    return TensorProto::BFLOAT16;
  case zero::zplan::F16:
    return TensorProto::FLOAT16;
  default:
    return TensorProto::UNDEFINED;
  }
}
