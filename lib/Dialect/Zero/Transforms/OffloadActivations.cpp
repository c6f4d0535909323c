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
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace zero {
#define GEN_PASS_DEF_OFFLOADACTIVATIONSPASS
#include "zero/Dialect/Zero/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

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
    Operation *terminator = entry.getTerminator();
    Operation *lossOp =
        terminator->getNumOperands() ? terminator->getOperand(0).getDefiningOp() : nullptr;
    if (!lossOp) {
      func.emitError("activation offload: @main returns no computed loss");
      return signalPassFailure();
    }
    // Phases as the recomputation pass numbers them: micro-batch m's forward is 2m
    // and its backward 2m + 1 (zero.micro_phase, with gradient accumulation);
    // otherwise forward is the loss and what precedes it, backward what follows.
    DenseMap<Operation *, int64_t> phase;
    bool accumulating = false, afterLoss = false;
    for (Operation &op : entry)
      accumulating |= op.hasAttr("zero.micro_phase");
    for (Operation &op : entry) {
      if (auto p = op.getAttrOfType<IntegerAttr>("zero.micro_phase"))
        phase[&op] = p.getInt();
      else
        phase[&op] = accumulating ? -1 : afterLoss ? 1 : 0;
      afterLoss |= &op == lossOp;
    }
    phase[terminator] = -1;
    // Activations: what depends on a graph input.
    DenseSet<Value> activation;
    for (BlockArgument a : entry.getArguments())
      if (func.getArgAttr(a.getArgNumber(), "compute.input"))
        activation.insert(a);
    for (Operation &op : entry)
      if (llvm::any_of(op.getOperands(), [&](Value v) { return activation.contains(v); }))
        for (Value r : op.getResults())
          activation.insert(r);

    OpBuilder b(&getContext());
    int moved = 0;
    SmallVector<Operation *> forward;
    for (Operation &op : entry)
      forward.push_back(&op);
    for (Operation *op : forward) {
      int64_t p = phase[op];
      if (p < 0 || p % 2 || op->hasAttr("zero.host") ||
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
