//===- QuantizedWire.h - The int8 wire form of quantized collectives -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// ZeRO++'s quantized collectives (qwZ, qgZ) send n values as int8 in blocks of B,
// each block with an f32 scale (its largest magnitude / 127): ceil(n / B) scales,
// then n int8 values. A value comes back within half a step, max|block| / 254.
// The compiler's cost model and the runtime size messages with these, once.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_QUANTIZEDWIRE_H
#define ZPLAN_QUANTIZEDWIRE_H

#include <cstdint>

namespace zplan {

/// Bytes of `count` values in the wire form, blocks of `block`.
inline int64_t quantizedBytes(int64_t count, int64_t block) {
  return (count + block - 1) / block * 4 + count;
}

/// Bytes a quantized collective of `elements` (the full tensor) puts in the
/// messages of one pass over `ranks` ranks: each rank's chunk (ceil(elements /
/// ranks), the last padded) in the wire form, once per rank.
inline int64_t quantizedCollectiveBytes(int64_t elements, int64_t ranks, int64_t block) {
  int64_t chunk = (elements + ranks - 1) / ranks;
  return ranks * quantizedBytes(chunk, block);
}

/// The largest error a value may come back with, as a fraction of its block's
/// largest magnitude.
inline constexpr double kQuantizationErrorBound = 1.0 / 254;

} // namespace zplan

#endif // ZPLAN_QUANTIZEDWIRE_H
