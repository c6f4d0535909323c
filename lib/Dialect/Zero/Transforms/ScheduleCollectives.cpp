//===- ScheduleCollectives.cpp - Start early, wait late -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace zero {
#define GEN_PASS_DEF_SCHEDULECOLLECTIVESPASS
#include "zero/Dialect/Zero/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::zops;

namespace {

int64_t bytesOf(Value v) {
  return zero::shapedBytes(cast<RankedTensorType>(v.getType()));
}

/// The order of a block's ops as this pass moves them: MLIR recomputes a block's
/// order after most moves, which made sinking quadratic (a 96-layer model has
/// tens of thousands of waits and ops). A moved op takes the midpoint of its new
/// neighbours' positions; the block is renumbered when doubles run out of room.
class BlockOrder {
public:
  explicit BlockOrder(Block &block) : block(block) { renumber(); }
  bool isBefore(Operation *a, Operation *b) const { return pos.lookup(a) < pos.lookup(b); }
  void moveBefore(Operation *op, Operation *anchor) {
    op->moveBefore(anchor);
    Operation *prev = op->getPrevNode();
    double hi = pos.lookup(anchor), lo = prev ? pos.lookup(prev) : hi - 1.0;
    double mid = lo + (hi - lo) / 2;
    if (lo < mid && mid < hi)
      pos[op] = mid;
    else
      renumber();
  }

private:
  void renumber() {
    double i = 0;
    for (Operation &op : block)
      pos[&op] = i++;
  }
  Block &block;
  DenseMap<Operation *, double> pos;
};

struct ScheduleCollectivesPass
    : public zero::impl::ScheduleCollectivesPassBase<ScheduleCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    Block &entry = func.getBody().front();
    if (fuseBelowKb > 0) {
      // A reduction's result is consumed where the optimizer needs it: sink its
      // consumers there first, so neighbouring reductions can meet.
      SmallVector<Operation *> reductions;
      for (Operation &op : entry)
        if (isa<mlir::shard::ReduceScatterOp, mlir::shard::AllReduceOp>(op))
          reductions.push_back(&op);
      if (!noOverlap) {
        BlockOrder order(entry);
        for (Operation *op : reductions)
          for (Operation *u : llvm::to_vector(op->getUsers()))
            if (isPureCompute(u))
              sink(u, order);
      }
      fuse(entry, (int64_t)(fuseBelowKb * 1024));
    }
    SmallVector<WaitOp> gradientWaits;
    SmallVector<std::pair<Operation *, WaitOp>> gathers; // stage-3 gathers
    split(entry, gradientWaits, gathers);
    if (noOverlap)
      return;
    BlockOrder order(entry);
    for (WaitOp w : gradientWaits)
      sink(w, order);
    SmallVector<std::pair<WaitOp, WaitOp>> chained;
    SmallVector<WaitOp> reductions = chainReplicaReductions(gradientWaits, chained);
    boundReductionsInFlight(reductions, order);
    for (auto [first, second] : chained)
      order.moveBefore(first, second);
    if (failed(prefetch(entry, gathers)))
      signalPassFailure();
  }

  //===--------------------------------------------------------------------===//
  // Fusion
  //===--------------------------------------------------------------------===//

  static bool isCollective(Operation *op) {
    return isa<mlir::shard::AllGatherOp, mlir::shard::ReduceScatterOp,
               mlir::shard::AllReduceOp>(op);
  }

  /// The full tensor a collective moves: an all-gather's result, else its input.
  static Value fullTensor(Operation *op) {
    return isa<mlir::shard::AllGatherOp>(op) ? op->getResult(0) : op->getOperand(0);
  }

  /// A collective on grid @zero along axis 0, summing if it reduces, in full
  /// precision: what fusePair builds, so what it may fuse.
  static bool isZeroContract(Operation *op) {
    if (op->hasAttr(zops::attr::kQuantizeBlock))
      return false;
    auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    auto reduction = op->getAttrOfType<mlir::shard::ReductionKindAttr>("reduction");
    return grid && grid.getValue() == "zero" && axes &&
           axes.asArrayRef() == ArrayRef<int16_t>{0} &&
           (!reduction || reduction.getValue() == mlir::shard::ReductionKind::Sum);
  }

  /// Fuses collectives `a` and `b` (a first) into one, placed at `at`.
  void fusePair(Operation *a, Operation *b, Operation *at, int64_t n) {
    bool isGather = isa<mlir::shard::AllGatherOp>(a);
    OpBuilder bld(at);
    Location loc = b->getLoc();
    auto et = cast<RankedTensorType>(a->getOperand(0).getType()).getElementType();
    auto t1 = [&](int64_t d) { return RankedTensorType::get({d}, et); };
    auto t2 = [&](int64_t r, int64_t c) { return RankedTensorType::get({r, c}, et); };
    Value x = a->getOperand(0), y = b->getOperand(0);
    int64_t sa = cast<RankedTensorType>(a->getResult(0).getType()).getDimSize(0);
    int64_t sb = cast<RankedTensorType>(b->getResult(0).getType()).getDimSize(0);
    auto slice2 = [&](Value m, int64_t col, int64_t width) {
      return compute::SliceOp::create(bld, loc, t2(n, width), m,
                                      bld.getDenseI64ArrayAttr({0, col}),
                                      bld.getDenseI64ArrayAttr({1, 1}))
          .getResult();
    };
    auto slice1 = [&](Value v, int64_t at, int64_t width) {
      return compute::SliceOp::create(bld, loc, t1(width), v, bld.getDenseI64ArrayAttr({at}),
                                      bld.getDenseI64ArrayAttr({1}))
          .getResult();
    };
    Value ra, rb;
    if (isa<mlir::shard::ReduceScatterOp>(a)) {
      // [N, sa] ++ [N, sb] along the slices: rank r's block is r's slice of both.
      Value xm = compute::ReshapeOp::create(bld, loc, t2(n, sa), x);
      Value ym = compute::ReshapeOp::create(bld, loc, t2(n, sb), y);
      Value cat = compute::ConcatOp::create(bld, loc, t2(n, sa + sb), ValueRange{xm, ym},
                                            bld.getI64IntegerAttr(1));
      Value flat = compute::ReshapeOp::create(bld, loc, t1(n * (sa + sb)), cat);
      Value r = mlir::shard::ReduceScatterOp::create(
          bld, loc, t1(sa + sb), "zero", ArrayRef<int16_t>{0}, flat,
          mlir::shard::ReductionKind::Sum, APInt(64, 0));
      ra = slice1(r, 0, sa);
      rb = slice1(r, sa, sb);
    } else if (isa<mlir::shard::AllGatherOp>(a)) {
      int64_t pa = cast<RankedTensorType>(x.getType()).getDimSize(0);
      int64_t pb = cast<RankedTensorType>(y.getType()).getDimSize(0);
      Value cat = compute::ConcatOp::create(bld, loc, t1(pa + pb), ValueRange{x, y},
                                            bld.getI64IntegerAttr(0));
      auto g = mlir::shard::AllGatherOp::create(bld, loc, t1(n * (pa + pb)), "zero",
                                                ArrayRef<int16_t>{0}, cat, APInt(64, 0));
      if (Attribute phase = b->getAttr(zops::attr::kPhase))
        g->setAttr(zops::attr::kPhase, phase);
      Value m = compute::ReshapeOp::create(bld, loc, t2(n, pa + pb), g.getResult());
      ra = compute::ReshapeOp::create(bld, loc, t1(sa), slice2(m, 0, pa));
      rb = compute::ReshapeOp::create(bld, loc, t1(sb), slice2(m, pa, pb));
    } else {
      Value cat = compute::ConcatOp::create(bld, loc, t1(sa + sb), ValueRange{x, y},
                                            bld.getI64IntegerAttr(0));
      Value r = mlir::shard::AllReduceOp::create(bld, loc, t1(sa + sb), "zero",
                                                 ArrayRef<int16_t>{0}, cat,
                                                 mlir::shard::ReductionKind::Sum);
      ra = slice1(r, 0, sa);
      rb = slice1(r, sa, sb);
    }
    a->getResult(0).replaceAllUsesWith(ra);
    b->getResult(0).replaceAllUsesWith(rb);
    a->erase();
    b->erase();
    // The reductions' slices go where the optimizer reads them, so the fused
    // reduction can meet the next one.
    if (!noOverlap && !isGather) {
      BlockOrder order(*ra.getParentBlock()); // with the ops just built
      for (Value v : {ra, rb})
        if (Operation *def = v.getDefiningOp())
          if (!def->use_empty())
            sink(def, order);
    }
  }

  /// Fuses neighbouring collectives of one kind while the fused full tensor stays
  /// under `limit` bytes.
  void fuse(Block &entry, int64_t limit) {
    auto grid = getOperation().lookupSymbol<mlir::shard::GridOp>("zero");
    if (!grid || grid.getShape().size() != 1)
      return;
    int64_t n = grid.getShape()[0];
    for (bool changed = true; changed;) {
      changed = false;
      Operation *prev = nullptr;
      for (Operation &op : entry) {
        if (!isCollective(&op))
          continue;
        Operation *a = prev;
        prev = &op;
        // A fused gather must still fit the live-bytes budget.
        int64_t cap = limit;
        if (isa<mlir::shard::AllGatherOp>(op) && maxLiveMb > 0)
          cap = std::min(cap, (int64_t)(maxLiveMb * 1024 * 1024));
        // Only ZeRO's own collectives fuse (the fused one is built on that
        // contract); any other is split as it is, and the lowering judges it.
        if (!a || a->getName() != op.getName() || !isZeroContract(a) ||
            !isZeroContract(&op) ||
            a->getAttr(zops::attr::kPhase) != op.getAttr(zops::attr::kPhase) ||
            bytesOf(fullTensor(a)) + bytesOf(fullTensor(&op)) > cap ||
            cast<RankedTensorType>(a->getOperand(0).getType()).getElementType() !=
                cast<RankedTensorType>(op.getOperand(0).getType()).getElementType())
          continue;
        // Gathers move up to a (their inputs, parameter slices, exist by then);
        // reductions move down to op (a's result must not be read before it).
        Operation *at = &op;
        if (isa<mlir::shard::AllGatherOp>(a)) {
          Operation *def = op.getOperand(0).getDefiningOp();
          if (def && !def->isBeforeInBlock(a))
            continue;
          at = a;
        } else if (llvm::any_of(a->getResult(0).getUsers(), [&](Operation *u) {
                     return u->getBlock() == &entry && !op.isBeforeInBlock(u);
                   })) {
          continue;
        }
        fusePair(a, &op, at, n);
        changed = true;
        break;
      }
    }
  }

  /// Replaces each shard collective by a start and a wait at the same place.
  void split(Block &entry, SmallVectorImpl<WaitOp> &gradientWaits,
             SmallVectorImpl<std::pair<Operation *, WaitOp>> &gathers) {
    SmallVector<Operation *> collectives;
    for (Operation &op : entry)
      if (isa<mlir::shard::AllGatherOp, mlir::shard::ReduceScatterOp,
              mlir::shard::AllReduceOp>(op))
        collectives.push_back(&op);
    for (Operation *op : collectives) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value in = op->getOperand(0);
      Type type = op->getResult(0).getType();
      // The start keeps the collective's contract: grid, axes, reduction kind.
      Operation *start;
      Type token = TokenType::get(b.getContext());
      if (auto g = dyn_cast<mlir::shard::AllGatherOp>(op))
        start = AllGatherStartOp::create(b, loc, type, token, in, g.getGridAttr(),
                                         g.getGridAxesAttr());
      else if (auto r = dyn_cast<mlir::shard::ReduceScatterOp>(op))
        start = ReduceScatterStartOp::create(b, loc, type, token, in, r.getGridAttr(),
                                             r.getGridAxesAttr(), r.getReductionAttr());
      else {
        auto a = cast<mlir::shard::AllReduceOp>(op);
        start = AllReduceStartOp::create(b, loc, type, token, in, a.getGridAttr(),
                                         a.getGridAxesAttr(), a.getReductionAttr());
      }
      if (Attribute phase = op->getAttr(zops::attr::kPhase))
        start->setAttr(zops::attr::kPhase, phase);
      if (Attribute block = op->getAttr(zops::attr::kQuantizeBlock))
        start->setAttr(zops::attr::kQuantizeBlock, block);
      auto wait = WaitOp::create(b, loc, type, start->getResult(1), start->getResult(0));
      op->getResult(0).replaceAllUsesWith(wait.getResult());
      if (isa<mlir::shard::AllGatherOp>(op)) {
        if (op->getAttr(zops::attr::kPhase))
          gathers.push_back({start, wait});
      } else {
        gradientWaits.push_back(wait);
      }
      op->erase();
    }
  }

  /// A reduction reads its input (a full gradient bucket) until its wait: with
  /// every wait at the optimizer, every gradient bucket of the step would be alive
  /// at the end of backward. At most max(1, prefetch-buckets) reductions are in
  /// flight: reduction i is waited for before reduction i + that many starts.
  void boundReductionsInFlight(MutableArrayRef<WaitOp> waits, BlockOrder &order) {
    size_t inFlight = std::max<int64_t>(1, prefetchBuckets);
    for (size_t i = 0; i + inFlight < waits.size(); ++i) {
      Operation *laterStart = waits[i + inFlight].getToken().getDefiningOp();
      if (order.isBefore(laterStart, waits[i]))
        order.moveBefore(waits[i], laterStart);
    }
  }

  /// Hybrid sharding: a reduce-scatter whose slice only the all-reduce across the
  /// groups reads. The all-reduce starts from the reduce-scatter's pending slice,
  /// right after it, with no wait between: collectives run in the order started
  /// (one communication thread, one communication stream), so it reads the slice
  /// once written, and compute never stops for the reduce-scatter. The
  /// reduce-scatter's wait then goes just before the all-reduce's (`chained`:
  /// those pairs). Returns the waits that bound the reductions in flight: the
  /// others, a chain counting once (by its all-reduce).
  SmallVector<WaitOp> chainReplicaReductions(ArrayRef<WaitOp> waits,
                                             SmallVectorImpl<std::pair<WaitOp, WaitOp>> &chained) {
    SmallVector<WaitOp> bounding;
    for (WaitOp w : waits) {
      auto rs = w.getToken().getDefiningOp<ReduceScatterStartOp>();
      auto ar = w.getResult().hasOneUse()
                    ? dyn_cast<AllReduceStartOp>(*w.getResult().getUsers().begin())
                    : AllReduceStartOp();
      if (!rs || !ar || ar->getBlock() != w->getBlock() || !ar.getToken().hasOneUse()) {
        bounding.push_back(w);
        continue;
      }
      ar.getInputMutable().assign(w.getPending());
      chained.push_back({w, cast<WaitOp>(*ar.getToken().getUsers().begin())});
    }
    return bounding;
  }

  /// Moves `op` down to just before its first user, after first moving its pure
  /// compute users the same way, so a waited result is consumed where it is needed.
  void sink(Operation *op, BlockOrder &order) {
    SmallVector<Operation *> users(op->getUsers().begin(), op->getUsers().end());
    for (Operation *u : users)
      if (u->getBlock() == op->getBlock() && isPureCompute(u) && u != op)
        sink(u, order);
    Operation *first = nullptr;
    for (Operation *u : op->getUsers())
      if (u->getBlock() == op->getBlock() && (!first || order.isBefore(u, first)))
        first = u;
    if (first && op->getNextNode() != first)
      order.moveBefore(op, first);
  }

  static bool isPureCompute(Operation *op) {
    return op->getDialect() &&
           op->getDialect()->getNamespace() == compute::ComputeDialect::getDialectNamespace() &&
           mlir::isPure(op) && !isa<compute::AdamWOp, compute::SgdOp>(op);
  }

  /// Stage-3 gathers start up to `prefetchBuckets` gathers ahead, within the
  /// live-bytes budget. Positions are indices in the current op order.
  ///
  /// The budget is soft, as DeepSpeed's stage3_max_live_parameters is
  /// (PartitionedParameterCoordinator fetches the module it runs whatever its
  /// size, and bounds only what it prefetches and keeps): a bucket larger than
  /// the budget is gathered where it is first read, and nothing is prefetched
  /// to live beside it (no placement where it is alive fits).
  LogicalResult prefetch(Block &entry,
                         SmallVectorImpl<std::pair<Operation *, WaitOp>> &gathers) {
    if (gathers.empty())
      return success();
    int64_t budget = maxLiveMb > 0 ? (int64_t)(maxLiveMb * 1024 * 1024) : INT64_MAX;
    // The bucket a gather fills lives from its start to the last reader of its
    // result.
    struct Interval {
      int64_t from, to, bytes;
    };
    // The block's order and each op's index in it, kept as starts move (a model
    // of 96 layers has tens of thousands of gathers and ops: no rescans).
    std::vector<Operation *> order;
    DenseMap<Operation *, int64_t> pos;
    for (Operation &op : entry) {
      pos[&op] = (int64_t)order.size();
      order.push_back(&op);
    }
    bool limited = budget != INT64_MAX;
    // Through slices and reshapes: the plan reads the parameters in place from
    // the gathered bucket (views), so it lives until their last reader.
    auto lastUse = [&](WaitOp w, DenseMap<Operation *, int64_t> &pos) {
      int64_t last = pos[w];
      SmallVector<Value> work = {w.getResult()};
      while (!work.empty())
        for (Operation *u : work.pop_back_val().getUsers()) {
          last = std::max(last, pos[u]);
          if (isa<compute::SliceOp, compute::ReshapeOp>(u))
            work.push_back(u->getResult(0));
        }
      return last;
    };
    SmallVector<Interval> placed;
    for (size_t i = 0; i < gathers.size(); ++i) {
      auto [start, wait] = gathers[i];
      int64_t original = pos[start];
      int64_t earliest = 0;
      if (i >= (size_t)prefetchBuckets && prefetchBuckets >= 0)
        earliest = pos[gathers[i - prefetchBuckets].second] + 1;
      if (Operation *def = start->getOperand(0).getDefiningOp())
        earliest = std::max(earliest, pos[def] + 1);
      if (i > 0) // starts keep their order
        earliest = std::max(earliest, pos[gathers[i - 1].first] + 1);
      int64_t end = 0, bytes = bytesOf(start->getResult(0));
      // Earlier gathers have moved: recompute their intervals in this order
      // (only a live-bytes budget needs them).
      placed.clear();
      if (limited) {
        end = lastUse(wait, pos);
        for (size_t j = 0; j < i; ++j)
          placed.push_back({pos[gathers[j].first], lastUse(gathers[j].second, pos),
                            bytesOf(gathers[j].first->getResult(0))});
      }
      auto fits = [&](int64_t from) {
        // The live total only rises at interval starts: check those in range.
        SmallVector<int64_t> points = {from};
        for (const Interval &iv : placed)
          if (iv.from >= from && iv.from <= end)
            points.push_back(iv.from);
        for (int64_t p : points) {
          int64_t live = bytes;
          for (const Interval &iv : placed)
            if (iv.from <= p && p <= iv.to)
              live += iv.bytes;
          if (live > budget)
            return false;
        }
        return true;
      };
      int64_t at = std::min(earliest, original);
      while (limited && at < original && !fits(at))
        ++at;
      if (at < original) {
        start->moveBefore(order[at]);
        std::rotate(order.begin() + at, order.begin() + original,
                    order.begin() + original + 1);
        for (int64_t k = at; k <= original; ++k)
          pos[order[k]] = k;
      }
    }
    return success();
  }
};

} // namespace
