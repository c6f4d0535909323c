//===- ZeroAttributes.h - The zero.* attributes' names ----------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The names of the zero dialect's discardable attributes, from their records in
// ZeroAttributes.def: code reads and writes `zops::attr::kPhase`, never the
// string, so a misspelt or retired name does not compile.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_ZERO_IR_ZEROATTRIBUTES_H
#define ZERO_DIALECT_ZERO_IR_ZEROATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace zero::zops::attr {

#define ZERO_ATTR(ID, NAME, PLACE, HOLDS, MEANING) inline constexpr llvm::StringLiteral ID = NAME;
#include "zero/Dialect/Zero/IR/ZeroAttributes.def"

} // namespace zero::zops::attr

#endif // ZERO_DIALECT_ZERO_IR_ZEROATTRIBUTES_H
