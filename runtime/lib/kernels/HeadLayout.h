//===- HeadLayout.h - Where an attention operand's rows lie ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Both backends' attention kernels read each [batch, heads, rows, width] operand
// through one of these: the operand as it lies, or a view of a larger buffer (a
// head of a fused QKV projection, a head merge written in place), its width
// contiguous.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_HEADLAYOUT_H
#define ZRT_LIB_KERNELS_HEADLAYOUT_H

#include "zrt/Float16.h" // ZRT_HOST_DEVICE

#include <cstdint>

namespace zrt::kernels {

/// Element (b, h, r, d) lies at offset + b batch + h head + r row + d.
struct HeadLayout {
  int64_t offset = 0, batch = 0, head = 0, row = 0;
  ZRT_HOST_DEVICE int64_t at(int64_t b, int64_t h, int64_t r) const {
    return offset + b * batch + h * head + r * row;
  }
  /// A dense [batch, heads, rows, width] tensor.
  static HeadLayout dense(int64_t heads, int64_t rows, int64_t width) {
    return {0, heads * rows * width, rows * width, width};
  }
};

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_HEADLAYOUT_H
