//===- ComputeToPlan.cpp - Lower the compute level to a plan.program ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Conversion/ComputeToPlan/ArenaAllocator.h"
#include "zero/Conversion/ComputeToPlan/FusedProgram.h"
#include "zplan/AttentionViews.h"
#include "zplan/PlanFormat.h"
#include "zero/Support/CollectiveQuantization.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Conversion/Passes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Dialect/Zero/IR/ZeroDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace zero {
#define GEN_PASS_DEF_CONVERTCOMPUTETOPLANPASS
#include "zero/Conversion/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

MemRefType bufferTypeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return MemRefType::get(t.getShape(), t.getElementType());
}

int64_t bytesOf(Value v) {
  return zero::shapedBytes(cast<RankedTensorType>(v.getType()));
}

/// The ranks a collective runs among, as the runtime knows them: every rank
/// (kWorld), the group of consecutive ranks a hybrid grid shards over (kShard),
/// the ranks at the same place of every group (kReplica), or hpZ's group of
/// consecutive ranks that shares a secondary partition (kNode). A plan kernel names its
/// group with the attributes `group` and `group_size` (none: the world).
enum RankGroup : int64_t { kWorld = 0, kShard = 1, kReplica = 2, kNode = 3 };

/// The runtime's collectives work on the whole 1-D grid, or on one axis of a 2-D
/// hybrid grid [world / G, G] (axis 1: a shard group, axis 0: a replica group), on
/// flat tensors, and reduce by summing: anything else is refused here. `group`
/// and `groupSize` say which ranks.
LogicalResult checkCollective(Operation &op, int64_t worldSize, RankGroup &group,
                              int64_t &groupSize) {
  auto grid = op.getAttrOfType<FlatSymbolRefAttr>("grid");
  auto module = op.getParentOfType<ModuleOp>();
  auto gridOp = module ? module.lookupSymbol<mlir::shard::GridOp>(grid.getAttr())
                       : mlir::shard::GridOp();
  ArrayRef<int64_t> shape = gridOp ? gridOp.getShape() : ArrayRef<int64_t>{};
  bool flat = shape.size() == 1 && shape[0] == worldSize;
  bool hybrid = shape.size() == 2 && shape[0] > 0 && shape[1] > 0 &&
                shape[0] * shape[1] == worldSize;
  if (!flat && !hybrid)
    return op.emitError("collective on grid ")
           << grid << ", which is neither a 1-D grid of the " << worldSize
           << " ranks the plan is compiled for nor a 2-D grid [groups, group size] of them";
  auto axes = op.getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  ArrayRef<int16_t> a = axes ? axes.asArrayRef() : ArrayRef<int16_t>{};
  group = kWorld;
  groupSize = worldSize;
  // hpZ's grid of its own: the groups its secondary partitions are sliced and
  // gathered within, which hold no bucket's primary slices.
  bool hpz = grid.getValue() == "zero_hpz";
  if (hybrid && hpz && a == ArrayRef<int16_t>{1}) {
    group = kNode;
    groupSize = shape[1];
  } else if (hpz) {
    return op.emitError("hpZ's grid @zero_hpz takes collectives along axis 1 only");
  } else if (hybrid && a == ArrayRef<int16_t>{1}) {
    group = kShard;
    groupSize = shape[1];
  } else if (hybrid && a == ArrayRef<int16_t>{0}) {
    group = kReplica;
    groupSize = shape[0];
  } else if (!(flat && a == ArrayRef<int16_t>{0}) &&
             !(hybrid && a == ArrayRef<int16_t>{0, 1})) {
    return op.emitError("collective must use grid axis 0 of a 1-D grid, or one axis "
                        "(or both) of a 2-D grid");
  }
  for (StringRef key : {"gather_axis", "scatter_axis", "slice_axis"})
    if (auto a = op.getAttrOfType<IntegerAttr>(key); a && a.getInt() != 0)
      return op.emitError(key) << " must be 0";
  if (auto r = op.getAttrOfType<mlir::shard::ReductionKindAttr>("reduction");
      r && r.getValue() != mlir::shard::ReductionKind::Sum)
    return op.emitError("only sum reductions are supported");
  for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.getRank() != 1)
      return op.emitError("collectives work on flat (1-D) tensors");
  return success();
}

/// A transpose that swaps the last two dimensions and keeps the others.
bool isLastTwoSwap(compute::TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  int64_t r = perm.size();
  if (r < 2 || perm[r - 1] != r - 2 || perm[r - 2] != r - 1)
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

/// The byte offset in its input at which a slice's elements lie, when they lie
/// contiguously (unit steps; every dimension after the first cut one whole, every
/// one before it of size 1): then the slice can read its input in place.
std::optional<int64_t> contiguousSliceBytes(compute::SliceOp s) {
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
bool movesNoElement(compute::TransposeOp t) {
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
std::optional<SmallVector<int64_t>> reshapedStrides(ArrayRef<int64_t> from,
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
bool isBlasMatrix(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride) {
  return ((cols <= 1 || colStride == 1) && (rows <= 1 || rowStride >= std::max<int64_t>(cols, 1))) ||
         ((rows <= 1 || rowStride == 1) && (cols <= 1 || colStride >= std::max<int64_t>(rows, 1)));
}

/// Ops whose kernels read each element before writing the same element of the
/// output, so that the output may share the input's bytes.
bool isInPlaceSafe(Operation &op) {
  return isa<compute::AdamWOp, compute::SgdOp, compute::AddOp, compute::FusedOp>(op);
}

/// Lowers @main to one plan.program in phases that run in order:
///  1. fold: what needs no kernel of its own (waits, views, the slices, reshapes
///     and transposes whose matmuls read or write through them) and which results
///     replace which argument;
///  2. liveness: each value's last reader;
///  3. emission: buffers and kernels in step order, arena slots taken when a value
///     is made and given back at its last reader;
///  4. placement: the arenas' offsets written into the buffers.
class PlanLowering {
  /// A view reads `bytes` on into the buffer of `root`.
  struct View {
    Value root;
    int64_t bytes;
  };
  /// Where a buffer's bytes are: the device arena, the host arena's part that is
  /// never reused within a step, or its part for host kernels' results (reused).
  enum class Space { Device, Host, HostKernel, Nvme };
  struct ViewPlacement {
    plan::BufferOp view;
    int64_t rootId, bytes;
    Space space;
  };
  /// A tensor as elements of another's buffer: element (i...) of it is element
  /// offset + sum(i_d strides_d) of root's.
  struct StridedView {
    Value root;
    SmallVector<int64_t> strides;
    int64_t offset = 0;
  };

public:
  PlanLowering(func::FuncOp func, int64_t worldSize, bool views)
      : func(func), entry(func.getBody().front()), terminator(entry.getTerminator()),
        b(func), worldSize(worldSize), views(views) {}

  LogicalResult run() {
    program = plan::ProgramOp::create(b, func.getLoc(), b.getStringAttr("main"),
                                      b.getI64IntegerAttr(0),
                                      b.getI64IntegerAttr(worldSize), nullptr, nullptr);
    program.getBody().emplaceBlock();
    b.setInsertionPointToStart(&program.getBody().front());
    if (failed(fold()))
      return failure();
    computeLiveness();
    foldWritesOver();
    if (failed(emitArguments()))
      return failure();
    emitConstants();
    for (Operation &op : entry.without_terminator())
      if (failed(emitOp(op)))
        return failure();
    emitReturn();
    place();
    return success();
  }

private:
  // Phase 1: fold.
  LogicalResult fold() {
    // A wait's result is the buffer its start writes into.
    for (Operation &op : entry)
      if (auto w = dyn_cast<zops::WaitOp>(op))
        source[w.getResult()] = w.getPending();

    // Results marked compute.updates = N replace argument N (a parameter or
    // optimizer state) for the next step.
    for (auto [i, v] : llvm::enumerate(terminator->getOperands()))
      if (auto arg = func.getResultAttrOfType<IntegerAttr>(i, "compute.updates")) {
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

  /// Mixed precision: AdamW writes its new parameter's 16-bit copy as it writes
  /// the f32 master, so the cast after it is not a kernel of its own (which would
  /// read the master again and write the copy to a temporary).
  void foldParameterCopies() {
    for (Operation &op : entry) {
      auto adam = dyn_cast<compute::AdamWOp>(op);
      if (!adam)
        continue;
      if (!getElementTypeOrSelf(adam.getNewParam()).isF32())
        continue;
      for (Operation *user : adam.getNewParam().getUsers()) {
        auto c = dyn_cast<compute::CastOp>(user);
        if (!c || !isa<BFloat16Type, Float16Type>(getElementTypeOrSelf(c.getResult())) ||
            c->hasAttr("zero.host") != op.hasAttr("zero.host") ||
            viewOf.count(c.getResult()) || resultView.count(c.getResult()))
          continue;
        copyOf[&op] = c.getResult();
        dropped.insert(c);
        break;
      }
    }
  }

  /// The values a kernel writes: its op's results, then a folded copy.
  SmallVector<Value> madeBy(Operation &op) {
    SmallVector<Value> made(op.getResults());
    if (Value copy = copyOf.lookup(&op))
      made.push_back(copy);
    return made;
  }

  /// Matmuls and fused attention read their operands, and write their results,
  /// in place through slices, reshapes and transposes where their kernels can: a
  /// matmul a strided matrix (a head split or merge, a slice of a fused QKV
  /// projection, a transposed weight), attention any view whose rows are
  /// contiguous. The kernel takes the chain's first value with the strides, and a
  /// chain op that only such kernels read is not run. Without views, only a
  /// transpose of a matmul's last two dimensions is read in place (a flag BLAS
  /// takes for free).
  void foldStridedLayouts() {
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

  void foldMatMulLayouts(Operation &op) {
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

  /// Attention's [batch, heads, rows, width] operands (zplan/AttentionViews.h)
  /// read as views whose rows are contiguous: the heads of a QKV projection where
  /// it wrote them. Its results written into the transpose that merges their heads
  /// (the forward's result also read by the gradients, through the same view).
  void foldAttentionLayouts(Operation &op) {
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

  /// The QKV projection's gradient: dQ, dK and dV, each through its head merge
  /// (and a reshape) into one concat, are written where the concat puts them, and
  /// the concat, merges and reshapes run no kernel. Only where the three are alike
  /// ([B, H, T, D] each, so they tile the concat at evenly spaced offsets, as the
  /// runtime checks) and the concat joins exactly them.
  void foldGradientsIntoConcat(Operation &op) {
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

  /// `res` as a view of the result of the transpose `t` that reads it (its one
  /// reader when not given), where the result could take it: a transpose that
  /// moves elements and whose result is neither an update nor an output.
  std::optional<StridedView> transposeTarget(Value res, compute::TransposeOp t = {}) {
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

  void writeInto(Value res, const StridedView &into) {
    resultView[res] = into;
    writtenBy[into.root] = res.getDefiningOp();
  }

  /// `v` as a strided view of the first value of the slices, reshapes and
  /// transposes that make it (`v` itself when none does); nothing where a reshape
  /// cannot be one or a slice steps backwards.
  std::optional<StridedView> stridedViewOf(Value v) {
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

  /// Whether a chain that makes `v` runs a kernel: a transpose that moves
  /// elements or a slice that is not a view.
  bool costsAKernel(Value v) {
    for (Operation *def = v.getDefiningOp(); isChainOp(def);
         def = def->getOperand(0).getDefiningOp())
      if (!viewOf.count(def->getResult(0)))
        return true;
    return false;
  }

  /// A slice, reshape or transpose that a matmul may read through (not one a
  /// matmul writes: its result is a buffer of its own).
  bool isChainOp(Operation *op) {
    return op && isa<compute::ReshapeOp, compute::SliceOp, compute::TransposeOp>(op) &&
           !writtenBy.count(op->getResult(0));
  }

  /// The value whose buffer operand `i` of `op` reads.
  Value readOf(Operation &op, unsigned i) {
    auto it = operandView.find({&op, i});
    return it == operandView.end() ? op.getOperand(i) : it->second.root;
  }
  /// The value whose buffer result `r` is written into.
  Value writeOf(Value r) {
    auto it = resultView.find(r);
    return it == resultView.end() ? r : it->second.root;
  }
  /// Ops that emit nothing and read nothing: dropped chain ops, transposes a
  /// matmul writes.
  bool emitsNothing(Operation &op) {
    return dropped.contains(&op) ||
           (op.getNumResults() && writtenBy.count(op.getResult(0)));
  }

  /// The value a folded transpose or a wait stands for.
  Value resolve(Value v) {
    Value s = source.lookup(v);
    return s ? s : v;
  }
  /// The value whose buffer holds `v`'s bytes.
  Value base(Value v) {
    v = resolve(v);
    auto it = viewOf.find(v);
    return it == viewOf.end() ? v : it->second.root;
  }

  // Phase 2: liveness. The last reader of every value, so that a temporary is
  // freed right after it (and the last reader that is not the terminator).
  void computeLiveness() {
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

  /// The fused classifier writes the scores' gradient over the scores where
  /// nothing reads them after it (and they are a whole temporary of the same
  /// size): the B·T×V logits are not kept twice. Its kernels read each row
  /// before writing it.
  void foldWritesOver() {
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

  // Phase 3: emission.

  /// Host memory (offload): arguments the offload passes marked, values of host
  /// ops and of copies to the host or from the NVMe file.
  bool isHost(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return bool(func.getArgAttr(arg.getArgNumber(), "compute.host"));
    Operation *def = v.getDefiningOp();
    return def && (def->hasAttr("zero.host") ||
                   isa<compute::ToHostOp, compute::NvmeReadOp>(def));
  }
  /// The NVMe file (NVMe offload): arguments marked so, and their new values.
  bool isNvme(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return bool(func.getArgAttr(arg.getArgNumber(), "compute.nvme"));
    return isa_and_nonnull<compute::NvmeWriteOp>(v.getDefiningOp());
  }
  /// Where `v`'s buffer goes. A host kernel's result may reuse the bytes of host
  /// temporaries that died before it: host kernels run one after another on the
  /// host worker, each once the copies issued before it are done, so whatever
  /// read the old bytes (an earlier host kernel, a copy to the device) has. A copy
  /// to the host writes on the copy stream, which does not wait for the host
  /// kernels before it: its result gets bytes of its own for the step.
  Space spaceOf(Value v) {
    if (isNvme(v))
      return Space::Nvme;
    if (!isHost(v))
      return Space::Device;
    Operation *def = v.getDefiningOp();
    return def && (def->hasAttr("zero.host") || isa<compute::NvmeReadOp>(def))
               ? Space::HostKernel
               : Space::Host;
  }
  ArenaAllocator &arenaFor(Space space) {
    switch (space) {
    case Space::Device:
      return arena;
    case Space::Host:
      return hostArena;
    case Space::HostKernel:
      return hostKernelArena;
    case Space::Nvme:
      break;
    }
    return nvmeArena;
  }
  /// A buffer is freed at its last reader, except host bytes outside the host
  /// kernels' part (see spaceOf) and the NVMe file's (persistent).
  void release(Value v) {
    Space space = spaceOf(v);
    if (space != Space::Host && space != Space::Nvme)
      arenaFor(space).release(offsetOf[v]);
  }
  bool isTemp(Value v) {
    return cast<plan::BufferOp>(bufferOf.lookup(v).getDefiningOp()).getRole() ==
           plan::BufferRole::temp;
  }

  plan::BufferOp makeBuffer(Value v, plan::BufferRole role, NamedAttrList attrs) {
    Space space = spaceOf(v);
    bool host = space == Space::Host || space == Space::HostKernel;
    // The offset is set once all are known.
    int64_t id = arenaFor(space).allocate(bytesOf(v));
    auto buf = plan::BufferOp::create(
        b, v.getLoc(), bufferTypeOf(v), plan::BufferRoleAttr::get(b.getContext(), role),
        b.getI64IntegerAttr(0), nullptr, nullptr, nullptr, host ? b.getUnitAttr() : nullptr,
        space == Space::Nvme ? b.getUnitAttr() : nullptr, Value());
    for (NamedAttribute a : attrs)
      buf->setAttr(a.getName(), a.getValue());
    bufferOf[v] = buf;
    offsetOf[v] = id;
    (space == Space::Device   ? placements
     : space == Space::Host   ? hostPlacements
     : space == Space::Nvme   ? nvmePlacements
                              : hostKernelPlacements)
        .push_back(std::make_pair(buf, id));
    return buf;
  }

  /// Parameters and inputs live for the whole step.
  LogicalResult emitArguments() {
    for (BlockArgument arg : entry.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()) ||
          !cast<RankedTensorType>(arg.getType()).hasStaticShape())
        return func.emitError("argument ")
               << arg.getArgNumber() << " is not a statically shaped tensor";
      NamedAttrList attrs;
      unsigned i = arg.getArgNumber();
      if (auto name = func.getArgAttrOfType<StringAttr>(i, "compute.param")) {
        attrs.append("name", name);
        makeBuffer(arg, plan::BufferRole::param, attrs);
      } else if (auto name =
                     func.getArgAttrOfType<StringAttr>(i, "compute.param_bucket")) {
        // This rank's slice of a flat parameter bucket (ZeRO stage 3).
        attrs.append("name", name);
        attrs.append("bucket_members", func.getArgAttr(i, "compute.bucket_members"));
        attrs.append("bucket_elements", func.getArgAttr(i, "compute.bucket_elements"));
        makeBuffer(arg, plan::BufferRole::param, attrs);
      } else if (auto name = func.getArgAttrOfType<StringAttr>(i, "compute.master")) {
        // Mixed precision: the f32 master copy of a parameter, loaded from the
        // same initializer.
        attrs.append("name", name);
        makeBuffer(arg, plan::BufferRole::master, attrs);
      } else if (auto name =
                     func.getArgAttrOfType<StringAttr>(i, "compute.master_bucket")) {
        attrs.append("name", name);
        attrs.append("bucket_members", func.getArgAttr(i, "compute.bucket_members"));
        attrs.append("bucket_elements", func.getArgAttr(i, "compute.bucket_elements"));
        makeBuffer(arg, plan::BufferRole::master, attrs);
      } else if (auto name = func.getArgAttrOfType<StringAttr>(i, "compute.runtime")) {
        attrs.append("name", name); // set by the runtime before each step
        makeBuffer(arg, plan::BufferRole::runtime, attrs);
      } else if (auto name = func.getArgAttrOfType<StringAttr>(i, "compute.state")) {
        attrs.append("name", name);
        // Above stage 0: this rank's slice of a bucket's state (BUCKET.SUFFIX).
        if (auto members = func.getArgAttr(i, "compute.bucket_members")) {
          attrs.append("bucket_members", members);
          attrs.append("bucket_elements", func.getArgAttr(i, "compute.bucket_elements"));
        }
        makeBuffer(arg, plan::BufferRole::state, attrs);
      } else if (auto index =
                     func.getArgAttrOfType<IntegerAttr>(i, "compute.input")) {
        attrs.append("index", index);
        if (auto name = func.getArgAttrOfType<StringAttr>(i, "compute.name"))
          attrs.append("name", name);
        if (auto micro = func.getArgAttrOfType<IntegerAttr>(i, "compute.micro_step"))
          attrs.append("micro_step", micro);
        makeBuffer(arg, plan::BufferRole::input, attrs);
      } else {
        return func.emitError("argument ")
               << i << " is not a compute.param, compute.master, compute.state, "
               << "compute.runtime or compute.input";
      }
    }
    return success();
  }

  /// Constants are written once, when the plan loads, so they too are placed
  /// before any temporary: a temporary must never reuse their bytes.
  void emitConstants() {
    for (Operation &op : entry.without_terminator())
      if (auto cst = dyn_cast<compute::ConstantOp>(op)) {
        NamedAttrList attrs;
        attrs.append("value", cst.getValue());
        makeBuffer(cst.getResult(), plan::BufferRole::constant, attrs);
      }
  }

  /// Completes request N; its result is the start's buffer.
  void emitWait(zops::WaitOp w) {
    Operation *start = w.getToken().getDefiningOp();
    plan::KernelOp::create(b, w.getLoc(), plan::KernelKind::wait, ValueRange{},
                           ValueRange{bufferOf.lookup(w.getPending())},
                           b.getDictionaryAttr(b.getNamedAttr(
                               "request", b.getI64IntegerAttr(requestOf.lookup(start)))));
    // The start read its input until now.
    Value in = base(start->getOperand(0));
    if (lastUse.lookup(in) == w.getOperation() && isTemp(in))
      release(in);
  }

  /// A view: a buffer over its root's bytes, no kernel.
  void emitView(Value r, const View &v) {
    Value root = bufferOf.lookup(v.root);
    // A view of a result written over its operand (itself a view at offset 0 of
    // that operand's buffer) reads the buffer underneath: views are one level.
    if (Value under = cast<plan::BufferOp>(root.getDefiningOp()).getViewOf())
      root = under;
    Space space = spaceOf(v.root);
    bool host = space != Space::Device;
    auto view = plan::BufferOp::create(
        b, r.getLoc(), bufferTypeOf(r),
        plan::BufferRoleAttr::get(b.getContext(), plan::BufferRole::temp),
        b.getI64IntegerAttr(0), nullptr, nullptr, nullptr,
        host ? b.getUnitAttr() : nullptr, nullptr, root);
    bufferOf[r] = view;
    offsetOf[r] = offsetOf.lookup(v.root);
    viewPlacements.push_back({view, offsetOf[r], v.bytes, space});
  }

  /// One op of the step: a wait, a view, nothing (a constant, a folded
  /// transpose), or a kernel with its output buffers; then what dies there.
  LogicalResult emitOp(Operation &op) {
    if (auto w = dyn_cast<zops::WaitOp>(op)) {
      emitWait(w);
      return success();
    }
    bool isStart =
        isa<zops::AllGatherStartOp, zops::ReduceScatterStartOp, zops::AllReduceStartOp>(op);
    bool isCollective =
        isStart || isa<mlir::shard::AllGatherOp, mlir::shard::ReduceScatterOp,
                       mlir::shard::AllReduceOp, mlir::shard::AllSliceOp>(op);
    if (op.getDialect() != op.getContext()->getLoadedDialect("compute") && !isCollective)
      return op.emitError("cannot lower '")
             << op.getName()
             << "' to the plan: only compute ops and shard collectives are supported";
    // Every collective, split or not, must be one the runtime runs.
    RankGroup group = kWorld;
    int64_t groupSize = worldSize;
    if (isCollective && failed(checkCollective(op, worldSize, group, groupSize)))
      return failure();
    if (isa<compute::ConstantOp>(op) || emitsNothing(op))
      return success();
    if (auto it = viewOf.find(op.getResult(0)); it != viewOf.end()) {
      emitView(op.getResult(0), it->second);
      return success();
    }
    SmallVector<Value> ins, outs;
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      ins.push_back(bufferOf.lookup(resolve(readOf(op, i))));
    // Outputs are placed before any input is released, so a kernel never writes
    // over what it reads.
    bool newBuffers = false; // whether an output took arena memory of its own
    for (Value made : madeBy(op)) {
      if (!isa<RankedTensorType>(made.getType()))
        continue; // a collective's token has no buffer
      Value r = writeOf(made);
      if (Value shared = bufferOf.lookup(r)) { // an earlier result's target too
        outs.push_back(shared);
        continue;
      }
      if (Value over = writtenOver.lookup(r)) {
        emitView(r, View{over, 0});
        outs.push_back(bufferOf[r]);
        newBuffers = true;
        continue;
      }
      BlockArgument target = updateOf.lookup(r);
      if (target && ((isInPlaceSafe(op) && lastUse.lookup(target) == &op &&
                      llvm::is_contained(op.getOperands(), Value(target))) ||
                     (!isCollective && writesStraightInto(op, r, target)))) {
        bufferOf[r] = bufferOf.lookup(target);
        offsetOf[r] = offsetOf.lookup(target);
        inPlace.insert(r);
        outs.push_back(bufferOf[r]);
        continue;
      }
      if (isNvme(r)) // the pass placed the write after the old value's last read
        return op.emitError("internal error: the NVMe write of argument ")
               << (target ? (int64_t)target.getArgNumber() : -1)
               << " cannot go straight into it";
      outs.push_back(makeBuffer(r, plan::BufferRole::temp, {}));
      newBuffers = true;
    }
    FailureOr<DictionaryAttr> attrs = kernelAttrs(op, isCollective, isStart);
    if (failed(attrs))
      return failure();
    if (group != kWorld) { // a hybrid grid's group, which the runtime makes
      NamedAttrList withGroup(*attrs);
      withGroup.set("group", b.getI64IntegerAttr(group));
      withGroup.set("group_size", b.getI64IntegerAttr(groupSize));
      attrs = withGroup.getDictionary(op.getContext());
    }
    if (!newBuffers && joinOptimizerGroup(op, ins, outs, *attrs)) {
      copyUpdatesEarly(op);
      releaseDead(op);
      return success();
    }
    // The op's name is the kind's (compute.matmul runs the matmul kernel); a
    // fused product is a matmul kernel with its epilogue's operands.
    std::optional<plan::KernelKind> kind =
        isa<compute::FusedMatMulOp>(op)
            ? plan::KernelKind::matmul
            : plan::symbolizeKernelKind(op.getName().stripDialect());
    if (!kind)
      return op.emitOpError("has no runtime kernel: the plan has no kernel kind '")
             << op.getName().stripDialect() << "'";
    auto k = plan::KernelOp::create(b, op.getLoc(), *kind, ins, outs, *attrs);
    openGroup = pendingGroup ? k : nullptr; // a device update: later ones may join it
    pendingGroup = false;
    // For the report (not the runtime): work done again by activation
    // checkpointing.
    if (op.hasAttr("zero.recompute"))
      k->setAttr("zero.recompute", b.getUnitAttr());
    copyUpdatesEarly(op);
    releaseDead(op);
    return success();
  }

  /// The optimizer in one kernel: an update (AdamW or SGD, on the device) right
  /// after another of the same kind, hyperparameters, runtime scalars and types
  /// joins its kernel, whose operand_segments then count N tensors per operand
  /// (params, grads, states..., then the step's scalars once) and whose outputs are
  /// N per result. It is safe because nothing is placed between the two: the
  /// update writes in place (no output of its own in the arena), so no memory the
  /// earlier members free is taken before the joined kernel has run; and every
  /// input of the later member exists already (no kernel ran in between).
  bool joinOptimizerGroup(Operation &op, ArrayRef<Value> ins, ArrayRef<Value> outs,
                          DictionaryAttr attrs) {
    if (!isa<compute::AdamWOp, compute::SgdOp>(op) || op.hasAttr("zero.host")) {
      openGroup = nullptr;
      return false;
    }
    size_t own = isa<compute::AdamWOp>(op) ? 4 : 3; // tensor operands before the scalars
    size_t results = own - 1 + (outs.size() > own - 1 ? 1 : 0); // (+ the 16-bit copy)
    auto segmentsOf = [](DictionaryAttr a) {
      return SmallVector<int64_t>(a.getAs<DenseI64ArrayAttr>("operand_segments").asArrayRef());
    };
    auto without = [](DictionaryAttr a) {
      NamedAttrList l(a);
      l.erase("operand_segments");
      return l.getDictionary(a.getContext());
    };
    plan::KernelOp group = openGroup;
    bool joins = group && !b.getInsertionBlock()->empty() &&
                 &b.getInsertionBlock()->back() == group.getOperation() &&
                 group.getKernel() == *plan::symbolizeKernelKind(op.getName().stripDialect()) &&
                 without(group.getAttrs()) == without(attrs) &&
                 outs.size() == results;
    SmallVector<int64_t> seg = joins ? segmentsOf(group.getAttrs()) : SmallVector<int64_t>();
    size_t n = joins ? seg[0] : 0;
    if (joins) {
      ValueRange gins = group.getInputs(), gouts = group.getOutputs();
      // The same scalars (step, scale, overflow count, learning rate)...
      joins = gouts.size() == results * n &&
              llvm::equal(gins.drop_front(own * n), ArrayRef<Value>(ins).drop_front(own));
      // ...and the same element types per operand and result.
      for (size_t i = 0; joins && i < own; ++i)
        joins = getElementTypeOrSelf(gins[i * n].getType()) ==
                getElementTypeOrSelf(ins[i].getType());
      for (size_t i = 0; joins && i < results; ++i)
        joins = getElementTypeOrSelf(gouts[i * n].getType()) ==
                getElementTypeOrSelf(outs[i].getType());
    }
    if (!joins) {
      openGroup = nullptr; // the caller makes this update's kernel, which opens one
      pendingGroup = true;
      return false;
    }
    ValueRange gins = group.getInputs(), gouts = group.getOutputs();
    SmallVector<Value> newIns, newOuts;
    for (size_t i = 0; i < own; ++i) {
      llvm::append_range(newIns, gins.slice(i * n, n));
      newIns.push_back(ins[i]);
    }
    llvm::append_range(newIns, gins.drop_front(own * n));
    for (size_t i = 0; i < results; ++i) {
      llvm::append_range(newOuts, gouts.slice(i * n, n));
      newOuts.push_back(outs[i]);
    }
    for (size_t i = 0; i < own; ++i)
      seg[i] = (int64_t)n + 1;
    NamedAttrList merged(group.getAttrs());
    merged.set("operand_segments", b.getDenseI64ArrayAttr(seg));
    openGroup = plan::KernelOp::create(b, group.getLoc(), group.getKernel(), newIns, newOuts,
                                       merged.getDictionary(b.getContext()));
    group.erase();
    return true;
  }

  /// The kernel's attributes: the op's own, but for the passes' marks; which
  /// optional operands are there; a collective's request id; a fused op's
  /// program; a matmul's folded transposes.
  FailureOr<DictionaryAttr> kernelAttrs(Operation &op, bool isCollective, bool isStart) {
    NamedAttrList attrs;
    if (!isCollective) // a collective's attributes are all implied (checked above)
      for (NamedAttribute a : op.getAttrs()) {
        // Which optional operands are there (the optimizers' runtime values).
        if (auto seg = dyn_cast<DenseI32ArrayAttr>(a.getValue());
            seg && a.getName() == "operandSegmentSizes") {
          SmallVector<int64_t> sizes(seg.asArrayRef().begin(), seg.asArrayRef().end());
          attrs.append("operand_segments", b.getDenseI64ArrayAttr(sizes));
          continue;
        }
        // The passes' marks; which optional results there are (the kernel's
        // outputs and `activation` say it).
        if (a.getName().strref().starts_with("zero.") || a.getName() == "resultSegmentSizes")
          continue;
        attrs.append(a);
      }
    if (auto block = op.getAttrOfType<IntegerAttr>(kQuantizeBlockAttr); block && isCollective)
      attrs.append("quantize_block", block);
    if (isStart) {
      int64_t id = requestOf.size();
      requestOf[&op] = id;
      attrs.append("request", b.getI64IntegerAttr(id));
    }
    if (auto f = dyn_cast<compute::FusedOp>(op)) {
      FailureOr<SmallVector<int64_t>> program = encodeFusedProgram(f);
      if (failed(program))
        return failure();
      attrs.append("program", b.getDenseI64ArrayAttr(*program));
    }
    appendLayouts(op, attrs);
    return attrs.getDictionary(op.getContext());
  }

  /// Operands and results read or written in place: a matmul's transpose of the
  /// last two dimensions of a whole tensor as a flag, anything else as a view
  /// (NAME_shape, NAME_strides, NAME_offset).
  void appendLayouts(Operation &op, NamedAttrList &attrs) {
    auto appendView = [&](StringRef name, Value v, const StridedView &view) {
      attrs.append(name.str() + "_shape",
                   b.getDenseI64ArrayAttr(cast<RankedTensorType>(v.getType()).getShape()));
      attrs.append(name.str() + "_strides", b.getDenseI64ArrayAttr(view.strides));
      attrs.append(name.str() + "_offset", b.getI64IntegerAttr(view.offset));
    };
    bool matmul = isa<compute::MatMulOp, compute::FusedMatMulOp>(op);
    bool grad = isa<compute::AttentionGradOp>(op);
    if (!matmul && !isa<compute::AttentionOp>(op) && !grad)
      return;
    for (unsigned i = 0; i < op.getNumOperands(); ++i) {
      auto it = operandView.find({&op, i});
      if (it == operandView.end())
        continue;
      StringRef name = matmul ? (i == 0 ? "lhs" : "rhs") : ::zplan::attention::inputView(grad, i);
      Value v = op.getOperand(i);
      auto def = dyn_cast_or_null<compute::TransposeOp>(v.getDefiningOp());
      if (matmul && def && isLastTwoSwap(def) && def.getInput() == it->second.root)
        attrs.append("transpose_" + name.str(), b.getBoolAttr(true));
      else
        appendView(name, v, it->second);
    }
    for (OpResult r : op.getResults())
      if (auto it = resultView.find(r); it != resultView.end())
        appendView(matmul ? "out" : ::zplan::attention::outputView(grad, r.getResultNumber()),
                   r, it->second);
  }

  /// Whether `op` can write `r`, the new value of argument `target`, into the
  /// argument itself: nothing reads the old value from `op` on (the 16-bit copy
  /// of an updated master weight, cast after the update), both lie in the same
  /// memory, and `r` is returned once. Then no temporary and no copy kernel.
  bool writesStraightInto(Operation &op, Value r, BlockArgument target) {
    Operation *lastRead = lastUse.lookup(target);
    if (lastRead && position[lastRead] >= position[&op])
      return false;
    return isHost(r) == isHost(target) && isNvme(r) == isNvme(target) &&
           r.getType() == target.getType() &&
           llvm::count(terminator->getOperands(), r) == 1;
  }

  /// A new value whose argument nobody reads any more goes into it at once (not
  /// at the end of the step), so that its temporary dies here: otherwise every
  /// updated parameter of a ZeRO 1-2 step would be alive at once at the end.
  void copyUpdatesEarly(Operation &op) {
    for (Value r : madeBy(op)) {
      BlockArgument target = updateOf.lookup(r);
      if (!target || inPlace.contains(r) || lastUse.lookup(r) != terminator)
        continue;
      Operation *lastRead = lastUse.lookup(target);
      if (lastRead && position[lastRead] > position[&op])
        continue;
      plan::KernelOp::create(b, r.getLoc(), plan::KernelKind::copy,
                             ValueRange{bufferOf.lookup(r)},
                             ValueRange{bufferOf.lookup(target)}, b.getDictionaryAttr({}));
      copiedEarly.insert(r);
      // Dead now unless a kernel still reads it (then its last reader frees it).
      if (llvm::count(terminator->getOperands(), r) == 1 && !lastKernelUse.count(r))
        release(r);
    }
  }

  /// Results nobody reads die at once; inputs die at their last reader.
  void releaseDead(Operation &op) {
    auto releaseIfDead = [&](Value v, bool isResult) {
      if (!isTemp(v) || handedOver.contains(v))
        return;
      Operation *last = lastUse.lookup(v);
      if ((isResult && !last) || last == &op)
        release(v);
    };
    llvm::SmallDenseSet<Value> written;
    for (Value r : madeBy(op))
      if (isa<RankedTensorType>(r.getType()) && written.insert(writeOf(r)).second)
        releaseIfDead(writeOf(r), /*isResult=*/true);
    llvm::SmallDenseSet<Value> seen;
    for (unsigned i = 0; i < op.getNumOperands(); ++i) {
      Value operand = readOf(op, i);
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      Value v = base(operand);
      if (!seen.insert(v).second)
        continue;
      if (lastUse.lookup(v) != terminator)
        releaseIfDead(v, /*isResult=*/false);
      else if (copiedEarly.contains(v) && lastKernelUse.lookup(v) == &op &&
               llvm::count(terminator->getOperands(), v) == 1)
        release(v); // copied into its argument already
    }
  }

  /// The outputs; updated arguments not yet written get their copy.
  void emitReturn() {
    SmallVector<Value> results;
    SmallVector<Attribute> names;
    auto allNames = func->getAttrOfType<ArrayAttr>("compute.output_names");
    for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
      if (BlockArgument target = updateOf.lookup(v)) {
        if (!inPlace.contains(v) && !copiedEarly.contains(v))
          plan::KernelOp::create(b, v.getLoc(), plan::KernelKind::copy,
                                 ValueRange{bufferOf.lookup(v)},
                                 ValueRange{bufferOf.lookup(target)},
                                 b.getDictionaryAttr({}));
        continue;
      }
      results.push_back(bufferOf.lookup(v));
      if (allNames && i < allNames.size())
        names.push_back(allNames[i]);
    }
    auto ret = plan::ReturnOp::create(b, terminator->getLoc(), results, nullptr);
    if (allNames)
      ret.setNamesAttr(b.getArrayAttr(names));
  }

  // Phase 4: placement.
  void place() {
    arena.place();
    hostArena.place();
    hostKernelArena.place();
    nvmeArena.place();
    for (auto [buf, id] : nvmePlacements)
      buf.setOffsetAttr(b.getI64IntegerAttr(nvmeArena.offset(id)));
    if (!nvmePlacements.empty())
      program.setNvmeArenaBytes(nvmeArena.size());
    // The host kernels' part follows the rest of the host arena.
    int64_t kernelBase = (hostArena.size() + 63) / 64 * 64;
    auto offsetIn = [&](Space space, int64_t id) {
      return space == Space::HostKernel ? kernelBase + hostKernelArena.offset(id)
                                        : arenaFor(space).offset(id);
    };
    for (auto [buf, id] : placements)
      buf.setOffsetAttr(b.getI64IntegerAttr(arena.offset(id)));
    for (auto [buf, id] : hostPlacements)
      buf.setOffsetAttr(b.getI64IntegerAttr(hostArena.offset(id)));
    for (auto [buf, id] : hostKernelPlacements)
      buf.setOffsetAttr(b.getI64IntegerAttr(offsetIn(Space::HostKernel, id)));
    for (ViewPlacement &v : viewPlacements)
      v.view.setOffsetAttr(b.getI64IntegerAttr(offsetIn(v.space, v.rootId) + v.bytes));
    program.setArenaBytes(arena.size());
    if (!hostPlacements.empty() || !hostKernelPlacements.empty())
      program.setHostArenaBytes(hostKernelPlacements.empty()
                                    ? hostArena.size()
                                    : kernelBase + hostKernelArena.size());
  }

  func::FuncOp func;
  Block &entry;
  Operation *terminator;
  OpBuilder b;
  int64_t worldSize;
  bool views;
  plan::ProgramOp program;

  // fold
  DenseMap<Value, Value> source;              // wait -> the value it completes
  DenseMap<std::pair<Operation *, unsigned>, StridedView> operandView; // views read
  DenseMap<Value, StridedView> resultView;    // a result -> the transpose it is written into
  DenseMap<Value, Operation *> writtenBy;     // that transpose's result -> the writer
  DenseSet<Operation *> dropped;              // chain ops no kernel reads, folded casts
  DenseMap<Operation *, Value> copyOf;        // AdamW -> the 16-bit copy it writes too
  plan::KernelOp openGroup;  // the optimizer kernel later updates may join
  bool pendingGroup = false; // the kernel being made may open a group
  DenseSet<Value> roots;                      // values kernels read through chains
  DenseMap<Value, BlockArgument> updateOf;    // new value -> the argument it replaces
  DenseMap<Value, View> viewOf;
  // liveness
  DenseMap<Value, Operation *> lastUse, lastKernelUse;
  DenseMap<Operation *, int64_t> position;
  // emission: device memory, and host memory for offload (an optimizer's
  // master weights, state and the values its host kernels read and write; the
  // parameter slices).
  ArenaAllocator arena, hostArena, hostKernelArena,
      nvmeArena{zrt::kNvmeAlignment}; // O_DIRECT: block-aligned offsets and sizes
  DenseMap<Value, Value> bufferOf;
  DenseMap<Value, int64_t> offsetOf; // the arena's id of each value's buffer
  DenseSet<Value> inPlace;           // new values written over their argument
  DenseMap<Value, Value> writtenOver; // a result -> the dying operand it overwrites
  DenseSet<Value> handedOver;         // such operands: freed with the result
  DenseSet<Value> copiedEarly;       // new values already copied into their argument
  DenseMap<Operation *, int64_t> requestOf; // started collective -> request id
  // placement
  SmallVector<std::pair<plan::BufferOp, int64_t>> placements, hostPlacements,
      hostKernelPlacements, nvmePlacements;
  SmallVector<ViewPlacement> viewPlacements;
};

struct ConvertComputeToPlanPass
    : public zero::impl::ConvertComputeToPlanPassBase<ConvertComputeToPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no func.func @main to lower");
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("@main must have a single block");
      return signalPassFailure();
    }
    if (failed(PlanLowering(func, worldSize, views).run()))
      return signalPassFailure();
    func.erase();
  }
};

} // namespace
