//===- CollectiveQuantization.h - qwZ and qgZ's mark ------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_COLLECTIVEQUANTIZATION_H
#define ZERO_SUPPORT_COLLECTIVEQUANTIZATION_H

#include "llvm/ADT/StringRef.h"

namespace zero {

/// ZeRO++'s quantized collectives (qwZ, qgZ): on a shard collective or its start,
/// the i64 number of values per int8 block with one scale; absent: full precision.
/// The plan kernel carries it as `quantize_block` (runtime QuantizedCollectives.h).
inline constexpr llvm::StringLiteral kQuantizeBlockAttr = "zero.quantize_block";

} // namespace zero

#endif // ZERO_SUPPORT_COLLECTIVEQUANTIZATION_H
