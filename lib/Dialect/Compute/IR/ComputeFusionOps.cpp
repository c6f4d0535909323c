//===- ComputeFusionOps.cpp - compute.fused and what its body may hold ----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

#include <cmath>

using namespace mlir;
using namespace zero::compute;

/// The element types a fused kernel computes (f64 would compute in f64 unfused).
static bool isFusedFloat(Type t) {
  auto shaped = dyn_cast<RankedTensorType>(t);
  if (!shaped)
    return false;
  Type e = shaped.getElementType();
  return e.isF32() || e.isBF16() || e.isF16();
}

bool zero::compute::isFusableElementwise(Operation *op) {
  // The binary and other ops a fused program has an instruction for, and every
  // unary op (zplan/UnaryOps.def).
  if (!isa<AddOp, SubOp, MulOp, DivOp, PowOp, CastOp, WhereOp, ReluGradOp, GeluGradOp,
           GeluTanhGradOp
#define ZERO_UNARY_OP(ID, ...) , ID##Op
#include "zplan/UnaryOps.def"
           >(op))
    return false;
  if (!isFusedFloat(op->getResult(0).getType()))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    Type t = operand.get().getType();
    bool condition = isa<WhereOp>(op) && operand.getOperandNumber() == 0;
    if (condition ? !cast<RankedTensorType>(t).getElementType().isInteger(1)
                  : !isFusedFloat(t))
      return false;
  }
  return true;
}

bool zero::compute::isScalarFloatConstant(Operation *op) {
  auto cst = dyn_cast<ConstantOp>(op);
  if (!cst || !isa<DenseElementsAttr>(cst.getValue()))
    return false;
  auto t = cast<RankedTensorType>(cst.getResult().getType());
  return t.getNumElements() == 1 && isFusedFloat(t);
}

std::optional<double> zero::compute::finiteSplatOf(Value v, Type elementType) {
  auto cst = v.getDefiningOp<ConstantOp>();
  auto value = cst ? dyn_cast<DenseFPElementsAttr>(cst.getValue()) : nullptr;
  if (!value || !value.isSplat() || value.getElementType() != elementType)
    return std::nullopt;
  double d = value.getSplatValue<APFloat>().convertToDouble();
  if (!std::isfinite(d))
    return std::nullopt;
  return d;
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ") << body.getNumArguments() << " arguments for "
                                    << getInputs().size() << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("body argument ")
             << arg.getArgNumber() << " has type " << arg.getType() << ", its input "
             << in.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in compute.yield");
  if (yield.getValue().getType() != getResult().getType())
    return emitOpError("yields ") << yield.getValue().getType() << " for a result of type "
                                  << getResult().getType();
  if (isa<BlockArgument>(yield.getValue()))
    return emitOpError("body computes nothing: it yields an input");
  ArrayRef<int64_t> shape = getResult().getType().getShape();
  for (Operation &op : body.without_terminator()) {
    if (isScalarFloatConstant(&op))
      continue;
    if (!isFusableElementwise(&op))
      return op.emitOpError("cannot be part of a compute.fused body: only elementwise "
                            "ops on f32, bf16 and f16 values and scalar constants can");
    auto t = cast<RankedTensorType>(op.getResult(0).getType());
    auto joint = broadcastShapes(t.getShape(), shape);
    if (failed(joint) || ArrayRef<int64_t>(*joint) != shape)
      return op.emitOpError("result shape does not broadcast to the fused result's");
    if (auto where = dyn_cast<WhereOp>(op); where && !isa<BlockArgument>(where.getCondition()))
      return op.emitOpError("in a compute.fused body reads its condition from an input");
  }
  for (BlockArgument arg : body.getArguments()) {
    auto t = cast<RankedTensorType>(arg.getType());
    auto joint = broadcastShapes(t.getShape(), shape);
    if (failed(joint) || ArrayRef<int64_t>(*joint) != shape)
      return emitOpError("input ") << arg.getArgNumber() << " of type " << t
                                   << " does not broadcast to the result";
  }
  return success();
}

bool zero::compute::isColumnBias(ShapedType bias, ShapedType result) {
  if (bias.getRank() < 1 || result.getRank() < 1 ||
      bias.getElementType() != result.getElementType() ||
      bias.getShape().back() != result.getShape().back() || bias.getRank() > result.getRank())
    return false;
  return llvm::all_of(bias.getShape().drop_back(), [](int64_t d) { return d == 1; });
}

LogicalResult FusedMatMulOp::verify() {
  auto lhs = cast<ShapedType>(getLhs().getType()), rhs = cast<ShapedType>(getRhs().getType());
  auto result = cast<ShapedType>(getResult().getType());
  auto shape = matmulShape(lhs.getShape(), rhs.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != result.getShape())
    return emitOpError("result shape does not match the matrix product");
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != result.getElementType())
    return emitOpError("operands and result must have one element type");
  if (!getBias() && !getAddend() && !getLhsSums() && !getActivation())
    return emitOpError("needs a bias, an addend, an activation or lhs_sums (else it is a "
                       "compute.matmul)");
  if (std::optional<StringRef> act = getActivation()) {
    if (*act != "gelu_tanh")
      return emitOpError("activation must be \"gelu_tanh\", not \"") << *act << "\"";
    if ((bool)getPreActivation() == (bool)getActivationInput())
      return emitOpError("an activation needs either a pre_activation result (forward) or "
                         "an activation_input (its gradient)");
    if (getAddend() || getLhsSums())
      return emitOpError("an activation takes no addend or lhs_sums");
    if (getActivationInput() && getBias())
      return emitOpError("an activation's gradient takes no bias");
    Value aux = getPreActivation() ? getPreActivation() : getActivationInput();
    if (aux.getType() != result)
      return emitOpError("the pre-activation must have the result's type");
  } else if (getPreActivation() || getActivationInput()) {
    return emitOpError("a pre_activation or activation_input needs an activation");
  }
  if (Value sums = getLhsSums()) {
    auto type = cast<ShapedType>(sums.getType());
    if (lhs.getRank() != 2 || rhs.getRank() != 2 || type.getRank() != 1 ||
        type.getDimSize(0) != lhs.getDimSize(0) ||
        type.getElementType() != result.getElementType())
      return emitOpError("lhs_sums need a 2-D product and are [M] of the result's element "
                         "type, M the rows of lhs");
  }
  if (getBias() && !isColumnBias(cast<ShapedType>(getBias().getType()), result))
    return emitOpError("bias must be [N] (or ones then N) of the result's element type, N "
                       "its last dimension");
  if (getAddend() && getAddend().getType() != result)
    return emitOpError("addend must have the result's type");
  return success();
}
