//===- BuildTrainingStep.cpp - Forward + backward + optimizer -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Regex.h"

namespace zero {
#define GEN_PASS_DEF_BUILDTRAININGSTEPPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

} // namespace

StringRef zero::trainedParameterName(func::FuncOp func, unsigned i,
                                     const llvm::Regex *freeze) {
  auto name = func.getArgAttrOfType<StringAttr>(i, compute::attr::kParam);
  if (!name || !isFloatTensor(func.getArgument(i)) || func.getArgAttr(i, compute::attr::kFrozen) ||
      (freeze && freeze->match(name.getValue())))
    return "";
  return name.getValue();
}

namespace {

struct BuildTrainingStepPass
    : public zero::impl::BuildTrainingStepPassBase<BuildTrainingStepPass> {
  using Base::Base;

  // Mixed precision: the loss-scale argument and the overflow count.
  bool mixed = false;
  Value lossScale, overflow;
  // The optimizers' runtime operands: the factor gradients are multiplied by (mixed
  // precision's 1 / loss scale, clipping's coefficient) and the learning rate.
  Value gradScale, lrValue;

  /// A scalar argument the runtime sets before each step (`compute.runtime`).
  BlockArgument addRuntimeArg(func::FuncOp func, Type elementType, StringRef name) {
    Builder b(func.getContext());
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(
            index, RankedTensorType::get({}, elementType),
            b.getDictionaryAttr(b.getNamedAttr(compute::attr::kRuntime, b.getStringAttr(name))),
            func.getLoc())))
      return BlockArgument();
    return func.getBody().front().getArgument(index);
  }

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func) {
      getOperation().emitError("no func.func @main to train");
      return signalPassFailure();
    }
    if (failed(build(func)))
      signalPassFailure();
  }

  /// The result to minimize: the one named by --loss, or the only scalar float one.
  FailureOr<unsigned> findLoss(func::FuncOp func, ArrayRef<StringRef> names) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (!loss.empty()) {
      for (auto [i, n] : llvm::enumerate(names))
        if (n == loss) {
          auto t = cast<RankedTensorType>(ret.getOperand(i).getType());
          if (t.getRank() != 0 || !isa<FloatType>(t.getElementType()))
            return func.emitError("--loss names '")
                   << loss << "', which is not a scalar float output",
                   failure();
          return (unsigned)i;
        }
      return func.emitError("--loss names '") << loss << "', which is not an output",
             failure();
    }
    SmallVector<unsigned> scalars;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getRank() == 0 && isa<FloatType>(t.getElementType()))
        scalars.push_back(i);
    }
    if (scalars.size() == 1)
      return scalars[0];
    InFlightDiagnostic d = func.emitError("the model has ")
                           << scalars.size() << " scalar float outputs";
    if (!scalars.empty()) {
      d << " (";
      llvm::interleaveComma(scalars, d, [&](unsigned i) { d << names[i]; });
      d << ")";
    }
    d << "; name the loss with --loss NAME";
    return failure();
  }

  LogicalResult build(func::FuncOp func) {
    if (!gradientsOnly && optimizer != "adamw" && optimizer != "sgd")
      return func.emitError("--optimizer=") << optimizer
                                            << " is not supported (adamw or sgd)";
    Block &entry = func.getBody().front();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    SmallVector<StringRef> names;
    if (auto a = func->getAttrOfType<ArrayAttr>(compute::attr::kOutputNames))
      for (Attribute n : a)
        names.push_back(cast<StringAttr>(n).getValue());
    names.resize(ret.getNumOperands(), "");
    auto lossIndex = findLoss(func, names);
    if (failed(lossIndex))
      return failure();
    Value lossValue = ret.getOperand(*lossIndex);

    std::string regexError;
    llvm::Regex frozen(freeze);
    if (!freeze.empty() && !frozen.isValid(regexError))
      return func.emitError("--freeze '") << freeze << "' is not a valid regular "
                                          << "expression: " << regexError;

    // Trainable: float parameters that the model does not mark frozen (the
    // importer does, for initializers outside its zero.trainable set) and whose
    // names --freeze does not match.
    SmallVector<BlockArgument> params;
    SmallVector<StringRef> paramNames;
    for (BlockArgument arg : entry.getArguments()) {
      StringRef name =
          trainedParameterName(func, arg.getArgNumber(), freeze.empty() ? nullptr : &frozen);
      if (name.empty())
        continue;
      params.push_back(arg);
      paramNames.push_back(name);
    }
    if (params.empty())
      return func.emitError("no trainable parameters (float initializers that are "
                            "not frozen and not matched by --freeze)");

    SmallVector<Operation *> forward;
    for (Operation &op : entry.without_terminator())
      forward.push_back(&op);

    OpBuilder b(ret);
    Location loc = func.getLoc();
    auto lossType = cast<RankedTensorType>(lossValue.getType());
    if (gradAccumSteps < 1)
      return func.emitError("--grad-accum-steps must be at least 1");
    // Mixed precision (after --zero-autocast): the loss gradient starts from the
    // loss scale the runtime sets before each step, so that small 16-bit gradients
    // do not flush to zero; the optimizer divides it out.
    mixed = func->hasAttr(compute::attr::kPrecision) && !gradientsOnly;
    Value seed;
    if (mixed) {
      auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
      lossScale = addRuntimeArg(func, b.getF32Type(), "loss_scale");
      if (!lossScale)
        return failure();
      seed = lossScale;
      if (lossType != scalarF32)
        seed = CastOp::create(b, loc, lossType, seed);
    }
    // Gradient accumulation: each micro-batch's loss is a mean, so each starts its
    // gradient from 1/A of the seed and the gradients add up to the mean's.
    double microWeight = 1.0 / (double)gradAccumSteps;
    if (!seed || gradAccumSteps > 1) {
      Value w = ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(lossType,
                                 b.getFloatAttr(lossType.getElementType(), microWeight)));
      seed = seed ? MulOp::create(b, loc, lossType, seed, w).getResult() : w;
    }

    // One forward and backward per micro-batch, in order, each on its own copy of
    // the graph inputs; the gradients accumulate after each backward so that no
    // micro-batch's gradients outlive it. Ops are tagged with their phase (2m for
    // micro-batch m's forward, 2m + 1 for its backward), for ZeRO-3's gathers.
    SmallVector<Value> grads(params.size());
    SmallVector<Value> losses;
    for (int64_t m = 0; m < gradAccumSteps; ++m) {
      SmallVector<Operation *> ops;
      Value microLoss = lossValue;
      b.setInsertionPoint(ret);
      if (m == 0) {
        ops = forward;
      } else {
        IRMapping map;
        for (BlockArgument arg : llvm::to_vector(entry.getArguments())) {
          if (!func.getArgAttr(arg.getArgNumber(), compute::attr::kInput))
            continue;
          unsigned index = func.getNumArguments();
          NamedAttrList attrs(func.getArgAttrDict(arg.getArgNumber()));
          attrs.set(compute::attr::kMicroStep, b.getI64IntegerAttr(m));
          if (failed(func.insertArgument(index, arg.getType(),
                                         attrs.getDictionary(func.getContext()),
                                         arg.getLoc())))
            return failure();
          map.map(arg, entry.getArgument(index));
        }
        for (Operation *op : forward)
          ops.push_back(b.clone(*op, map));
        microLoss = map.lookup(lossValue);
      }
      if (gradAccumSteps > 1) {
        if (m == 0) // the original inputs are micro-batch 0's
          for (BlockArgument arg : entry.getArguments())
            if (func.getArgAttr(arg.getArgNumber(), compute::attr::kInput))
              func.setArgAttr(arg.getArgNumber(), compute::attr::kMicroStep,
                              b.getI64IntegerAttr(0));
        for (Operation *op : ops)
          op->setAttr(zops::attr::kMicroPhase, b.getI64IntegerAttr(2 * m));
      }

      DenseMap<Value, Value> adjoint;
      Operation *lastForward = ops.back();
      if (failed(differentiate(func, b, ret, ops, params, microLoss, seed, adjoint)))
        return failure();
      b.setInsertionPoint(ret);
      if (gradAccumSteps > 1)
        for (Operation *op = lastForward->getNextNode(); op != ret; op = op->getNextNode())
          op->setAttr(zops::attr::kMicroPhase, b.getI64IntegerAttr(2 * m + 1));

      // Accumulate (mixed precision: in f32). A parameter the loss does not reach
      // has no gradient (null), as in PyTorch.
      for (auto [i, p] : llvm::enumerate(params)) {
        Value g = adjoint.lookup(p);
        if (!g)
          continue;
        if (gradAccumSteps > 1 && mixed) {
          g = CastOp::create(b, loc, cast<RankedTensorType>(g.getType()).clone(b.getF32Type()),
                             g);
          g.getDefiningOp()->setAttr(zops::attr::kAccumulate, b.getUnitAttr());
        }
        if (!grads[i]) {
          grads[i] = g;
          continue;
        }
        auto add = AddOp::create(b, loc, g.getType(), grads[i], g);
        add->setAttr(zops::attr::kAccumulate, b.getUnitAttr());
        grads[i] = add;
      }
      losses.push_back(microLoss);
    }
    b.setInsertionPoint(ret);
    if (gradAccumSteps > 1) { // the logged loss: the mean over the micro-batches
      Value sum = losses[0];
      for (Value l : ArrayRef<Value>(losses).drop_front())
        sum = AddOp::create(b, loc, lossType, sum, l);
      Value a = ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(lossType, b.getFloatAttr(lossType.getElementType(),
                                                          (double)gradAccumSteps)));
      lossValue = DivOp::create(b, loc, lossType, sum, a);
    }

    SmallVector<Value> results = {lossValue};
    SmallVector<Attribute> resultNames = {b.getStringAttr(names[*lossIndex])};
    if (mixed) {
      // The overflow check: inf/NaN gradient elements, counted over every tensor
      // by one op (one launch over all of them).
      auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
      SmallVector<Value> counted;
      for (Value g : grads)
        if (g)
          counted.push_back(g);
      if (!counted.empty())
        overflow = NonfiniteCountOp::create(b, loc, scalarF32, counted);
      results.push_back(overflow);
      resultNames.push_back(b.getStringAttr("overflow"));
      gradScale = ReciprocalOp::create(b, loc, scalarF32, lossScale);
    }
    if (clipGradNorm < 0)
      return func.emitError("--clip-grad-norm must be >= 0");
    if (clipGradNorm > 0 && !gradientsOnly) {
      // torch.nn.utils.clip_grad_norm_ over every gradient, as the optimizer reads
      // them (ZeRO rebuilds the sum from the reduced slices).
      // One op over every gradient: one kernel launch.
      auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
      SmallVector<Value> present;
      for (Value g : grads)
        if (g)
          present.push_back(g);
      if (present.empty())
        return func.emitError("--clip-grad-norm: the step has no gradient to clip");
      Value sumSq = SumSquaresOp::create(b, loc, scalarF32, present);
      if (!gradScale)
        gradScale = ConstantOp::create(
            b, loc, DenseElementsAttr::get(scalarF32, b.getF32FloatAttr(1.0f)));
      auto clip = ClipGradScaleOp::create(b, loc, scalarF32, scalarF32, sumSq, gradScale,
                                          b.getF64FloatAttr(clipGradNorm));
      gradScale = clip.getClippedScale();
      results.push_back(clip.getNorm());
      resultNames.push_back(b.getStringAttr("grad_norm"));
    }
    if (runtimeLr && !gradientsOnly) {
      lrValue = addRuntimeArg(func, b.getF64Type(), "lr");
      if (!lrValue)
        return failure();
    }
    SmallVector<std::pair<unsigned, unsigned>> updates; // result -> argument
    if (gradientsOnly) {
      for (auto [p, g, name] : llvm::zip(params, grads, paramNames)) {
        if (!g) {
          auto t = cast<RankedTensorType>(p.getType());
          g = ConstantOp::create(
              b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
        }
        results.push_back(g);
        resultNames.push_back(b.getStringAttr("grad." + name.str()));
      }
    } else if (failed(buildOptimizer(func, b, params, paramNames, grads, results,
                                     resultNames, updates))) {
      return failure();
    }

    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    func.setFunctionType(
        FunctionType::get(func.getContext(), entry.getArgumentTypes(), resultTypes));
    func->setAttr(compute::attr::kOutputNames, b.getArrayAttr(resultNames));
    for (auto [res, arg] : updates)
      func.setResultAttr(res, compute::attr::kUpdates, b.getI64IntegerAttr(arg));
    return success();
  }

  /// Reverse-mode differentiation of `loss` over `ops` (one forward), before `ret`:
  /// each op's rule turns its results' adjoints into its operands'; a value used
  /// several times (a tied weight) sums the contributions. Only values that depend
  /// on a trainable parameter get adjoints (integer values never do).
  LogicalResult differentiate(func::FuncOp func, OpBuilder &b, Operation *ret,
                              ArrayRef<Operation *> ops, ArrayRef<BlockArgument> params,
                              Value loss, Value seed, DenseMap<Value, Value> &adjoint) {
    DenseSet<Value> varied(params.begin(), params.end());
    for (Operation *op : ops)
      if (llvm::any_of(op->getOperands(), [&](Value v) { return varied.contains(v); }))
        for (Value r : op->getResults())
          if (isFloatTensor(r))
            varied.insert(r);
    if (!varied.contains(loss))
      return func.emitError("the loss does not depend on any trainable parameter");
    adjoint[loss] = seed;
    for (Operation *op : llvm::reverse(ops)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(adjoint.lookup(r));
        any |= bool(resultGrads.back());
      }
      if (!any)
        continue;
      SmallVector<bool> need;
      for (Value v : op->getOperands())
        need.push_back(varied.contains(v));
      if (llvm::none_of(need, [](bool x) { return x; }))
        continue;
      b.setInsertionPoint(ret);
      SmallVector<Value> operandGrads;
      if (failed(buildGradients(b, op, resultGrads, need, operandGrads)))
        return failure();
      for (auto [v, g] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!g)
          continue;
        Value &acc = adjoint[v];
        acc = acc ? AddOp::create(b, op->getLoc(), acc.getType(), acc, g).getResult() : g;
      }
    }
    return success();
  }

  /// Adds the optimizer state as arguments and one update op per parameter.
  LogicalResult buildOptimizer(func::FuncOp func, OpBuilder &b,
                               ArrayRef<BlockArgument> params,
                               ArrayRef<StringRef> paramNames, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &results,
                               SmallVectorImpl<Attribute> &resultNames,
                               SmallVectorImpl<std::pair<unsigned, unsigned>> &updates) {
    Block &entry = func.getBody().front();
    Location loc = func.getLoc();
    auto addState = [&](Type type, StringRef name) {
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, type,
                                     b.getDictionaryAttr(b.getNamedAttr(
                                         compute::attr::kState, b.getStringAttr(name))),
                                     loc)))
        return BlockArgument();
      return entry.getArgument(index);
    };
    auto update = [&](Value newValue, BlockArgument arg, StringRef name) {
      updates.push_back({(unsigned)results.size(), arg.getArgNumber()});
      results.push_back(newValue);
      resultNames.push_back(b.getStringAttr(name));
    };
    // Mixed precision: the optimizer updates an f32 master copy of each 16-bit
    // parameter (initialized from the same initializer) and casts the result back.
    auto masterOf = [&](BlockArgument p, StringRef name) -> BlockArgument {
      if (!mixed)
        return p;
      auto t = cast<RankedTensorType>(p.getType()).clone(b.getF32Type());
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(
              index, t,
              b.getDictionaryAttr(b.getNamedAttr(compute::attr::kMaster, b.getStringAttr(name))),
              loc)))
        return BlockArgument();
      return entry.getArgument(index);
    };
    auto updateParam = [&](Value newMaster, BlockArgument master, BlockArgument p,
                           StringRef name) {
      if (!mixed)
        return update(newMaster, p, name);
      update(newMaster, master, name);
      update(CastOp::create(b, loc, p.getType(), newMaster), p, name);
    };

    if (optimizer == "adamw") {
      double wd = weightDecay < 0 ? 0.01 : weightDecay;
      // The step counter t: bias correction needs it, and it lives with the state.
      auto stepType = RankedTensorType::get({}, b.getI64Type());
      BlockArgument step = addState(stepType, "optimizer.step");
      if (!step)
        return failure();
      Value one = ConstantOp::create(
          b, loc, DenseElementsAttr::get(stepType, b.getI64IntegerAttr(1).getValue()));
      Value t = AddOp::create(b, loc, stepType, step, one);
      for (auto [p, name, g] : llvm::zip(params, paramNames, grads)) {
        if (!g) // PyTorch skips a parameter whose gradient is None
          continue;
        BlockArgument master = masterOf(p, name);
        if (!master)
          return failure();
        BlockArgument m = addState(master.getType(), (name + ".exp_avg").str());
        BlockArgument v = addState(master.getType(), (name + ".exp_avg_sq").str());
        if (!m || !v)
          return failure();
        auto op = AdamWOp::create(b, p.getLoc(), master, g, m, v, t, gradScale, overflow,
                                  lrValue, lr, beta1, beta2, eps, wd);
        updateParam(op.getNewParam(), master, p, name);
        update(op.getNewExpAvg(), m, (name + ".exp_avg").str());
        update(op.getNewExpAvgSq(), v, (name + ".exp_avg_sq").str());
      }
      Value newStep = t;
      if (mixed) { // a skipped step does not count: step + 1 - (overflow != 0)
        Value skipped = CastOp::create(
            b, loc, stepType,
            CastOp::create(b, loc, RankedTensorType::get({}, b.getI1Type()), overflow));
        newStep = SubOp::create(b, loc, stepType, t, skipped);
      }
      update(newStep, step, "optimizer.step");
      return success();
    }
    double wd = weightDecay < 0 ? 0.0 : weightDecay;
    for (auto [p, name, g] : llvm::zip(params, paramNames, grads)) {
      if (!g) // PyTorch skips a parameter whose gradient is None
        continue;
      BlockArgument master = masterOf(p, name);
      if (!master)
        return failure();
      BlockArgument buf = addState(master.getType(), (name + ".momentum_buffer").str());
      if (!buf)
        return failure();
      auto op = SgdOp::create(b, p.getLoc(), master, g, buf, gradScale, overflow, lrValue, lr,
                              momentum, wd);
      updateParam(op.getNewParam(), master, p, name);
      update(op.getNewMomentumBuffer(), buf, (name + ".momentum_buffer").str());
    }
    return success();
  }
};

} // namespace
