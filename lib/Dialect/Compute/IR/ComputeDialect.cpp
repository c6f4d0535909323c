//===- ComputeDialect.cpp - Compute dialect registration ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

using namespace mlir;
using namespace zero::compute;

#include "zero/Dialect/Compute/IR/ComputeOpsDialect.cpp.inc"
#include "zero/Dialect/Compute/IR/ComputeInterfaces.cpp.inc"

void ComputeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zero/Dialect/Compute/IR/ComputeOps.cpp.inc"
      >();
}
