//===- Tensor.h - Typed views into the arena --------------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TENSOR_H
#define ZRT_TENSOR_H

#include "zplan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zrt {

using DType = zero::zplan::DType;

/// Bytes per element of `t` (bool takes one byte); 0 for an invalid dtype.
int64_t dtypeSize(DType t);
/// "f32", "i64", ...
const char *dtypeName(DType t);
/// f32, f64, bf16 or f16.
bool isFloatDtype(DType t);
/// The float of dtype `t` (isFloatDtype) at `p`, widened to double.
double floatValue(const void *p, DType t);
/// Stores `v` at `p` as dtype `t` (isFloatDtype), rounded to nearest even.
void storeFloatValue(void *p, DType t, double v);

/// A dense row-major tensor that lives somewhere else (the arena, a file buffer).
struct TensorView {
  void *data = nullptr;
  DType dtype = zero::zplan::DTYPE_INVALID;
  std::vector<int64_t> shape;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
  std::string describe() const; // "f32[2x3]"
};

} // namespace zrt

#endif // ZRT_TENSOR_H
