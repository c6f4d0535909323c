//===- BlockQuantization.h - int8 blocks with one scale each ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CPU's kernels for ZeRO++'s int8 wire form (zplan/QuantizedWire.h). A block
// holding a NaN or an infinity comes back all NaN, so an overflow is still seen
// after the collective.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_BLOCKQUANTIZATION_H
#define ZRT_BLOCKQUANTIZATION_H

#include "zplan/QuantizedWire.h"
#include "zrt/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace zrt {

using zplan::kQuantizationErrorBound;
using zplan::quantizedBytes;

/// What quantization lost, measured while it ran: the relative L2 error over
/// everything quantized, and the worst block's largest error over its largest
/// magnitude (at most kQuantizationErrorBound); and the bytes this rank sent
/// quantized, against what they would have been unquantized.
struct QuantizationError {
  double errorSquares = 0, valueSquares = 0, worstBlock = 0;
  int64_t values = 0, wireBytes = 0, fullBytes = 0;
  double relative() const {
    return valueSquares > 0 ? std::sqrt(errorSquares / valueSquares) : 0.0;
  }
  void add(const QuantizationError &o) {
    errorSquares += o.errorSquares;
    valueSquares += o.valueSquares;
    worstBlock = std::max(worstBlock, o.worstBlock);
    values += o.values;
    wireBytes += o.wireBytes;
    fullBytes += o.fullBytes;
  }
};

/// `count` values of `t` at `in` -> wire form at `out` (quantizedBytes(count,
/// block) bytes); adds what was lost to `error`.
void quantizeBlocks(const void *in, DType t, int64_t count, int64_t block, void *out,
                    QuantizationError &error);

/// Wire form of `count` values -> f32 at `out`.
void dequantizeBlocks(const void *in, int64_t count, int64_t block, float *out);

} // namespace zrt

#endif // ZRT_BLOCKQUANTIZATION_H
