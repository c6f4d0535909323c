//===- Tensor.cpp - Dtype facts -------------------------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Tensor.h"
#include "zrt/Float16.h"

#include <cstring>

using namespace zrt;

int64_t zrt::dtypeSize(DType t) {
  switch (t) {
  case zero::zplan::F32:
  case zero::zplan::I32:
    return 4;
  case zero::zplan::F64:
  case zero::zplan::I64:
    return 8;
  case zero::zplan::BF16:
  case zero::zplan::F16:
    return 2;
  case zero::zplan::I8:
  case zero::zplan::U8:
  case zero::zplan::BOOL:
    return 1;
  default:
    return 0;
  }
}

const char *zrt::dtypeName(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return "f32";
  case zero::zplan::F64:
    return "f64";
  case zero::zplan::I32:
    return "i32";
  case zero::zplan::I64:
    return "i64";
  case zero::zplan::I8:
    return "i8";
  case zero::zplan::U8:
    return "u8";
  case zero::zplan::BOOL:
    return "bool";
  case zero::zplan::BF16:
    return "bf16";
  case zero::zplan::F16:
    return "f16";
  default:
    return "invalid";
  }
}

std::string TensorView::describe() const {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

bool zrt::isFloatDtype(DType t) {
  return t == zero::zplan::F32 || t == zero::zplan::F64 || t == zero::zplan::BF16 ||
         t == zero::zplan::F16;
}

double zrt::floatValue(const void *p, DType t) {
  switch (t) {
  case zero::zplan::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case zero::zplan::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case zero::zplan::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return floatFromBf16(v);
  }
  default: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return floatFromF16(v);
  }
  }
}

void zrt::storeFloatValue(void *out, DType t, double v) {
  char *p = static_cast<char *>(out);
  switch (t) {
  case zero::zplan::F32: {
    float f = (float)v;
    std::memcpy(p, &f, 4);
    break;
  }
  case zero::zplan::F64:
    std::memcpy(p, &v, 8);
    break;
  case zero::zplan::BF16: {
    uint16_t b = bf16FromFloat((float)v);
    std::memcpy(p, &b, 2);
    break;
  }
  default: {
    uint16_t b = f16FromFloat((float)v);
    std::memcpy(p, &b, 2);
  }
  }
}
