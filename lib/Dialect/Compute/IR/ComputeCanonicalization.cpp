//===- ComputeCanonicalization.cpp - Rewrites the canonicalizer applies ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

#include "mlir/IR/PatternMatch.h"


using namespace mlir;
using namespace zero::compute;

namespace {

/// A sum of slice gradients whose windows tile their tensor along one axis is
/// their concatenation. The gradient of a split (a fused QKV projection's) is
/// then one copy, not a zero-filled tensor per part and the adds over them. The
/// same values: each element is one part's, plus zeros.
struct SliceGradSumIsConcat : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(add.getType());
    // The tree of adds (each read only by the add above it) over slice gradients.
    SmallVector<SliceGradOp> parts;
    SmallVector<Value> work = {add.getLhs(), add.getRhs()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (v.getType() != type)
        return failure(); // a broadcast operand
      Operation *def = v.getDefiningOp();
      if (!def || !def->hasOneUse() || !def->getDiscardableAttrDictionary().empty())
        return failure(); // read elsewhere, or marked by a pass
      if (auto inner = dyn_cast<AddOp>(def)) {
        work.push_back(inner.getLhs());
        work.push_back(inner.getRhs());
      } else if (auto part = dyn_cast<SliceGradOp>(def)) {
        parts.push_back(part);
      } else {
        return failure();
      }
    }
    // Whole but along one axis, in unit steps, and side by side from 0 to its end.
    int64_t axis = -1;
    for (SliceGradOp part : parts) {
      auto shape = cast<RankedTensorType>(part.getGrad().getType()).getShape();
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (part.getSteps()[d] != 1 && shape[d] > 1)
          return failure();
        if (shape[d] == type.getDimSize(d))
          continue;
        if (axis >= 0 && axis != d)
          return failure();
        axis = d;
      }
    }
    if (axis < 0)
      return failure();
    llvm::sort(parts, [&](SliceGradOp x, SliceGradOp y) {
      return x.getStarts()[axis] < y.getStarts()[axis];
    });
    int64_t next = 0;
    SmallVector<Value> inputs;
    for (SliceGradOp part : parts) {
      if (part.getStarts()[axis] != next)
        return failure();
      next += cast<RankedTensorType>(part.getGrad().getType()).getDimSize(axis);
      inputs.push_back(part.getGrad());
    }
    if (next != type.getDimSize(axis))
      return failure();
    rewriter.replaceOpWithNewOp<ConcatOp>(add, type, inputs, axis);
    return success();
  }
};

/// A softmax gradient times a constant scalar is the softmax gradient with that
/// scale (attention's 1/sqrt(d) in its backward): the same values in one kernel
/// instead of two.
struct ScaledSoftmaxGrad : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    for (auto [grad, other] : bothOrders(mul.getLhs(), mul.getRhs())) {
      auto sg = grad.getDefiningOp<SoftmaxGradOp>();
      if (!sg || !sg->hasOneUse() || sg.getScale().convertToDouble() != 1.0 ||
          sg.getType() != mul.getType())
        continue;
      std::optional<double> scale = finiteSplatOf(other, sg.getType().getElementType());
      if (!scale)
        continue;
      rewriter.replaceOpWithNewOp<SoftmaxGradOp>(mul, sg.getType(), sg.getOutput(),
                                                 sg.getGrad(), sg.getAxisAttr(),
                                                 rewriter.getF64FloatAttr(*scale));
      rewriter.eraseOp(sg);
      return success();
    }
    return failure();
  }
};

/// A layer norm's input gradient plus another gradient of the same type (the
/// residual connection around a pre-norm block) is the layer norm gradient with
/// that tensor to accumulate: the sum is written once, not a gradient that an add
/// then reads back. The same bits: the kernel adds as the add kernel does.
struct LayerNormGradAccumulates : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (auto [grad, other] : bothOrders(add.getLhs(), add.getRhs())) {
      auto lng = grad.getDefiningOp<LayerNormGradOp>();
      if (!lng || grad != lng.getInputGrad() || !grad.hasOneUse() || lng.getAccumulate() ||
          other.getType() != add.getType() || grad.getType() != add.getType() ||
          lng->getDiscardableAttrDictionary() != add->getDiscardableAttrDictionary())
        continue;
      // Computed where the layer norm gradient was: `other` must exist there.
      Operation *def = other.getDefiningOp();
      if (def ? (def->getBlock() != lng->getBlock() || !def->isBeforeInBlock(lng))
              : cast<BlockArgument>(other).getOwner() != lng->getBlock())
        continue;
      rewriter.setInsertionPoint(lng);
      auto merged = LayerNormGradOp::create(
          rewriter, lng.getLoc(), lng.getResultTypes(), lng.getInput(), lng.getScale(),
          lng.getMean(), lng.getInvStdDev(), lng.getGrad(), other, lng.getAxisAttr());
      merged->setDiscardableAttrs(lng->getDiscardableAttrDictionary());
      rewriter.replaceAllUsesWith(lng.getScaleGrad(), merged.getScaleGrad());
      rewriter.replaceAllUsesWith(lng.getBiasGrad(), merged.getBiasGrad());
      rewriter.replaceOp(add, merged.getInputGrad());
      rewriter.eraseOp(lng);
      return success();
    }
    return failure();
  }
};

} // namespace

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ScaledSoftmaxGrad>(context);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<SliceGradSumIsConcat, LayerNormGradAccumulates>(context);
}
