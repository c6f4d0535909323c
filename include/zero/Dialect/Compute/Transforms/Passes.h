//===- Passes.h - Compute dialect passes -------------------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_H
#define ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Regex.h"

namespace zero {

/// The name of argument `i` of `func` when --zero-build-training-step trains it: a
/// float `compute.param` without `compute.frozen` whose name `freeze` (when given)
/// does not match; "" otherwise.
llvm::StringRef trainedParameterName(mlir::func::FuncOp func, unsigned i,
                                     const llvm::Regex *freeze);

#define GEN_PASS_DECL
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"

} // namespace zero

#endif // ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_H
