//===- ComputeTrainingOps.cpp - Verifiers of backward ops -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

using namespace mlir;
using namespace zero::compute;

static ShapedType shapedOf(Value v) { return cast<ShapedType>(v.getType()); }

LogicalResult NonfiniteCountOp::verify() {
  if (getInputs().empty())
    return emitOpError("counts at least one tensor");
  return success();
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError("sums at least one tensor");
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), shapedOf(getOutput()).getRank());
}

LogicalResult LayerNormGradOp::verify() {
  auto x = shapedOf(getInput());
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis >= x.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank " << x.getRank();
  if (getGrad().getType() != x || getInputGrad().getType() != x)
    return emitOpError("grad and input_grad must have the input type");
  if (getAccumulate() && getAccumulate().getType() != x)
    return emitOpError("accumulate must have the input type");
  SmallVector<int64_t> stat(x.getShape());
  for (int64_t i = axis; i < x.getRank(); ++i)
    stat[i] = 1;
  if (shapedOf(getMean()).getShape() != ArrayRef<int64_t>(stat) ||
      shapedOf(getInvStdDev()).getShape() != ArrayRef<int64_t>(stat))
    return emitOpError("mean and inv_std_dev must have the input shape with the "
                       "normalized dimensions set to 1");
  ArrayRef<int64_t> norm = x.getShape().drop_front(axis);
  auto sb = broadcastShapes(shapedOf(getScale()).getShape(), norm);
  if (failed(sb) || ArrayRef<int64_t>(*sb) != norm)
    return emitOpError("scale must broadcast to the normalized dimensions");
  for (Value v : {getScaleGrad(), getBiasGrad()})
    if (shapedOf(v).getShape() != norm)
      return emitOpError("scale_grad and bias_grad must have the normalized shape");
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  auto logp = shapedOf(getLogProb());
  if (failed(verifyCrossEntropy(*this, logp, "log_prob", getLabels(), getWeights(),
                                getReduction(), shapedOf(getGrad()), "grad")))
    return failure();
  // Mixed precision: the 16-bit scores' gradient from f32 log-probabilities.
  auto result = shapedOf(getResult());
  if (result.getShape() != logp.getShape() ||
      (result.getElementType() != logp.getElementType() &&
       !(result.getElementType().getIntOrFloatBitWidth() == 16 &&
         logp.getElementType().isF32())))
    return emitOpError("result must have the log_prob's type, or be 16-bit for f32 "
                       "log_prob");
  return success();
}

LogicalResult SoftmaxCrossEntropyWithGradOp::verify() {
  auto scores = shapedOf(getScores());
  auto loss = shapedOf(getLoss());
  if (failed(verifyCrossEntropy(*this, scores, "scores", getLabels(), getWeights(),
                                getReduction(), loss, "loss")))
    return failure();
  // Mixed precision: the loss of 16-bit scores is f32.
  Type st = scores.getElementType(), lt = loss.getElementType();
  if (lt != st && !(st.getIntOrFloatBitWidth() == 16 && lt.isF32()))
    return emitOpError("loss must have the scores' element type, or be f32 for 16-bit "
                       "scores");
  if (getGrad().getType() != loss)
    return emitOpError("grad must have the loss's type");
  if (getWeights() && shapedOf(getWeights()).getElementType() != lt)
    return emitOpError("weights must have the loss's element type");
  if (getScoresGrad().getType() != scores)
    return emitOpError("scores_grad must have the scores' type");
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto out = shapedOf(getResult()), idx = shapedOf(getIndices());
  int64_t axis = getAxisAttr().getInt();
  if (out.getRank() == 0 || axis < 0 || axis >= out.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank "
                                << out.getRank();
  SmallVector<int64_t> expected(out.getShape().take_front(axis));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, out.getShape().drop_front(axis + 1));
  if (shapedOf(getGrad()).getShape() != ArrayRef<int64_t>(expected) ||
      shapedOf(getGrad()).getElementType() != out.getElementType())
    return emitOpError("grad must have the shape of the gather's result");
  return success();
}

LogicalResult SliceGradOp::verify() {
  auto g = shapedOf(getGrad()), out = shapedOf(getResult());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if ((int64_t)starts.size() != out.getRank() || (int64_t)steps.size() != out.getRank() ||
      g.getRank() != out.getRank() || g.getElementType() != out.getElementType())
    return emitOpError("starts, steps and grad need one entry per result dimension");
  return verifySliceWindow(*this, out, g, starts, steps, "writes outside the result");
}
