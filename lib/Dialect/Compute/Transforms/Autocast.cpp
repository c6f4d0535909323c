//===- Autocast.cpp - Mixed precision for the forward graph ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Rewrites the forward function @main the way torch.autocast runs a model: the
// trainable parameters become 16-bit, matrix products take 16-bit operands (f32
// accumulation in the kernels) and give 16-bit results (fused attention too, its
// log-sum-exp staying f32, as autocast runs SDPA), the ops autocast keeps in
// f32 (normalization, softmax, the loss, reductions, exp/log/pow) take f32 operands
// (but a layer norm that only matrix products read runs on 16-bit tensors, its
// statistics in f32, and the loss reads 16-bit scores into f32 log-probabilities:
// the same values without the f32 copies),
// and every other op runs in its operands' type, the wider one when they differ
// (a scalar does not widen a tensor, as in PyTorch's type promotion). The backward
// built afterwards follows the types: gradients of 16-bit values are 16-bit, and a
// cast's gradient is the cast back.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Regex.h"

namespace zero {
#define GEN_PASS_DEF_AUTOCASTPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

enum class Policy {
  Half,     // 16-bit operands and results
  Float32,  // f32 operands; results as declared (f32)
  Promote,  // the operands' common type; the wider one when they differ
  Keep,     // explicit casts and ops without float operands: as they are
};

Policy policyOf(Operation *op) {
  if (isa<MatMulOp, AttentionOp>(op))
    return Policy::Half;
  if (isa<LayerNormOp, SoftmaxOp, LogSoftmaxOp, SoftmaxCrossEntropyOp, ReduceSumOp,
          ReduceMeanOp, PowOp, ExpOp, LogOp, ReciprocalOp, SqrtOp>(op))
    return Policy::Float32;
  if (isa<CastOp, ConstantOp>(op))
    return Policy::Keep;
  return Policy::Promote;
}

RankedTensorType tensorType(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

bool isFloat(Value v) {
  auto t = tensorType(v);
  return t && isa<FloatType>(t.getElementType());
}

/// One element: it takes the other operands' type instead of widening them.
bool isScalarLike(Value v) { return tensorType(v).getNumElements() == 1; }

struct AutocastPass : public zero::impl::AutocastPassBase<AutocastPass> {
  using Base::Base;

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func) {
      getOperation().emitError("no func.func @main to autocast");
      return signalPassFailure();
    }
    if (precision != "bf16" && precision != "fp16") {
      func.emitError("--precision=") << precision << " is not bf16 or fp16";
      return signalPassFailure();
    }
    Builder builder(&getContext());
    half = precision == "bf16" ? (Type)builder.getBF16Type() : builder.getF16Type();
    f32 = builder.getF32Type();
    if (failed(rewrite(func)))
      signalPassFailure();
  }

  Type half, f32;

  Value castTo(OpBuilder &b, Value v, Type et) {
    auto t = tensorType(v);
    if (t.getElementType() == et)
      return v;
    return CastOp::create(b, v.getLoc(), t.clone(et), v);
  }

  /// Whether layer norm `ln` runs on 16-bit tensors: its input, scale and bias
  /// are 16-bit and every reader of its result takes 16-bit operands (a matrix
  /// product), so autocast's f32 result would be cast to 16 bits at once. The
  /// kernel computes in f32 and keeps the mean and 1/std in f32, so the result
  /// is the same, without the f32 copies of the input and the result (nor, in the
  /// backward, of the gradients).
  bool runsInHalf(LayerNormOp ln) {
    for (Value v : {ln.getInput(), ln.getScale(), ln.getBias()})
      if (tensorType(v).getElementType() != half)
        return false;
    Value y = ln.getResult();
    return !y.use_empty() && llvm::all_of(y.getUsers(), [](Operation *user) {
      return policyOf(user) == Policy::Half;
    });
  }

  void setFloatResults(Operation *op, Type et) {
    for (Value r : op->getResults())
      if (isFloat(r))
        r.setType(tensorType(r).clone(et));
  }

  LogicalResult rewrite(func::FuncOp func) {
    std::string regexError;
    llvm::Regex frozen(freeze);
    if (!freeze.empty() && !frozen.isValid(regexError))
      return func.emitError("--freeze '") << freeze << "' is not a valid regular "
                                          << "expression: " << regexError;
    Block &entry = func.getBody().front();
    // Trainable parameters are held in 16 bits; the training step adds their f32
    // master copies. Frozen ones stay as they are (constants of the model).
    for (BlockArgument arg : entry.getArguments()) {
      if (trainedParameterName(func, arg.getArgNumber(), freeze.empty() ? nullptr : &frozen)
              .empty())
        continue;
      auto t = tensorType(arg);
      if (!t.getElementType().isF32())
        return func.emitError("parameter ")
               << func.getArgAttr(arg.getArgNumber(), compute::attr::kParam) << " is "
               << t.getElementType() << "; mixed precision starts from f32 weights";
      arg.setType(t.clone(half));
    }

    for (Operation &op : llvm::make_early_inc_range(entry.without_terminator())) {
      Policy policy = policyOf(&op);
      if (policy == Policy::Keep)
        continue;
      OpBuilder b(&op);
      SmallVector<OpOperand *> floats;
      for (OpOperand &use : op.getOpOperands())
        if (isFloat(use.get()))
          floats.push_back(&use);
      if (floats.empty())
        continue;
      if (policy == Policy::Half) {
        for (OpOperand *use : floats)
          use->set(castTo(b, use->get(), half));
        if (auto attention = dyn_cast<AttentionOp>(op))
          attention.getResult().setType(tensorType(attention.getResult()).clone(half));
        else
          setFloatResults(&op, half);
        continue;
      }
      if (policy == Policy::Float32) {
        if (auto ln = dyn_cast<LayerNormOp>(op); ln && runsInHalf(ln)) {
          ln.getResult().setType(tensorType(ln.getResult()).clone(half));
          continue;
        }
        // The loss reads 16-bit scores as they are into its f32 log-probabilities
        // (widening each row first: autocast's values without an f32 copy of the
        // logits); its gradient of them is 16-bit.
        if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op);
            loss && tensorType(loss.getScores()).getElementType() == half) {
          if (Value w = loss.getWeights(); w && tensorType(w).getElementType() == half)
            loss.getWeightsMutable().assign(castTo(b, w, f32));
          continue;
        }
        for (OpOperand *use : floats)
          if (tensorType(use->get()).getElementType() == half)
            use->set(castTo(b, use->get(), f32));
        continue;
      }
      // Promote: to the widest type among tensor operands (16-bit when only
      // one-element operands are wider). Ops without 16-bit operands are the model's.
      bool anyHalf = false;
      Type et = half;
      for (OpOperand *use : floats) {
        Type have = tensorType(use->get()).getElementType();
        anyHalf |= have == half;
        if (have != half && !isScalarLike(use->get()) &&
            (et == half || have.getIntOrFloatBitWidth() > et.getIntOrFloatBitWidth()))
          et = have;
      }
      if (!anyHalf)
        continue;
      for (OpOperand *use : floats)
        use->set(castTo(b, use->get(), et));
      setFloatResults(&op, et);
    }

    Operation *ret = entry.getTerminator();
    func.setFunctionType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                           ret->getOperandTypes()));
    func->setAttr(compute::attr::kPrecision, StringAttr::get(func.getContext(), precision));
    return success();
  }
};

} // namespace
