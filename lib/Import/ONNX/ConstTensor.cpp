//===- ConstTensor.cpp - Constant tensors of the importer ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The values the importer knows at import time (OnnxImporter.h's ConstTensor):
// read from and written to TensorProtos, and their MLIR element types. The
// evaluator that folds nodes over them is ConstantEvaluator.cpp.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include "zrt/Error.h"
#include "zrt/ExternalData.h"
#include "zrt/Tensor.h"

#include <cstring>

using namespace zero::onnx_import;
using onnx::TensorProto;

namespace {

bool isFloatType(int32_t t) {
  return t == TensorProto::FLOAT || t == TensorProto::DOUBLE;
}

} // namespace

int64_t zero::onnx_import::elementCount(const std::vector<int64_t> &s) {
  for (int64_t d : s)
    if (d == 0)
      return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

bool zero::onnx_import::isSupportedType(int32_t t) {
  switch (t) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::INT32:
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
  case TensorProto::BFLOAT16: // read widened to FLOAT (elementTypeOf)
  case TensorProto::FLOAT16:
    return true;
  default:
    return false;
  }
}

bool ConstTensor::isFloat() const { return isFloatType(dtype); }
int64_t ConstTensor::numel() const { return elementCount(shape); }

int64_t zero::onnx_import::checkedNumel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxFoldedElements)
      return d == 0 ? 0 : -1;
  }
  return n;
}

std::optional<ConstTensor>
zero::onnx_import::constFromProto(const TensorProto &t, std::string &error,
                                  const std::string *modelDir) {
  std::string what = t.name().empty() ? "a constant tensor" : "tensor '" + t.name() + "'";
  if (!isSupportedType(t.data_type())) {
    error = what + " has unsupported data type " +
            TensorProto::DataType_Name((TensorProto::DataType)t.data_type());
    return std::nullopt;
  }
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  if (checkedNumel(dims) < 0) {
    std::string shape;
    for (int64_t d : dims)
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    error = what + " of shape [" + shape + "] is too large to fold at compile time (" +
            std::to_string(kMaxFoldedElements) + " elements at most) or has a negative "
            "dimension";
    return std::nullopt;
  }
  if (t.data_location() == TensorProto::EXTERNAL) {
    if (!modelDir) {
      error = what + " has external data";
      return std::nullopt;
    }
    TensorProto inline_ = t;
    try {
      inline_.set_raw_data(zrt::readExternalData(t, *modelDir, what));
    } catch (const zrt::Error &e) {
      error = e.what();
      return std::nullopt;
    }
    inline_.clear_external_data();
    inline_.set_data_location(TensorProto::DEFAULT);
    return constFromProto(inline_, error);
  }
  ConstTensor c;
  c.dtype = t.data_type();
  c.shape.assign(t.dims().begin(), t.dims().end());
  int64_t n = c.numel();
  const std::string &raw = t.raw_data();
  bool hasRaw = t.has_raw_data();
  auto rawAt = [&](int64_t k, size_t size, void *dst) {
    std::memcpy(dst, raw.data() + k * size, size);
  };
  bool half = c.dtype == TensorProto::BFLOAT16 || c.dtype == TensorProto::FLOAT16;
  size_t esize = c.dtype == TensorProto::DOUBLE || c.dtype == TensorProto::INT64 ? 8
                 : c.dtype == TensorProto::FLOAT || c.dtype == TensorProto::INT32 ? 4
                 : half                                                           ? 2
                                                                                  : 1;
  if (hasRaw && (int64_t)raw.size() != n * (int64_t)esize) {
    error = what + " raw_data has " + std::to_string(raw.size()) +
            " bytes, expected " + std::to_string(n * esize);
    return std::nullopt;
  }
  int64_t fieldSize = c.dtype == TensorProto::FLOAT    ? t.float_data_size()
                      : c.dtype == TensorProto::DOUBLE ? t.double_data_size()
                      : c.dtype == TensorProto::INT64  ? t.int64_data_size()
                                                       : t.int32_data_size();
  if (!hasRaw && fieldSize != n) {
    error = what + " holds " + std::to_string(fieldSize) +
            " values, its shape needs " + std::to_string(n);
    return std::nullopt;
  }
  if (half) {
    // Stored as 16-bit patterns (raw, or one per int32_data element).
    zrt::DType from =
        c.dtype == TensorProto::BFLOAT16 ? zero::zplan::BF16 : zero::zplan::F16;
    for (int64_t k = 0; k < n; ++k) {
      uint16_t bits;
      if (hasRaw)
        rawAt(k, 2, &bits);
      else
        bits = (uint16_t)t.int32_data(k);
      c.floats.push_back(zrt::floatValue(&bits, from));
    }
    c.dtype = TensorProto::FLOAT;
    return c;
  }
  for (int64_t k = 0; k < n; ++k) {
    switch (c.dtype) {
    case TensorProto::FLOAT: {
      float v;
      if (hasRaw)
        rawAt(k, 4, &v);
      else
        v = t.float_data(k);
      c.floats.push_back(v);
      break;
    }
    case TensorProto::DOUBLE: {
      double v;
      if (hasRaw)
        rawAt(k, 8, &v);
      else
        v = t.double_data(k);
      c.floats.push_back(v);
      break;
    }
    case TensorProto::INT64: {
      int64_t v;
      if (hasRaw)
        rawAt(k, 8, &v);
      else
        v = t.int64_data(k);
      c.ints.push_back(v);
      break;
    }
    case TensorProto::INT32: {
      int32_t v;
      if (hasRaw)
        rawAt(k, 4, &v);
      else
        v = t.int32_data(k);
      c.ints.push_back(v);
      break;
    }
    default: { // one-byte types
      int64_t v;
      if (hasRaw)
        v = c.dtype == TensorProto::INT8 ? (int64_t)(int8_t)raw[k]
                                         : (int64_t)(uint8_t)raw[k];
      else
        v = t.int32_data(k);
      if (c.dtype == TensorProto::BOOL)
        v = v != 0;
      c.ints.push_back(v);
    }
    }
  }
  return c;
}

TensorProto zero::onnx_import::constToProto(const ConstTensor &c) {
  TensorProto t;
  t.set_data_type(c.dtype);
  for (int64_t d : c.shape)
    t.add_dims(d);
  for (int64_t k = 0; k < c.numel(); ++k) {
    switch (c.dtype) {
    case TensorProto::FLOAT:
      t.add_float_data((float)c.floats[k]);
      break;
    case TensorProto::DOUBLE:
      t.add_double_data(c.floats[k]);
      break;
    case TensorProto::INT64:
      t.add_int64_data(c.ints[k]);
      break;
    default:
      t.add_int32_data((int32_t)c.ints[k]);
    }
  }
  return t;
}

mlir::Type zero::onnx_import::elementTypeOf(mlir::MLIRContext *ctx,
                                            int32_t onnxType) {
  mlir::Builder b(ctx);
  switch (onnxType) {
  case TensorProto::FLOAT:
  // A model exported in bf16 or f16 (transformers 5 loads checkpoints in their
  // dtype) computes in float32 here: its weights become f32 master weights, and
  // --precision=bf16|fp16 chooses 16-bit arithmetic as for any model. Graph inputs
  // and outputs stay refused in these types (ImportOnnx.cpp): their bytes would
  // not be what the caller holds.
  case TensorProto::BFLOAT16:
  case TensorProto::FLOAT16:
    return b.getF32Type();
  case TensorProto::DOUBLE:
    return b.getF64Type();
  case TensorProto::INT64:
    return b.getI64Type();
  case TensorProto::INT32:
    return b.getI32Type();
  case TensorProto::INT8:
    return b.getI8Type();
  case TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case TensorProto::BOOL:
    return b.getI1Type();
  default:
    return {};
  }
}
