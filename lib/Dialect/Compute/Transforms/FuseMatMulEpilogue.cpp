//===- FuseMatMulEpilogue.cpp - A product's bias and residual adds --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Takes each add in step order: one whose operand is a product only it reads
// (compute.matmul, or a compute.fused_matmul with room for the other operand)
// becomes that product with the other operand as its bias or addend. Then each
// column sum (a reduce_sum over all but the last axis) of a tensor that a 2-D
// product also reads transposed as its lhs (a bias gradient beside its weight
// gradient) becomes that product's lhs_sums. Last, GELU's tanh form: a gelu_tanh
// of a product (with at most a bias; directly or through a reshape) becomes that
// product with the GELU in its epilogue, keeping the product as its
// pre_activation; a gelu_tanh_grad of a product only it reads becomes that
// product with the gradient in its epilogue.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_FUSEMATMULEPILOGUEPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero::compute;

namespace {

/// The fused product `add` becomes when `product` (one of its operands) is a
/// product only it reads and `other` can join it; null otherwise.
Value fuse(AddOp add, Value product, Value other) {
  auto result = cast<ShapedType>(add.getResult().getType());
  Operation *def = product.getDefiningOp();
  if (!def || !product.hasOneUse() || product.getType() != result ||
      !isa<MatMulOp, FusedMatMulOp>(def))
    return nullptr;
  auto otherType = cast<ShapedType>(other.getType());
  bool asBias = isColumnBias(otherType, result), asAddend = otherType == result;
  Value lhs = def->getOperand(0), rhs = def->getOperand(1), bias, addend;
  if (auto fused = dyn_cast<FusedMatMulOp>(def)) {
    if (fused.getActivation())
      return nullptr;
    bias = fused.getBias();
    addend = fused.getAddend();
  }
  // A bias first (a linear layer's), then an addend (the residual after it).
  if (asBias && !bias && !addend)
    bias = other;
  else if (asAddend && !addend)
    addend = other;
  else
    return nullptr;
  OpBuilder b(add);
  auto made = FusedMatMulOp::create(b, add.getLoc(), result, /*lhs_sums=*/Type(),
                                    /*pre_activation=*/Type(), lhs, rhs, bias, addend,
                                    /*activation_input=*/Value(), /*activation=*/nullptr);
  made->setDiscardableAttrs(def->getDiscardableAttrDictionary());
  return made.getResult();
}

/// Whether `sum` adds every row of a tensor of two or more dimensions: the
/// column sums, `[N]`.
bool isColumnSum(ReduceSumOp sum) {
  auto type = cast<ShapedType>(sum.getInput().getType());
  ArrayRef<int64_t> axes = sum.getAxes();
  if (type.getRank() < 2 || sum.getKeepdims() || (int64_t)axes.size() != type.getRank() - 1)
    return false;
  for (int64_t d = 0; d < (int64_t)axes.size(); ++d)
    if (axes[d] != d)
      return false;
  return true;
}

/// A 2-D product (unfused, or fused without lhs_sums) whose lhs is `g` as a
/// matrix transposed: g, or g's rows collapsed to [rows, N], then swapped. The
/// one that comes first; null if none.
Operation *productReadingTransposed(Value g) {
  SmallVector<Value> matrices;
  auto type = cast<ShapedType>(g.getType());
  if (type.getRank() == 2)
    matrices.push_back(g);
  for (Operation *user : g.getUsers())
    if (auto r = dyn_cast<ReshapeOp>(user)) {
      auto shape = cast<ShapedType>(r.getType()).getShape();
      if (shape.size() == 2 && shape[1] == type.getShape().back())
        matrices.push_back(r.getResult());
    }
  Operation *first = nullptr;
  for (Value m : matrices)
    for (Operation *user : m.getUsers()) {
      auto t = dyn_cast<TransposeOp>(user);
      if (!t || t.getPerm() != ArrayRef<int64_t>{1, 0})
        continue;
      for (OpOperand &use : t.getResult().getUses()) {
        Operation *p = use.getOwner();
        auto fused = dyn_cast<FusedMatMulOp>(p);
        if (use.getOperandNumber() != 0 ||
            !(isa<MatMulOp>(p) || (fused && !fused.getLhsSums() && !fused.getActivation())) ||
            cast<ShapedType>(p->getOperand(1).getType()).getRank() != 2 ||
            p->getBlock() != g.getParentBlock())
          continue;
        if (!first || p->isBeforeInBlock(first))
          first = p;
      }
    }
  return first;
}

/// `sum` as the lhs_sums of the product that reads its input transposed, when
/// every reader of `sum` comes after that product. Returns whether it did.
bool fuseColumnSum(ReduceSumOp sum) {
  if (!isColumnSum(sum))
    return false;
  Operation *product = productReadingTransposed(sum.getInput());
  if (!product || sum->getBlock() != product->getBlock())
    return false;
  for (Operation *user : sum.getResult().getUsers())
    if (user->getBlock() != product->getBlock() || !product->isBeforeInBlock(user))
      return false;
  Value bias, addend;
  if (auto fused = dyn_cast<FusedMatMulOp>(product)) {
    bias = fused.getBias();
    addend = fused.getAddend();
  }
  OpBuilder b(product);
  auto made = FusedMatMulOp::create(b, product->getLoc(), product->getResult(0).getType(),
                                    sum.getType(), /*pre_activation=*/Type(),
                                    product->getOperand(0), product->getOperand(1), bias, addend,
                                    /*activation_input=*/Value(), /*activation=*/nullptr);
  made->setDiscardableAttrs(product->getDiscardableAttrDictionary());
  product->getResult(0).replaceAllUsesWith(made.getResult());
  sum.getResult().replaceAllUsesWith(made.getLhsSums());
  product->erase();
  sum.erase();
  return true;
}

/// `v` as a tensor of `type` (same elements): itself, or a reshape of it (a
/// view in the plan).
Value reshapedTo(OpBuilder &b, Location loc, Value v, Type type) {
  return v.getType() == type ? v : ReshapeOp::create(b, loc, type, v).getResult();
}

/// The product `v` is, directly or through one reshape (a linear layer over
/// [batch * sequence, features] viewed as [batch, sequence, features], as Hugging
/// Face's GPT-2 writes it); null when neither.
Value productUnder(Value v) {
  if (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getInput();
  return v.getDefiningOp<MatMulOp>() || v.getDefiningOp<FusedMatMulOp>() ? v : Value();
}

/// `gelu` as the epilogue of the product it reads (directly or through a
/// reshape): a compute.matmul, or a compute.fused_matmul with only a bias. The
/// product's other readers (the GELU's gradient) then read the fused op's
/// pre_activation. Returns whether it did.
bool fuseGelu(GeluTanhOp gelu) {
  Value product = productUnder(gelu.getInput());
  if (!product)
    return false;
  Operation *def = product.getDefiningOp();
  if (def->getBlock() != gelu->getBlock())
    return false;
  Value bias;
  if (auto fused = dyn_cast<FusedMatMulOp>(def)) {
    if (fused.getAddend() || fused.getLhsSums() || fused.getActivation())
      return false;
    bias = fused.getBias();
  }
  OpBuilder b(def);
  auto made = FusedMatMulOp::create(b, def->getLoc(), product.getType(), /*lhs_sums=*/Type(),
                                    product.getType(), def->getOperand(0), def->getOperand(1),
                                    bias, /*addend=*/Value(), /*activation_input=*/Value(),
                                    b.getStringAttr("gelu_tanh"));
  made->setDiscardableAttrs(def->getDiscardableAttrDictionary());
  product.replaceAllUsesWith(made.getPreActivation());
  b.setInsertionPoint(gelu);
  gelu.getResult().replaceAllUsesWith(
      reshapedTo(b, gelu.getLoc(), made.getResult(), gelu.getType()));
  gelu.erase();
  def->erase();
  return true;
}

/// `grad` as the epilogue of the product that only it reads (its output's
/// gradient, a compute.matmul, directly or through a reshape only it reads), when
/// the pre-activation it reads exists before that product. Returns whether it did.
bool fuseGeluGrad(GeluTanhGradOp grad) {
  Value g = grad.getGrad();
  auto r = g.getDefiningOp<ReshapeOp>();
  if (r && !g.hasOneUse())
    return false;
  Value product = r ? r.getInput() : g;
  auto def = product.getDefiningOp<MatMulOp>();
  Value input = grad.getInput();
  if (!def || !product.hasOneUse() || def->getBlock() != grad->getBlock())
    return false;
  Operation *inputDef = input.getDefiningOp();
  if (inputDef ? inputDef->getBlock() != def->getBlock() || !inputDef->isBeforeInBlock(def)
               : cast<BlockArgument>(input).getOwner() != def->getBlock())
    return false;
  OpBuilder b(def);
  auto made = FusedMatMulOp::create(
      b, def->getLoc(), product.getType(), /*lhs_sums=*/Type(), /*pre_activation=*/Type(),
      def.getLhs(), def.getRhs(), /*bias=*/Value(), /*addend=*/Value(),
      reshapedTo(b, grad.getLoc(), input, product.getType()), b.getStringAttr("gelu_tanh"));
  made->setDiscardableAttrs(def->getDiscardableAttrDictionary());
  b.setInsertionPoint(grad);
  grad.getResult().replaceAllUsesWith(
      reshapedTo(b, grad.getLoc(), made.getResult(), grad.getType()));
  grad.erase();
  if (r)
    r.erase();
  def->erase();
  return true;
}

struct FuseMatMulEpiloguePass
    : public zero::impl::FuseMatMulEpiloguePassBase<FuseMatMulEpiloguePass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp op) { adds.push_back(op); });
    for (AddOp add : adds) {
      Value made;
      for (auto [product, other] : {std::pair{add.getLhs(), add.getRhs()},
                                    std::pair{add.getRhs(), add.getLhs()}})
        if ((made = fuse(add, product, other))) {
          Operation *def = product.getDefiningOp();
          add.getResult().replaceAllUsesWith(made);
          add.erase();
          def->erase();
          break;
        }
    }
    SmallVector<ReduceSumOp> sums;
    getOperation().walk([&](ReduceSumOp op) { sums.push_back(op); });
    for (ReduceSumOp sum : sums)
      fuseColumnSum(sum);
    SmallVector<GeluTanhOp> gelus;
    getOperation().walk([&](GeluTanhOp op) { gelus.push_back(op); });
    for (GeluTanhOp gelu : gelus)
      fuseGelu(gelu);
    SmallVector<GeluTanhGradOp> grads;
    getOperation().walk([&](GeluTanhGradOp op) { grads.push_back(op); });
    for (GeluTanhGradOp grad : grads)
      fuseGeluGrad(grad);
  }
};

} // namespace
