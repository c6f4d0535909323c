//===- FuseMatMulEpilogue.cpp - A product's bias and residual adds --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Takes each add in step order: one whose operand is a product only it reads
// (compute.matmul, or a compute.fused_matmul with room for the other operand)
// becomes that product with the other operand as its bias or addend. See
// Passes.td.
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
  Value made = FusedMatMulOp::create(b, add.getLoc(), result, lhs, rhs, bias, addend);
  made.getDefiningOp()->setDiscardableAttrs(def->getDiscardableAttrDictionary());
  return made;
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
  }
};

} // namespace
