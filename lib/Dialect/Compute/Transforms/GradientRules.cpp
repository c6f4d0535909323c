//===- GradientRules.cpp - Asking an op for its gradient rule -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The rules themselves are the ops' (DifferentiableOpInterface, defined with the
// ops in lib/Dialect/Compute/IR/ComputeGradients.cpp).
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

using namespace mlir;
using namespace zero::compute;

LogicalResult zero::compute::buildGradients(OpBuilder &b, Operation *op,
                                            ArrayRef<Value> rg, ArrayRef<bool> need,
                                            SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
  auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
  if (!differentiable)
    return op->emitOpError("has no gradient rule, but the loss depends on it "
                           "through a trainable parameter");
  return differentiable.buildGradients(b, rg, need, grads);
}
