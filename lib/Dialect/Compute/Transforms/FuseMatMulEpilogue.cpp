//===- FuseMatMulEpilogue.cpp - A product's bias and residual adds --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Takes each add in step order: one whose operand is a product only it reads
// (compute.matmul, or a compute.fused_matmul with room for the other operand)
// becomes that product with the other operand as its bias or addend. Then each
// column sum (a reduce_sum over all but the last axis) of a tensor that a 2-D
// product also reads transposed as its lhs (a bias gradient beside its weight
// gradient) becomes that product's lhs_sums. See Passes.td.
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
  auto made = FusedMatMulOp::create(b, add.getLoc(), result, /*lhs_sums=*/Type(), lhs, rhs,
                                    bias, addend);
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
        if (use.getOperandNumber() != 0 || !(isa<MatMulOp>(p) || (fused && !fused.getLhsSums())) ||
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
                                    sum.getType(), product->getOperand(0),
                                    product->getOperand(1), bias, addend);
  made->setDiscardableAttrs(product->getDiscardableAttrDictionary());
  product->getResult(0).replaceAllUsesWith(made.getResult());
  sum.getResult().replaceAllUsesWith(made.getLhsSums());
  product->erase();
  sum.erase();
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
  }
};

} // namespace
