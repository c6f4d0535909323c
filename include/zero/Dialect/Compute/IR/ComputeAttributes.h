//===- ComputeAttributes.h - The compute.* attributes' names ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The names of the compute dialect's discardable attributes, from their records
// in ComputeAttributes.def: code reads and writes `compute::attr::kParam`, never
// the string, so a misspelt or retired name does not compile.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTEATTRIBUTES_H
#define ZERO_DIALECT_COMPUTE_IR_COMPUTEATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace zero::compute::attr {

#define COMPUTE_ATTR(ID, NAME, PLACE, HOLDS, MEANING) inline constexpr llvm::StringLiteral ID = NAME;
#include "zero/Dialect/Compute/IR/ComputeAttributes.def"

} // namespace zero::compute::attr

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTEATTRIBUTES_H
