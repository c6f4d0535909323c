//===- StepPhases.cpp - Forward, backward and activations of a step -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/Transforms/StepPhases.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

using namespace mlir;

FailureOr<zero::compute::StepPhases>
zero::compute::analyzeStepPhases(func::FuncOp func, StringRef pass) {
  Block &entry = func.getBody().front();
  Operation *ret = entry.getTerminator();
  StepPhases s;
  s.loss = ret->getNumOperands() ? ret->getOperand(0).getDefiningOp() : nullptr;
  if (!s.loss)
    return func.emitError(pass) << ": @main returns no computed loss", failure();
  bool accumulating = false, afterLoss = false;
  for (Operation &op : entry)
    accumulating |= op.hasAttr(zops::attr::kMicroPhase);
  for (Operation &op : entry) {
    if (auto p = op.getAttrOfType<IntegerAttr>(zops::attr::kMicroPhase))
      s.phase[&op] = p.getInt();
    else
      s.phase[&op] = accumulating ? -1 : afterLoss ? 1 : 0;
    afterLoss |= &op == s.loss;
  }
  s.phase[ret] = -1;
  for (BlockArgument a : entry.getArguments())
    if (func.getArgAttr(a.getArgNumber(), compute::attr::kInput))
      s.activations.insert(a);
  for (Operation &op : entry)
    if (llvm::any_of(op.getOperands(), [&](Value v) { return s.activations.contains(v); }))
      for (Value r : op.getResults())
        s.activations.insert(r);
  return s;
}
