//===- GradientRules.h - One gradient rule per compute op --------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Internal to lib/Dialect/Compute/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_LIB_DIALECT_COMPUTE_TRANSFORMS_GRADIENTRULES_H
#define ZERO_LIB_DIALECT_COMPUTE_TRANSFORMS_GRADIENTRULES_H

#include "mlir/IR/Builders.h"

namespace zero::compute {

/// Builds, at `b`'s insertion point, the adjoints of `op`'s operands from the
/// adjoints of its results. `resultGrads[i]` is null when result i does not reach
/// the loss. Only operands with `needGrad[i]` get an adjoint; the others stay null.
/// An op without a rule is an error naming it.
mlir::LogicalResult buildGradients(mlir::OpBuilder &b, mlir::Operation *op,
                                   llvm::ArrayRef<mlir::Value> resultGrads,
                                   llvm::ArrayRef<bool> needGrad,
                                   llvm::SmallVectorImpl<mlir::Value> &operandGrads);

} // namespace zero::compute

#endif // ZERO_LIB_DIALECT_COMPUTE_TRANSFORMS_GRADIENTRULES_H
