//===- ComputeOps.cpp - Compute dialect verifiers and folders -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Every op checks its shapes fully: the Debian MLIR build has no assertions, so IR
// that slips past a verifier would crash later passes instead of failing cleanly.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Support/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace zero::compute;

FailureOr<SmallVector<int64_t>>
zero::compute::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  if (auto out = zero::broadcastShapes(lhs, rhs))
    return *out;
  return failure();
}

FailureOr<SmallVector<int64_t>>
zero::compute::matmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  if (lhs.empty() || rhs.empty())
    return failure();
  SmallVector<int64_t> a(lhs), b(rhs);
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return failure();
  auto batch = broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (failed(batch))
    return failure();
  SmallVector<int64_t> out = *batch;
  if (!lhsVector)
    out.push_back(a[a.size() - 2]);
  if (!rhsVector)
    out.push_back(b.back());
  return out;
}

static ShapedType shapedOf(Value v) { return cast<ShapedType>(v.getType()); }

/// Checks that `operands` broadcast to exactly the shape of `result`.
static LogicalResult verifyBroadcast(Operation *op, ValueRange operands,
                                     Value result) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto next = broadcastShapes(shape, shapedOf(v).getShape());
    if (failed(next))
      return op->emitOpError("operand shapes do not broadcast together");
    shape = *next;
  }
  if (ArrayRef<int64_t>(shape) != shapedOf(result).getShape())
    return op->emitOpError("result shape does not equal the broadcast shape of "
                           "the operands");
  return success();
}

/// Shared by all binary elementwise ops: broadcast shapes and one element type
/// (the comparison returns i1).
static LogicalResult verifyBinary(Operation *op, bool returnsBool) {
  Type lhs = shapedOf(op->getOperand(0)).getElementType();
  Type rhs = shapedOf(op->getOperand(1)).getElementType();
  Type res = shapedOf(op->getResult(0)).getElementType();
  if (lhs != rhs)
    return op->emitOpError("operands have different element types");
  if (returnsBool ? !res.isInteger(1) : res != lhs)
    return op->emitOpError(returnsBool ? "result element type must be i1"
                                       : "result element type must equal the "
                                         "operands' element type");
  return verifyBroadcast(op, op->getOperands(), op->getResult(0));
}

LogicalResult AddOp::verify() { return verifyBinary(*this, false); }
LogicalResult SubOp::verify() { return verifyBinary(*this, false); }
LogicalResult MulOp::verify() { return verifyBinary(*this, false); }
LogicalResult DivOp::verify() { return verifyBinary(*this, false); }
/// ONNX Pow lets the exponent have its own element type; the result has the base's.
LogicalResult PowOp::verify() {
  if (shapedOf(getResult()).getElementType() != shapedOf(getLhs()).getElementType())
    return emitOpError("result element type must equal the base's");
  return verifyBroadcast(*this, getOperands(), getResult());
}
LogicalResult EqualOp::verify() { return verifyBinary(*this, true); }

LogicalResult WhereOp::verify() {
  if (shapedOf(getLhs()).getElementType() != shapedOf(getRhs()).getElementType() ||
      shapedOf(getLhs()).getElementType() != shapedOf(getResult()).getElementType())
    return emitOpError("branches and result must have one element type");
  return verifyBroadcast(*this, getOperands(), getResult());
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult MatMulOp::verify() {
  auto shape = matmulShape(shapedOf(getLhs()).getShape(), shapedOf(getRhs()).getShape());
  if (failed(shape))
    return emitOpError("operand shapes are not compatible for a matrix product");
  if (ArrayRef<int64_t>(*shape) != shapedOf(getResult()).getShape())
    return emitOpError("result shape does not match the matrix product");
  Type t = shapedOf(getLhs()).getElementType();
  if (t != shapedOf(getRhs()).getElementType() ||
      t != shapedOf(getResult()).getElementType())
    return emitOpError("operands and result must have one element type");
  return success();
}

std::optional<double> zero::compute::scalarConstant(Value v) {
  auto cst = v.getDefiningOp<ConstantOp>();
  auto attr = cst ? dyn_cast<DenseFPElementsAttr>(cst.getValue()) : nullptr;
  if (!attr || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.value_begin<APFloat>()).convertToDouble();
}

LogicalResult zero::compute::verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return op->emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto in = shapedOf(getInput());
  if (failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  double scale = getScale() ? getScale()->convertToDouble() : 1.0;
  if (!std::isfinite(scale))
    return emitOpError("scale must be finite");
  if (!getBias() && scale == 1.0)
    return success();
  if ((int64_t)getAxis() != std::max<int64_t>(in.getRank(), 1) - 1)
    return emitOpError("takes a scale or bias only along its last dimension");
  if (Value bias = getBias()) {
    auto b = shapedOf(bias);
    FailureOr<SmallVector<int64_t>> out = broadcastShapes(b.getShape(), in.getShape());
    if (b.getElementType() != in.getElementType() || failed(out) ||
        ArrayRef<int64_t>(*out) != in.getShape())
      return emitOpError("bias must be of the input's element type and broadcast to "
                         "its shape");
  }
  return success();
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), shapedOf(getInput()).getRank());
}

LogicalResult LayerNormOp::verify() {
  auto in = shapedOf(getInput());
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, axis, in.getRank())))
    return failure();
  ArrayRef<int64_t> normShape = in.getShape().drop_front(axis);
  for (Value v : {getScale(), getBias()})
    if (failed(broadcastShapes(shapedOf(v).getShape(), normShape)) ||
        shapedOf(v).getRank() > (int64_t)normShape.size())
      return emitOpError("scale and bias must broadcast to the normalized "
                         "dimensions");
  if (getResult().getType() != in)
    return emitOpError("result type must equal the input type");
  SmallVector<int64_t> stat(in.getShape());
  for (int64_t i = axis; i < in.getRank(); ++i)
    stat[i] = 1;
  for (Value v : {getMean(), getInvStdDev()})
    if (shapedOf(v).getShape() != ArrayRef<int64_t>(stat))
      return emitOpError("mean and inv_std_dev must have the input shape with the "
                         "normalized dimensions set to 1");
  return success();
}

LogicalResult zero::compute::verifyCrossEntropy(Operation *op, ShapedType scores,
                                                StringRef scoresName, Value labels,
                                                Value weights, StringRef reduction,
                                                ShapedType perPosition, StringRef name) {
  if (scores.getRank() < 2)
    return op->emitOpError() << scoresName << " must have rank >= 2 ([N, C, ...])";
  SmallVector<int64_t> expected(scores.getShape());
  expected.erase(expected.begin() + 1);
  if (shapedOf(labels).getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("labels must have the scores' shape without dimension 1");
  if (weights && shapedOf(weights).getShape() != ArrayRef<int64_t>{scores.getDimSize(1)})
    return op->emitOpError("weights must have shape [C]");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return op->emitOpError("reduction must be none, sum or mean, not '") << reduction << "'";
  if (reduction == "none" ? perPosition.getShape() != ArrayRef<int64_t>(expected)
                          : perPosition.getRank() != 0)
    return op->emitOpError() << name << " shape does not match the reduction";
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  auto scores = shapedOf(getScores());
  if (failed(verifyCrossEntropy(*this, scores, "scores", getLabels(), getWeights(),
                                getReduction(), shapedOf(getLoss()), "loss")))
    return failure();
  // Mixed precision reads 16-bit scores into f32 log-probabilities.
  auto logp = shapedOf(getLogProb());
  if (logp.getShape() != scores.getShape() ||
      (logp.getElementType() != scores.getElementType() &&
       !(scores.getElementType().getIntOrFloatBitWidth() == 16 &&
         logp.getElementType().isF32())))
    return emitOpError("log_prob must have the scores' type, or be f32 for 16-bit scores");
  return success();
}

template <typename ReduceOp> static LogicalResult verifyReduce(ReduceOp op) {
  auto in = shapedOf(op.getInput());
  ArrayRef<int64_t> axes = op.getAxes();
  SmallVector<int64_t> expected;
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= in.getRank())
      return op.emitOpError("axis ") << a << " is out of range";
    if (i > 0 && a <= axes[i - 1])
      return op.emitOpError("axes must be sorted and unique");
  }
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      expected.push_back(in.getDimSize(d));
    else if (op.getKeepdims())
      expected.push_back(1);
  }
  auto res = shapedOf(op.getResult());
  if (res.getShape() != ArrayRef<int64_t>(expected))
    return op.emitOpError("result shape does not match the reduction");
  if (res.getElementType() != in.getElementType())
    return op.emitOpError("result element type must equal the input's");
  return success();
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }

LogicalResult ReshapeOp::verify() {
  auto in = shapedOf(getInput()), out = shapedOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change");
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("element count changes from ")
           << in.getNumElements() << " to " << out.getNumElements();
  return success();
}

LogicalResult TransposeOp::verify() {
  auto in = shapedOf(getInput()), out = shapedOf(getResult());
  ArrayRef<int64_t> perm = getPerm();
  if ((int64_t)perm.size() != in.getRank())
    return emitOpError("perm must have one entry per input dimension");
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError("perm is not a permutation");
    seen[p] = true;
  }
  if (in.getElementType() != out.getElementType() || out.getRank() != in.getRank())
    return emitOpError("result type does not match the permuted input");
  for (auto [i, p] : llvm::enumerate(perm))
    if (out.getDimSize(i) != in.getDimSize(p))
      return emitOpError("result dimension ") << i << " must equal input dimension "
                                              << p;
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (auto [i, v] : llvm::enumerate(p))
      if ((int64_t)i != v)
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getInput();
  // transpose(transpose(x, p), q) is x when p[q[i]] == i for every i.
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> p = inner.getPerm();
    SmallVector<int64_t> composed;
    for (int64_t q : perm)
      composed.push_back(p[q]);
    if (isIdentity(composed))
      return inner.getInput();
  }
  return {};
}

LogicalResult SliceOp::verify() {
  auto in = shapedOf(getInput()), out = shapedOf(getResult());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if ((int64_t)starts.size() != in.getRank() || (int64_t)steps.size() != in.getRank() ||
      out.getRank() != in.getRank())
    return emitOpError("starts, steps and the result need one entry per dimension");
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change");
  return verifySliceWindow(*this, in, out, starts, steps, "reads outside the input");
}

LogicalResult zero::compute::verifySliceWindow(Operation *op, ShapedType full,
                                               ShapedType part, ArrayRef<int64_t> starts,
                                               ArrayRef<int64_t> steps, StringRef outside) {
  for (int64_t d = 0; d < full.getRank(); ++d) {
    int64_t n = part.getDimSize(d), dim = full.getDimSize(d);
    if (steps[d] == 0)
      return op->emitOpError("step of dimension ") << d << " is zero";
    if (n == 0)
      continue;
    int64_t last = starts[d] + (n - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= dim || last < 0 || last >= dim)
      return op->emitOpError("dimension ") << d << " " << outside;
  }
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto out = shapedOf(getResult());
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, axis, out.getRank())))
    return failure();
  int64_t total = 0;
  for (Value v : getInputs()) {
    auto t = shapedOf(v);
    if (t.getRank() != out.getRank() || t.getElementType() != out.getElementType())
      return emitOpError("inputs must have the result's rank and element type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != out.getDimSize(d))
        return emitOpError("inputs differ from the result outside the axis");
    total += t.getDimSize(axis);
  }
  if (total != out.getDimSize(axis))
    return emitOpError("result axis size must be the sum of the inputs'");
  return success();
}

LogicalResult ExpandOp::verify() {
  auto in = shapedOf(getInput()), out = shapedOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type must not change");
  auto b = broadcastShapes(in.getShape(), out.getShape());
  if (failed(b) || ArrayRef<int64_t>(*b) != out.getShape())
    return emitOpError("input does not broadcast to the result shape");
  return success();
}

LogicalResult GatherOp::verify() {
  auto data = shapedOf(getData()), idx = shapedOf(getIndices());
  int64_t axis = getAxis();
  if (data.getRank() == 0)
    return emitOpError("data must have rank >= 1");
  if (failed(verifyAxis(*this, axis, data.getRank())))
    return failure();
  SmallVector<int64_t> expected(data.getShape().take_front(axis));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, data.getShape().drop_front(axis + 1));
  auto out = shapedOf(getResult());
  if (out.getShape() != ArrayRef<int64_t>(expected) ||
      out.getElementType() != data.getElementType())
    return emitOpError("result type must be data[:axis] ++ indices ++ "
                       "data[axis+1:] of data's element type");
  return success();
}

LogicalResult TriluOp::verify() {
  if (shapedOf(getInput()).getRank() < 2)
    return emitOpError("input must have rank >= 2");
  return success();
}

#define GET_OP_CLASSES
#include "zero/Dialect/Compute/IR/ComputeOps.cpp.inc"
