//===- FoldLayouts.cpp - What needs no kernel, and liveness -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Phases 1 and 2 of PlanLowering (PlanLowering.h): the waits, views, slices,
// reshapes and transposes that run no kernel of their own, and each value's last
// reader.
//
//===----------------------------------------------------------------------===//

#include "PlanLowering.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

using namespace mlir;
using namespace zero;
using namespace zero::lowering;

/// The byte offset in its input at which a slice's elements lie, when they lie
/// contiguously (unit steps; every dimension after the first cut one whole, every
/// one before it of size 1): then the slice can read its input in place.
static std::optional<int64_t> contiguousSliceBytes(compute::SliceOp s) {
  ArrayRef<int64_t> in = cast<RankedTensorType>(s.getInput().getType()).getShape();
  ArrayRef<int64_t> out = cast<RankedTensorType>(s.getResult().getType()).getShape();
  ArrayRef<int64_t> starts = s.getStarts(), steps = s.getSteps();
  size_t cut = in.size();
  for (size_t i = 0; i < in.size() && cut == in.size(); ++i)
    if (out[i] != in[i])
      cut = i;
  int64_t offset = 0, stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    if (steps[i] != 1 && out[i] > 1)
      return std::nullopt;
    if (i > cut && (out[i] != in[i] || starts[i] != 0))
      return std::nullopt; // a dimension after the cut must be whole
    if (i < cut && out[i] != 1)
      return std::nullopt; // one before it must be a single index
    offset += starts[i] * stride;
    stride *= in[i];
  }
  return offset * elementBytes(cast<RankedTensorType>(s.getInput().getType()).getElementType());
}

/// Whether a transpose leaves every element where it is: it only moves dimensions
/// of extent 1, the others keep their order (a reshape in all but name).
static bool movesNoElement(compute::TransposeOp t) {
  ArrayRef<int64_t> in = cast<RankedTensorType>(t.getInput().getType()).getShape();
  int64_t last = -1;
  for (int64_t p : t.getPerm()) {
    if (in[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

/// The strides of a reshape's result over the elements its input reads (`from`
/// with `strides`): each run of input dimensions that lies evenly (a stride is the
/// next one's times its extent) is split among result dimensions that multiply to
/// it exactly. Nothing when a result dimension would straddle two runs.
static std::optional<SmallVector<int64_t>> reshapedStrides(ArrayRef<int64_t> from,
                                                    ArrayRef<int64_t> strides,
                                                    ArrayRef<int64_t> to) {
  if (llvm::is_contained(from, 0))
    return computeStrides(to); // no element: any strides
  SmallVector<std::pair<int64_t, int64_t>> runs; // (elements, innermost stride), inner first
  for (size_t i = from.size(); i-- > 0;) {
    if (from[i] == 1)
      continue;
    if (!runs.empty() && runs.back().first * runs.back().second == strides[i])
      runs.back().first *= from[i];
    else
      runs.push_back({from[i], strides[i]});
  }
  SmallVector<int64_t> out(to.size(), 0);
  size_t run = 0;
  int64_t filled = 1;
  for (size_t d = to.size(); d-- > 0;) {
    if (to[d] == 1)
      continue; // its stride is never used
    if (run == runs.size())
      return std::nullopt;
    auto [elements, stride] = runs[run];
    out[d] = stride * filled;
    filled *= to[d];
    if (elements % filled)
      return std::nullopt;
    if (filled == elements) {
      ++run;
      filled = 1;
    }
  }
  if (run != runs.size())
    return std::nullopt;
  return out;
}

/// Whether BLAS reads (or writes) a rows x cols matrix with these steps in place:
/// one of them 1 and the other past a whole row or column. The runtime's matmul
/// takes the same layouts.
static bool isBlasMatrix(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride) {
  return ((cols <= 1 || colStride == 1) && (rows <= 1 || rowStride >= std::max<int64_t>(cols, 1))) ||
         ((rows <= 1 || rowStride == 1) && (cols <= 1 || colStride >= std::max<int64_t>(rows, 1)));
}

LogicalResult PlanLowering::fold() {
  // A wait's result is the buffer its start writes into.
  for (Operation &op : entry)
    if (auto w = dyn_cast<zops::WaitOp>(op))
      source[w.getResult()] = w.getPending();

  // Results marked compute.updates = N replace argument N (a parameter or
  // optimizer state) for the next step.
  for (auto [i, v] : llvm::enumerate(terminator->getOperands()))
    if (auto arg = func.getResultAttrOfType<IntegerAttr>(i, compute::attr::kUpdates)) {
      if (arg.getInt() < 0 || arg.getInt() >= entry.getNumArguments())
        return func.emitError("result ") << i << " updates argument " << arg.getInt()
                                         << ", which does not exist";
      updateOf[v] = entry.getArgument(arg.getInt());
    }

  // Views: a reshape, a slice whose elements lie contiguously, or a transpose
  // that moves no element, reads its input's bytes in place; no kernel copies
  // it. `viewOf` maps it to the root value whose buffer it reads and the byte
  // offset there. Not for a value the step copies into an argument (copied where
  // it is made, it dies there), nor for a graph output (the host reads outputs by
  // their own buffers).
  for (Operation &op : entry) {
    auto transpose = dyn_cast<compute::TransposeOp>(op);
    bool viewable = isa<compute::ReshapeOp, compute::SliceOp>(op) ||
                    (transpose && movesNoElement(transpose));
    if (!views || !viewable || updateOf.count(op.getResult(0)) ||
        llvm::is_contained(terminator->getOperands(), op.getResult(0)))
      continue;
    Value in = op.getOperand(0);
    int64_t at = 0;
    if (auto slice = dyn_cast<compute::SliceOp>(op)) {
      std::optional<int64_t> bytes = contiguousSliceBytes(slice);
      if (!bytes)
        continue;
      at = *bytes;
    }
    View v{resolve(in), at};
    if (auto it = viewOf.find(v.root); it != viewOf.end())
      v = {it->second.root, it->second.bytes + at};
    viewOf[op.getResult(0)] = v;
  }
  foldStridedLayouts();
  foldParameterCopies();
  return success();
}

void PlanLowering::foldParameterCopies() {
  for (Operation &op : entry) {
    auto adam = dyn_cast<compute::AdamWOp>(op);
    if (!adam)
      continue;
    if (!getElementTypeOrSelf(adam.getNewParam()).isF32())
      continue;
    for (Operation *user : adam.getNewParam().getUsers()) {
      auto c = dyn_cast<compute::CastOp>(user);
      if (!c || !isa<BFloat16Type, Float16Type>(getElementTypeOrSelf(c.getResult())) ||
          c->hasAttr(zops::attr::kHost) != op.hasAttr(zops::attr::kHost) ||
          viewOf.count(c.getResult()) || resultView.count(c.getResult()))
        continue;
      copyOf[&op] = c.getResult();
      dropped.insert(c);
      break;
    }
  }
}

SmallVector<Value> PlanLowering::madeBy(Operation &op) {
  SmallVector<Value> made(op.getResults());
  if (Value copy = copyOf.lookup(&op))
    made.push_back(copy);
  return made;
}

void PlanLowering::foldStridedLayouts() {
  for (Operation &op : entry) {
    if (isa<compute::MatMulOp, compute::FusedMatMulOp>(op))
      foldMatMulLayouts(op);
    else if (views && isa<compute::AttentionOp, compute::AttentionGradOp>(op))
      foldAttentionLayouts(op);
  }
  // Chain ops every reader of which reads through them are dropped (readers
  // come after, so one backward sweep settles it).
  for (Operation &op : llvm::reverse(entry)) {
    if (!isChainOp(&op) || op.use_empty() || roots.contains(op.getResult(0)))
      continue;
    bool allThrough = llvm::all_of(op.getResult(0).getUses(), [&](OpOperand &use) {
      return operandView.count({use.getOwner(), use.getOperandNumber()}) ||
             dropped.contains(use.getOwner());
    });
    if (allThrough)
      dropped.insert(&op);
  }
}

void PlanLowering::foldMatMulLayouts(Operation &op) {
  for (unsigned i = 0; i < 2; ++i) {
    Value v = op.getOperand(i);
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    size_t r = shape.size();
    if (r < 2 || !costsAKernel(v))
      continue;
    std::optional<StridedView> view;
    auto t = dyn_cast<compute::TransposeOp>(v.getDefiningOp());
    if (t && isLastTwoSwap(t) && (!views || !costsAKernel(t.getInput()))) {
      // The transposed buffer of a whole value: a flag.
      view = StridedView{t.getInput(),
                         computeStrides(
                             cast<RankedTensorType>(t.getInput().getType()).getShape()),
                         0};
      std::swap(view->strides[r - 1], view->strides[r - 2]);
    } else if (views) {
      view = stridedViewOf(v);
    }
    if (view && isBlasMatrix(shape[r - 2], shape[r - 1], view->strides[r - 2],
                             view->strides[r - 1])) {
      operandView[{&op, i}] = *view;
      roots.insert(view->root);
    }
  }
  // The result written straight into the one transpose that reads it (not a
  // fused product's: its addend is read as the result lies).
  Value res = op.getResult(0);
  if (!views || !res.hasOneUse() || isa<compute::FusedMatMulOp>(op))
    return;
  std::optional<StridedView> into = transposeTarget(res);
  auto shape = cast<RankedTensorType>(res.getType()).getShape();
  size_t r = shape.size();
  if (into && r >= 2 &&
      isBlasMatrix(shape[r - 2], shape[r - 1], into->strides[r - 2], into->strides[r - 1]))
    writeInto(res, *into);
}

void PlanLowering::foldAttentionLayouts(Operation &op) {
  bool grad = isa<compute::AttentionGradOp>(op);
  auto rowsContiguous = [](Value v, const StridedView &view) {
    return cast<RankedTensorType>(v.getType()).getShape()[3] <= 1 || view.strides[3] == 1;
  };
  for (unsigned i = 0; i < op.getNumOperands(); ++i) {
    Value v = op.getOperand(i);
    if (!::zplan::attention::inputView(grad, i) || operandView.count({&op, i}) ||
        !costsAKernel(v))
      continue;
    std::optional<StridedView> view = stridedViewOf(v);
    if (view && rowsContiguous(v, *view)) {
      operandView[{&op, i}] = *view;
      roots.insert(view->root);
    }
  }
  for (OpResult res : op.getResults()) {
    if (!::zplan::attention::outputView(grad, res.getResultNumber()))
      continue;
    // Besides the transpose, only gradients may read it (their "out" operand).
    compute::TransposeOp merge;
    bool readable = llvm::all_of(res.getUses(), [&](OpOperand &use) {
      auto t = dyn_cast<compute::TransposeOp>(use.getOwner());
      if (t && !merge) {
        merge = t;
        return true;
      }
      return isa<compute::AttentionGradOp>(use.getOwner()) && use.getOperandNumber() == 3;
    });
    if (!readable || !merge)
      continue;
    std::optional<StridedView> into = transposeTarget(res, merge);
    if (!into || !rowsContiguous(res, *into))
      continue;
    writeInto(res, *into);
    for (OpOperand &use : res.getUses())
      if (use.getOwner() != merge)
        operandView[{use.getOwner(), use.getOperandNumber()}] = *into;
  }
  if (grad)
    foldGradientsIntoConcat(op);
}

void PlanLowering::foldGradientsIntoConcat(Operation &op) {
  compute::ConcatOp concat;
  SmallVector<Operation *> chain;       // merges and reshapes the concat replaces
  SmallVector<unsigned> slot(3);        // the concat operand each gradient becomes
  for (OpResult res : op.getResults()) {
    auto it = resultView.find(res);
    if (it == resultView.end() || res.getType() != op.getResult(0).getType())
      return;
    Value merged = it->second.root; // the merge transpose's result
    if (!merged.hasOneUse())
      return;
    Value joined = merged;
    Operation *user = *merged.getUsers().begin();
    if (isa<compute::ReshapeOp>(user)) {
      if (!user->getResult(0).hasOneUse())
        return;
      chain.push_back(user);
      joined = user->getResult(0);
      user = *joined.getUsers().begin();
    }
    auto c = dyn_cast<compute::ConcatOp>(user);
    if (!c || (concat && c != concat) || c->getNumOperands() != 3)
      return;
    concat = c;
    slot[res.getResultNumber()] = joined.getUses().begin()->getOperandNumber();
    chain.push_back(merged.getDefiningOp());
  }
  Value joinedAll = concat.getResult();
  if (updateOf.count(joinedAll) || llvm::is_contained(terminator->getOperands(), joinedAll))
    return;
  auto shapeOf = [](Value x) { return cast<RankedTensorType>(x.getType()).getShape(); };
  int64_t axis = concat.getAxis();
  SmallVector<int64_t> strides = computeStrides(shapeOf(joinedAll));
  SmallVector<StridedView> views;
  for (OpResult res : op.getResults()) {
    unsigned j = slot[res.getResultNumber()];
    int64_t offset = 0;
    for (unsigned i = 0; i < j; ++i)
      offset += shapeOf(concat.getOperand(i))[axis] * strides[axis];
    // The operand in the concat's buffer; back through its reshape to the
    // merged heads; back through the merge to the gradient's own dimensions.
    Value merged = resultView[res].root;
    std::optional<SmallVector<int64_t>> mergedStrides =
        reshapedStrides(shapeOf(concat.getOperand(j)), strides, shapeOf(merged));
    if (!mergedStrides)
      return;
    ArrayRef<int64_t> perm = cast<compute::TransposeOp>(merged.getDefiningOp()).getPerm();
    SmallVector<int64_t> own(perm.size());
    for (size_t d = 0; d < perm.size(); ++d)
      own[perm[d]] = (*mergedStrides)[d];
    if (shapeOf(res)[3] > 1 && own[3] != 1)
      return; // rows must stay contiguous
    views.push_back(StridedView{joinedAll, own, offset});
  }
  for (OpResult res : op.getResults()) {
    writtenBy.erase(resultView[res].root);
    writeInto(res, views[res.getResultNumber()]);
  }
  for (Operation *c : chain)
    dropped.insert(c);
  dropped.insert(concat);
}

std::optional<PlanLowering::StridedView> PlanLowering::transposeTarget(Value res, compute::TransposeOp t) {
  if (!t)
    t = dyn_cast<compute::TransposeOp>(*res.getUsers().begin());
  if (!t || t.getInput() != res || movesNoElement(t) || updateOf.count(t.getResult()) ||
      llvm::is_contained(terminator->getOperands(), t.getResult()))
    return std::nullopt;
  ArrayRef<int64_t> perm = t.getPerm();
  SmallVector<int64_t> into =
      computeStrides(cast<RankedTensorType>(t.getResult().getType()).getShape());
  SmallVector<int64_t> strides(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    strides[perm[d]] = into[d];
  return StridedView{t.getResult(), strides, 0};
}

void PlanLowering::writeInto(Value res, const StridedView &into) {
  resultView[res] = into;
  writtenBy[into.root] = res.getDefiningOp();
}

std::optional<PlanLowering::StridedView> PlanLowering::stridedViewOf(Value v) {
  Operation *def = v.getDefiningOp();
  auto shapeOf = [](Value x) { return cast<RankedTensorType>(x.getType()).getShape(); };
  if (!isChainOp(def))
    return StridedView{v, computeStrides(shapeOf(v)), 0};
  std::optional<StridedView> in = stridedViewOf(def->getOperand(0));
  if (!in)
    return std::nullopt;
  if (auto t = dyn_cast<compute::TransposeOp>(def)) {
    SmallVector<int64_t> strides;
    for (int64_t p : t.getPerm())
      strides.push_back(in->strides[p]);
    in->strides = strides;
  } else if (auto sl = dyn_cast<compute::SliceOp>(def)) {
    for (auto [d, start, step] : llvm::enumerate(sl.getStarts(), sl.getSteps())) {
      if (step < 1)
        return std::nullopt;
      in->offset += start * in->strides[d];
      in->strides[d] *= step;
    }
  } else {
    std::optional<SmallVector<int64_t>> strides =
        reshapedStrides(shapeOf(def->getOperand(0)), in->strides, shapeOf(v));
    if (!strides)
      return std::nullopt;
    in->strides = *strides;
  }
  return in;
}

bool PlanLowering::costsAKernel(Value v) {
  for (Operation *def = v.getDefiningOp(); isChainOp(def);
       def = def->getOperand(0).getDefiningOp())
    if (!viewOf.count(def->getResult(0)))
      return true;
  return false;
}

bool PlanLowering::isChainOp(Operation *op) {
  return op && isa<compute::ReshapeOp, compute::SliceOp, compute::TransposeOp>(op) &&
         !writtenBy.count(op->getResult(0));
}

Value PlanLowering::readOf(Operation &op, unsigned i) {
  auto it = operandView.find({&op, i});
  return it == operandView.end() ? op.getOperand(i) : it->second.root;
}

Value PlanLowering::writeOf(Value r) {
  auto it = resultView.find(r);
  return it == resultView.end() ? r : it->second.root;
}

bool PlanLowering::emitsNothing(Operation &op) {
  return dropped.contains(&op) ||
         (op.getNumResults() && writtenBy.count(op.getResult(0)));
}

Value PlanLowering::resolve(Value v) {
  Value s = source.lookup(v);
  return s ? s : v;
}

Value PlanLowering::base(Value v) {
  v = resolve(v);
  auto it = viewOf.find(v);
  return it == viewOf.end() ? v : it->second.root;
}

void PlanLowering::computeLiveness() {
  for (Operation &op : entry)
    position[&op] = position.size();
  for (Operation &op : entry) {
    if (emitsNothing(op))
      continue; // its readers read (or its writer writes) the value it stands for
    if (op.getNumResults() && viewOf.count(op.getResult(0)))
      continue; // a view reads nothing itself: its readers read its root
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      if (Value v = readOf(op, i); isa<RankedTensorType>(v.getType())) {
        lastUse[base(v)] = &op;
        if (&op != terminator)
          lastKernelUse[base(v)] = &op;
      }
    // A started collective reads its input until its wait.
    if (auto w = dyn_cast<zops::WaitOp>(op))
      lastUse[base(w.getToken().getDefiningOp()->getOperand(0))] = &op;
  }
}

void PlanLowering::foldWritesOver() {
  for (Operation &op : entry) {
    auto cls = dyn_cast<compute::SoftmaxCrossEntropyWithGradOp>(op);
    if (!cls)
      continue;
    Value r = cls.getScoresGrad(), scores = resolve(cls.getScores()), root = base(scores);
    auto view = viewOf.find(scores);
    bool whole = view == viewOf.end() || view->second.bytes == 0;
    if (!whole || isa<BlockArgument>(root) || isHost(root) ||
        isa_and_nonnull<compute::ConstantOp>(root.getDefiningOp()) ||
        lastUse.lookup(root) != &op || bytesOf(root) != bytesOf(r) || updateOf.count(r) ||
        resultView.count(r) || resultView.count(root) ||
        llvm::is_contained(terminator->getOperands(), r))
      continue;
    writtenOver[r] = root;
    handedOver.insert(root);
  }
}
