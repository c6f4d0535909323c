//===- Passes.h - Collective scheduling, parameter offload ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_ZERO_TRANSFORMS_PASSES_H
#define ZERO_DIALECT_ZERO_TRANSFORMS_PASSES_H

#include "zero/Dialect/Zero/IR/ZeroDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace zero {

#define GEN_PASS_DECL
#include "zero/Dialect/Zero/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zero/Dialect/Zero/Transforms/Passes.h.inc"

} // namespace zero

#endif // ZERO_DIALECT_ZERO_TRANSFORMS_PASSES_H
