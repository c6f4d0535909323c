//===- OffloadOptimizer.cpp - ZeRO-Offload: the optimizer on the host -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Marks the optimizer updates, and what only they read, as host work and puts the
// copies between device and host memory where values cross. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace zero {
#define GEN_PASS_DEF_OFFLOADOPTIMIZERPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

struct OffloadOptimizerPass
    : public zero::impl::OffloadOptimizerPassBase<OffloadOptimizerPass> {
  /// The device's other readers of a gradient that crosses (the overflow count,
  /// the squared norm for clipping) move up to right after its copy, where their
  /// operands allow: then the device copy dies there, instead of living until
  /// the optimizer, which is where the schedule puts what feeds it.
  static void hoistDeviceReaders(Value v, Operation *copy,
                                 const DenseSet<Operation *> &host) {
    SmallVector<Operation *> readers;
    for (Operation *user : v.getUsers())
      if (user != copy && !host.contains(user) && user->getBlock() == copy->getBlock() &&
          copy->isBeforeInBlock(user) && isPure(user) && user->getNumRegions() == 0)
        readers.push_back(user);
    llvm::sort(readers, [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
    for (Operation *reader : readers) { // the last first: each lands right after `copy`
      bool ready = llvm::all_of(reader->getOperands(), [&](Value o) {
        Operation *def = o.getDefiningOp();
        return !def || def == copy || def->isBeforeInBlock(copy);
      });
      if (ready)
        reader->moveAfter(copy);
    }
  }

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func || !func.getBody().hasOneBlock()) {
      getOperation().emitError("optimizer offload needs a func.func @main of one block");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    Operation *terminator = entry.getTerminator();
    MLIRContext *ctx = &getContext();

    // Host ops: the updates, and the casts of what they produce (the new 16-bit
    // parameters are made where the f32 masters are).
    DenseSet<Operation *> host;
    for (Operation &op : entry)
      if (isa<AdamWOp, SgdOp>(op))
        host.insert(&op);
    if (host.empty()) {
      func.emitError("optimizer offload: the step has no optimizer update (adamw or "
                     "sgd) to run on the host");
      return signalPassFailure();
    }
    for (Operation &op : entry)
      if (auto c = dyn_cast<CastOp>(op))
        if (Operation *def = c.getInput().getDefiningOp(); def && host.contains(def))
          host.insert(&op);

    // Host arguments: read by host ops only (a master, optimizer state); an
    // argument the device reads too (a parameter, the step count) stays there.
    DenseSet<Value> hostValues;
    for (BlockArgument arg : entry.getArguments()) {
      bool hostRead = false, deviceRead = false;
      for (Operation *user : arg.getUsers()) {
        if (user == terminator)
          continue;
        (host.contains(user) ? hostRead : deviceRead) = true;
      }
      if (hostRead && !deviceRead) {
        func.setArgAttr(arg.getArgNumber(), compute::attr::kHost, UnitAttr::get(ctx));
        hostValues.insert(arg);
      }
    }
    for (Operation *op : host)
      for (Value r : op->getResults())
        hostValues.insert(r);

    // Results that replace a host argument stay on the host, whoever reads them.
    DenseMap<Value, bool> updatesHostArg;
    for (auto [i, v] : llvm::enumerate(terminator->getOperands()))
      if (auto arg = func.getResultAttrOfType<IntegerAttr>(i, compute::attr::kUpdates))
        updatesHostArg[v] |= hostValues.contains(entry.getArgument(arg.getInt()));

    OpBuilder b(ctx);
    // Device values a host op reads cross once, as soon as they exist.
    DenseMap<Value, Value> onHost;
    for (Operation &op : llvm::make_early_inc_range(entry)) {
      if (!host.contains(&op))
        continue;
      for (OpOperand &use : op.getOpOperands()) {
        Value v = use.get();
        if (hostValues.contains(v) || !isa<RankedTensorType>(v.getType()))
          continue;
        Value &copy = onHost[v];
        if (!copy) {
          if (Operation *def = v.getDefiningOp())
            b.setInsertionPointAfter(def);
          else
            b.setInsertionPointToStart(&entry);
          copy = ToHostOp::create(b, v.getLoc(), v);
          hostValues.insert(copy);
          hoistDeviceReaders(v, copy.getDefiningOp(), host);
        }
        use.set(copy);
      }
    }
    // Host results a device op reads cross back before the first such reader.
    for (Operation *op : host) {
      op->setAttr(zops::attr::kHost, UnitAttr::get(ctx));
      for (Value r : op->getResults()) {
        SmallVector<OpOperand *> deviceUses;
        for (OpOperand &use : r.getUses()) {
          Operation *user = use.getOwner();
          if (host.contains(user) || (user == terminator && updatesHostArg.lookup(r)))
            continue;
          deviceUses.push_back(&use);
        }
        if (deviceUses.empty())
          continue;
        Operation *first = deviceUses.front()->getOwner();
        for (OpOperand *use : deviceUses)
          if (use->getOwner()->isBeforeInBlock(first))
            first = use->getOwner();
        b.setInsertionPoint(first);
        Value back = ToDeviceOp::create(b, r.getLoc(), r);
        for (OpOperand *use : deviceUses)
          use->set(back);
      }
    }
  }
};

} // namespace
