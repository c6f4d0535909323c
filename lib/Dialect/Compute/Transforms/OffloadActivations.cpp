//===- OffloadActivations.cpp - Saved activations in host memory ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// DeepSpeed's cpu_checkpointing: the activations a step's backward reads from its
// forward (with recomputation, the kept checkpoints) wait for it in host memory.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/Dialect/Compute/Transforms/StepPhases.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_OFFLOADACTIVATIONSPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

struct OffloadActivationsPass
    : public zero::impl::OffloadActivationsPassBase<OffloadActivationsPass> {
  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func || !func.getBody().hasOneBlock()) {
      getOperation().emitError("activation offload needs a func.func @main of one block");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    FailureOr<StepPhases> phases = analyzeStepPhases(func, "activation offload");
    if (failed(phases))
      return signalPassFailure();
    const DenseMap<Operation *, int64_t> &phase = phases->phase;
    const DenseSet<Value> &activation = phases->activations;

    OpBuilder b(&getContext());
    int moved = 0;
    SmallVector<Operation *> forward;
    for (Operation &op : entry)
      forward.push_back(&op);
    for (Operation *op : forward) {
      int64_t p = phase.lookup(op);
      if (!phases->isForward(op) || op->hasAttr(zops::attr::kHost) ||
          isa<compute::ConstantOp, compute::ToHostOp, compute::ToDeviceOp>(op))
        continue;
      for (Value r : op->getResults()) {
        if (!activation.contains(r))
          continue;
        // Its backward readers share one copy back, right before the first.
        SmallVector<OpOperand *> backward;
        for (OpOperand &use : r.getUses())
          if (phase.lookup(use.getOwner()) == p + 1)
            backward.push_back(&use);
        if (backward.empty())
          continue;
        Operation *first = backward.front()->getOwner();
        for (OpOperand *use : backward)
          if (use->getOwner()->isBeforeInBlock(first))
            first = use->getOwner();
        if (first == op->getNextNode())
          continue; // read at once (the loss's own results): nothing to wait for
        b.setInsertionPointAfter(op);
        Value host = compute::ToHostOp::create(b, r.getLoc(), r);
        b.setInsertionPoint(first);
        Value back = compute::ToDeviceOp::create(b, r.getLoc(), host);
        for (OpOperand *use : backward)
          use->set(back);
        ++moved;
      }
    }
    if (moved == 0) {
      func.emitError("activation offload: the step's backward reads no activation from "
                     "its forward");
      return signalPassFailure();
    }
  }
};

} // namespace
