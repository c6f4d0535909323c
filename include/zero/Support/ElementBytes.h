//===- ElementBytes.h - Bytes of an element and of a tensor ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// How many bytes the runtime stores per element (i1 takes a byte: bits / 8 would
// give 0), for every place the compiler sizes a buffer, a bucket or a transfer.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_ELEMENTBYTES_H
#define ZERO_SUPPORT_ELEMENTBYTES_H

#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>

namespace zero {

inline int64_t elementBytes(mlir::Type t) {
  unsigned bits = t.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : bits / 8;
}

/// Bytes of a tensor or memref of static shape.
inline int64_t shapedBytes(mlir::ShapedType t) {
  return t.getNumElements() * elementBytes(t.getElementType());
}

} // namespace zero

#endif // ZERO_SUPPORT_ELEMENTBYTES_H
