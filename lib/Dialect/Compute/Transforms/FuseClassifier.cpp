//===- FuseClassifier.cpp - The loss and its gradient in one op ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Pairs each softmax_cross_entropy with the one softmax_cross_entropy_grad that
// reads its log-probabilities, when that gradient's loss gradient does not depend
// on the loss: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace zero {
#define GEN_PASS_DEF_FUSECLASSIFIERPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero::compute;

namespace {

/// The ops after `at` in its block that `v` is computed from, in block order, when
/// all of them are pure and none reads `at`'s results or anything made after it
/// but them: moved before `at`, they compute `v` there. Failure otherwise.
FailureOr<SmallVector<Operation *>> hoistableSlice(Value v, Operation *at) {
  Block *block = at->getBlock();
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value w = work.pop_back_val();
    Operation *def = w.getDefiningOp();
    if (!def) {
      if (cast<BlockArgument>(w).getOwner() != block)
        return failure();
      continue; // an argument: there from the start
    }
    if (def->getBlock() != block)
      return failure();
    if (def == at)
      return failure(); // reads the loss itself
    if (def->isBeforeInBlock(at) || slice.contains(def))
      continue;
    if (!isPure(def) || def->getNumRegions() != 0)
      return failure();
    slice.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ops = slice.takeVector();
  llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ops;
}

/// The gradient op that is the only reader of `loss`'s log-probabilities, with
/// the forward's labels, weights, reduction and ignore index.
SoftmaxCrossEntropyGradOp pairedGrad(SoftmaxCrossEntropyOp loss) {
  Value logp = loss.getLogProb();
  if (!logp.hasOneUse())
    return nullptr;
  auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(*logp.getUsers().begin());
  if (!grad || grad.getLogProb() != logp || grad.getLabels() != loss.getLabels() ||
      grad.getWeights() != loss.getWeights() ||
      grad.getReduction() != loss.getReduction() ||
      grad.getIgnoreIndexAttr() != loss.getIgnoreIndexAttr() ||
      grad.getResult().getType() != loss.getScores().getType() ||
      grad.getGrad().getType() != loss.getLoss().getType())
    return nullptr;
  return grad;
}

struct FuseClassifierPass
    : public zero::impl::FuseClassifierPassBase<FuseClassifierPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxCrossEntropyOp> losses;
    getOperation().walk([&](SoftmaxCrossEntropyOp op) { losses.push_back(op); });
    for (SoftmaxCrossEntropyOp loss : losses) {
      SoftmaxCrossEntropyGradOp grad = pairedGrad(loss);
      if (!grad)
        continue;
      FailureOr<SmallVector<Operation *>> seed = hoistableSlice(grad.getGrad(), loss);
      if (failed(seed))
        continue;
      for (Operation *op : *seed)
        op->moveBefore(loss);
      OpBuilder b(loss);
      auto fused = SoftmaxCrossEntropyWithGradOp::create(
          b, loss.getLoc(), loss.getLoss().getType(), loss.getScores().getType(),
          loss.getScores(), loss.getLabels(), grad.getGrad(), loss.getWeights(),
          loss.getReductionAttr(), loss.getIgnoreIndexAttr());
      // The forward's marks (its micro-batch phase) stay with it.
      for (NamedAttribute a : loss->getDiscardableAttrs())
        fused->setAttr(a.getName(), a.getValue());
      loss.getLoss().replaceAllUsesWith(fused.getLoss());
      grad.getResult().replaceAllUsesWith(fused.getScoresGrad());
      grad.erase();
      loss.erase();
    }
  }
};

} // namespace
