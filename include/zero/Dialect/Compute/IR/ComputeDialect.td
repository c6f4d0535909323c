//===- ComputeDialect.td - The graph-level compute dialect -*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTEDIALECT_TD
#define ZERO_DIALECT_COMPUTE_IR_COMPUTEDIALECT_TD

include "mlir/IR/OpBase.td"

def Compute_Dialect : Dialect {
  let name = "compute";
  let cppNamespace = "::zero::compute";
  let summary = "Tensor operations of a model's forward and training step.";
  let description = [{
    The graph level of zero-opt. Every value is a statically shaped ranked tensor;
    parameters are function arguments that keep their ONNX initializer names. The op
    vocabulary is what the ONNX importer produces: ONNX names appear only there.
    Broadcasting follows ONNX (numpy) rules.

    Passes hand each other facts as `compute.*` attributes on `func.func`, its
    arguments and its results (a parameter's name, a bucket's members, which
    argument a result updates). Each is declared once, with its type and where it
    may appear, in ComputeAttributes.cpp; the dialect verifies them, so a
    malformed one is an error where it is, not a crash in a later pass.
  }];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

class Compute_Op<string mnemonic, list<Trait> traits = []>
    : Op<Compute_Dialect, mnemonic, traits>;

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTEDIALECT_TD
