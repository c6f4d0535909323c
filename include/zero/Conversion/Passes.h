//===- Passes.h - Conversion passes ------------------------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CONVERSION_PASSES_H
#define ZERO_CONVERSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace zero {

#define GEN_PASS_DECL
#include "zero/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zero/Conversion/Passes.h.inc"

} // namespace zero

#endif // ZERO_CONVERSION_PASSES_H
