//===- ComputeInterfaces.td - Interfaces of compute ops ----*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTEINTERFACES_TD
#define ZERO_DIALECT_COMPUTE_IR_COMPUTEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Compute_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::zero::compute";
  let description = [{
    An op with a gradient rule: its vector-Jacobian product, written with compute
    ops (and the backward ops of ComputeTrainingOps.td where forward ops would be
    clumsy), defined with the op (lib/Dialect/Compute/IR/ComputeGradients.cpp).
    --zero-build-training-step asks each op on the way from the loss back to a
    trainable parameter for its rule; an op without the interface there is an
    error naming it.
  }];
  let methods = [
    InterfaceMethod<[{
      Builds, at `b`'s insertion point, the adjoints of the operands from those of
      the results. `resultGrads[i]` is null when result i does not reach the loss.
      Only operands with `needGrad[i]` get an adjoint in `operandGrads` (sized to the
      operands, all null on entry); the others stay null.
    }], "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$b, "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::ArrayRef<bool>":$needGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTEINTERFACES_TD
