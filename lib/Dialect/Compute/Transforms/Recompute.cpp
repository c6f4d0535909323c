//===- Recompute.cpp - Activation checkpointing ---------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Backward reads forward values (saved activations); keeping them all alive from
// forward to backward is what dominates a transformer's memory. This pass keeps
// some and recomputes the others in backward, from the kept ones, right before
// their first backward reader. See Passes.td for the levels.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/Dialect/Compute/Transforms/StepPhases.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

namespace zero {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

struct RecomputePass : public zero::impl::RecomputePassBase<RecomputePass> {
  using Base::Base;

  DenseMap<Operation *, int64_t> position, phase;
  DenseSet<Value> fromInputs; // depends on a graph input (an activation)
  DenseMap<Value, bool> canRecompute;
  DenseSet<Value> saved, kept, recompute;

  void runOnOperation() override {
    if (level <= 0)
      return;
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func || !func.getBody().hasOneBlock())
      return; // nothing to do: the pipeline reports a missing @main elsewhere
    Block &entry = func.getBody().front();
    if (failed(analyze(func, entry)))
      return signalPassFailure();
    rewrite(entry);
    // For the report.
    getOperation()->setAttr(zops::attr::kRecomputeLevel,
                            IntegerAttr::get(IntegerType::get(&getContext(), 64), level));
  }

  /// Phases (StepPhases.h) and activations, then what backward reads of them.
  LogicalResult analyze(func::FuncOp func, Block &entry) {
    FailureOr<StepPhases> phases = analyzeStepPhases(func, "--zero-recompute");
    if (failed(phases))
      return failure();
    phase = std::move(phases->phase);
    fromInputs = std::move(phases->activations);
    int64_t i = 0;
    for (Operation &op : entry)
      position[&op] = i++;
    // Saved activations: forward values that their backward reads.
    for (Operation &op : entry) {
      int64_t p = phase[&op];
      if (p < 0 || p % 2 || isa<ConstantOp>(op))
        continue;
      for (Value r : op.getResults())
        if (fromInputs.contains(r) &&
            llvm::any_of(r.getUsers(), [&](Operation *u) { return phase[u] == p + 1; }))
          saved.insert(r);
    }
    kept = level == 1 ? keptByCost(entry) : keptByCuts(entry);
    SmallVector<Value> cannot;
    for (Value v : saved) {
      if (kept.contains(v))
        continue;
      if (recomputable(v))
        recompute.insert(v);
      else
        cannot.push_back(v);
    }
    kept.insert(cannot.begin(), cannot.end()); // what cannot be rebuilt stays
    return success();
  }

  /// Level 1: matrix products' outputs are kept (saved or not: the cheap chains
  /// after them, reshapes and transposes of attention heads, casts, activation
  /// functions, are recomputed from them); the cheap saved values are not.
  DenseSet<Value> keptByCost(Block &entry) {
    DenseSet<Value> kept;
    for (Operation &op : entry)
      if (isa<MatMulOp>(op) && phase[&op] >= 0 && phase[&op] % 2 == 0 &&
          fromInputs.contains(op.getResult(0)))
        kept.insert(op.getResult(0));
    return kept;
  }

  /// Levels 2+: the cut points of each forward phase, every stride-th kept, and
  /// everything after the last kept cut.
  DenseSet<Value> keptByCuts(Block &entry) {
    int64_t stride = int64_t(1) << std::min<int64_t>(level - 2, 30);
    DenseMap<int64_t, SmallVector<Operation *>> forwardOps;
    for (Operation &op : entry)
      if (phase[&op] >= 0 && phase[&op] % 2 == 0)
        forwardOps[phase[&op]].push_back(&op);
    DenseSet<Value> kept;
    for (auto &[p, ops] : forwardOps) {
      // The last forward reader of each activation of this phase.
      DenseMap<Value, int64_t> lastRead;
      for (auto [i, op] : llvm::enumerate(ops))
        for (Value v : op->getOperands())
          if (fromInputs.contains(v))
            lastRead[v] = i;
      // Walk the phase keeping the activations alive; a result alone in the set
      // is a cut.
      DenseSet<Value> live;
      SmallVector<std::pair<int64_t, Value>> cuts;
      for (auto [i, op] : llvm::enumerate(ops)) {
        for (Value r : op->getResults())
          if (fromInputs.contains(r) && lastRead.lookup(r) > (int64_t)i)
            live.insert(r);
        for (Value v : op->getOperands())
          if (lastRead.lookup(v) == (int64_t)i)
            live.erase(v);
        if (live.size() == 1 && op->getNumResults() == 1 &&
            live.contains(op->getResult(0)))
          cuts.push_back({(int64_t)i, op->getResult(0)});
      }
      int64_t lastKept = -1;
      for (auto [j, cut] : llvm::enumerate(cuts))
        if ((int64_t)(j + 1) % stride == 0) {
          kept.insert(cut.second);
          lastKept = cut.first;
        }
      for (auto [i, op] : llvm::enumerate(ops))
        if ((int64_t)i > lastKept)
          for (Value r : op->getResults())
            kept.insert(r);
    }
    return kept;
  }

  /// A value the rewrite may rebuild in backward: a pure compute op's result
  /// whose operands are available there (parameters, inputs, constants, values
  /// that do not depend on the inputs, kept values) or recomputable themselves;
  /// at level 1 only cheap ops.
  bool recomputable(Value v) {
    auto it = canRecompute.find(v);
    if (it != canRecompute.end())
      return it->second;
    canRecompute[v] = false; // no cycles in SSA; guards the recursion anyway
    Operation *op = v.getDefiningOp();
    bool ok = op && isa<ComputeDialect>(op->getDialect()) && isPure(op) &&
              op->getNumRegions() == 0 && !isa<ConstantOp>(op) &&
              (level != 1 || !isa<MatMulOp>(op));
    for (Value w : op ? op->getOperands() : ValueRange{}) {
      if (!ok)
        break;
      if (available(w))
        continue;
      ok = recomputable(w);
    }
    canRecompute[v] = ok;
    return ok;
  }

  /// Backward may read `w` itself: not a forward activation, or kept (a saved
  /// value not recomputed, or a cut point kept for recomputing from).
  bool available(Value w) {
    if (!fromInputs.contains(w) || isa<BlockArgument>(w))
      return true;
    int64_t p = phase.lookup(w.getDefiningOp());
    if (p < 0 || p % 2)
      return true;
    return kept.contains(w);
  }

  /// Every backward read of a recomputed value reads a clone made right before
  /// the first one.
  void rewrite(Block &entry) {
    DenseMap<Value, Value> cloneOf;
    std::function<Value(Value, Operation *)> materialize = [&](Value v,
                                                               Operation *before) {
      if (Value c = cloneOf.lookup(v))
        return c;
      Operation *def = v.getDefiningOp();
      IRMapping map;
      for (Value w : def->getOperands())
        if (!available(w))
          map.map(w, materialize(w, before));
      OpBuilder b(before);
      Operation *copy = b.clone(*def, map);
      copy->setAttr(zops::attr::kRecompute, b.getUnitAttr());
      if (auto p = before->getAttrOfType<IntegerAttr>(zops::attr::kMicroPhase))
        copy->setAttr(zops::attr::kMicroPhase, p);
      for (auto [orig, now] : llvm::zip(def->getResults(), copy->getResults()))
        cloneOf[orig] = now;
      return cloneOf.lookup(v);
    };
    SmallVector<Operation *> backward;
    for (Operation &op : entry)
      if (phase[&op] >= 0 && phase[&op] % 2 == 1)
        backward.push_back(&op);
    for (Operation *op : backward)
      for (OpOperand &use : op->getOpOperands())
        if (recompute.contains(use.get()))
          use.set(materialize(use.get(), op));
  }
};

} // namespace
