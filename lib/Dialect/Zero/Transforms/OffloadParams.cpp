//===- OffloadParams.cpp - ZeRO-3 parameter slices in host memory ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Marks the parameter slices that the all-gathers read as host arguments and
// copies them to the device right before each device op that reads them. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace zero {
#define GEN_PASS_DEF_OFFLOADPARAMSPASS
#include "zero/Dialect/Zero/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// Made on the host: by a host op (an offloaded optimizer) or a copy there.
bool isHostValue(Value v) {
  Operation *def = v.getDefiningOp();
  return def && (def->hasAttr(zops::attr::kHost) || isa<compute::ToHostOp>(def));
}

struct OffloadParamsPass : public zero::impl::OffloadParamsPassBase<OffloadParamsPass> {
  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func || !func.getBody().hasOneBlock()) {
      getOperation().emitError("parameter offload needs a func.func @main of one block");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    Operation *terminator = entry.getTerminator();
    MLIRContext *ctx = &getContext();

    // The stage-3 slices: arguments an all-gather reads, itself or through the
    // concatenation of a fused gather's slices.
    llvm::SetVector<BlockArgument> slices;
    for (Operation &op : entry) {
      auto gather = dyn_cast<zops::AllGatherStartOp>(op);
      if (!gather)
        continue;
      SmallVector<Value> work = {gather->getOperand(0)};
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (auto arg = dyn_cast<BlockArgument>(v))
          slices.insert(arg);
        else if (auto concat = v.getDefiningOp<compute::ConcatOp>())
          llvm::append_range(work, concat->getOperands());
      }
    }
    if (slices.empty()) {
      func.emitError("parameter offload: the step gathers no parameter slice (it "
                     "offloads ZeRO stage 3's sharded parameters; a parameter under "
                     "the persistence threshold stays replicated on the device)");
      return signalPassFailure();
    }

    OpBuilder b(ctx);
    for (BlockArgument arg : slices) {
      func.setArgAttr(arg.getArgNumber(), compute::attr::kHost, UnitAttr::get(ctx));
      // Readers: a host op reads it in place; an earlier copy to the host (the
      // optimizer offload's) is not needed any more; a device op gets a copy of
      // its own right before it, so the device holds it only while it is used.
      DenseMap<Operation *, Value> copyFor;
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Operation *user = use.getOwner();
        if (user == terminator || user->hasAttr(zops::attr::kHost))
          continue;
        if (auto toHost = dyn_cast<compute::ToHostOp>(user)) {
          toHost.getResult().replaceAllUsesWith(arg);
          toHost.erase();
          continue;
        }
        Value &copy = copyFor[user];
        if (!copy) {
          b.setInsertionPoint(user);
          copy = compute::ToDeviceOp::create(b, arg.getLoc(), arg);
        }
        use.set(copy);
      }
    }

    // The updated slices return to the host: a host result as it is (dropping its
    // copy to the device when nothing else reads it), a device one by a copy made
    // as soon as it exists (its device buffer then dies there).
    for (auto [i, operand] : llvm::enumerate(terminator->getOpOperands())) {
      auto updates = func.getResultAttrOfType<IntegerAttr>(i, compute::attr::kUpdates);
      if (!updates || !func.getArgAttr(updates.getInt(), compute::attr::kHost))
        continue;
      Value v = operand.get();
      if (auto toDevice = v.getDefiningOp<compute::ToDeviceOp>()) {
        operand.set(toDevice.getInput());
        if (toDevice->use_empty())
          toDevice.erase();
        continue;
      }
      if (isHostValue(v) || isa<BlockArgument>(v))
        continue;
      b.setInsertionPointAfterValue(v);
      operand.set(compute::ToHostOp::create(b, v.getLoc(), v));
    }
  }
};

} // namespace
