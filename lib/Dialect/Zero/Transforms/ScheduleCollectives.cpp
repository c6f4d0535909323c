//===- ScheduleCollectives.cpp - Start early, wait late -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
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
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * (t.getElementTypeBitWidth() / 8);
}

struct ScheduleCollectivesPass
    : public zero::impl::ScheduleCollectivesPassBase<ScheduleCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    Block &entry = func.getBody().front();
    SmallVector<WaitOp> gradientWaits;
    SmallVector<std::pair<Operation *, WaitOp>> gathers; // stage-3 gathers
    split(entry, gradientWaits, gathers);
    if (noOverlap)
      return;
    for (WaitOp w : gradientWaits)
      sink(w);
    if (failed(prefetch(entry, gathers)))
      signalPassFailure();
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
      Operation *start;
      if (isa<mlir::shard::AllGatherOp>(op))
        start = AllGatherStartOp::create(b, loc, type, TokenType::get(b.getContext()), in);
      else if (isa<mlir::shard::ReduceScatterOp>(op))
        start = ReduceScatterStartOp::create(b, loc, type, TokenType::get(b.getContext()), in);
      else
        start = AllReduceStartOp::create(b, loc, type, TokenType::get(b.getContext()), in);
      if (Attribute phase = op->getAttr("zero.phase"))
        start->setAttr("zero.phase", phase);
      auto wait = WaitOp::create(b, loc, type, start->getResult(1), start->getResult(0));
      op->getResult(0).replaceAllUsesWith(wait.getResult());
      if (isa<mlir::shard::AllGatherOp>(op)) {
        if (op->getAttr("zero.phase"))
          gathers.push_back({start, wait});
      } else {
        gradientWaits.push_back(wait);
      }
      op->erase();
    }
  }

  /// Moves `op` down to just before its first user, after first moving its pure
  /// compute users the same way, so a waited result is consumed where it is needed.
  void sink(Operation *op) {
    SmallVector<Operation *> users(op->getUsers().begin(), op->getUsers().end());
    for (Operation *u : users)
      if (u->getBlock() == op->getBlock() && isPureCompute(u) && u != op)
        sink(u);
    Operation *first = nullptr;
    for (Operation *u : op->getUsers())
      if (u->getBlock() == op->getBlock() && (!first || u->isBeforeInBlock(first)))
        first = u;
    if (first && op->getNextNode() != first)
      op->moveBefore(first);
  }

  static bool isPureCompute(Operation *op) {
    return op->getDialect() &&
           op->getDialect()->getNamespace() == compute::ComputeDialect::getDialectNamespace() &&
           mlir::isPure(op) && !isa<compute::AdamWOp, compute::SgdOp>(op);
  }

  /// Stage-3 gathers start up to `prefetchBuckets` gathers ahead, within the
  /// live-bytes budget. Positions are indices in the current op order.
  LogicalResult prefetch(Block &entry,
                         SmallVectorImpl<std::pair<Operation *, WaitOp>> &gathers) {
    if (gathers.empty())
      return success();
    int64_t budget = maxLiveMb > 0 ? (int64_t)(maxLiveMb * 1024 * 1024) : INT64_MAX;
    for (auto [start, wait] : gathers)
      if (bytesOf(start->getResult(0)) > budget)
        return start->emitError("a gathered bucket of ")
               << bytesOf(start->getResult(0)) << " bytes does not fit --max-live-mb="
               << maxLiveMb << "; raise it or lower --bucket-size-mb";
    // The bucket a gather fills lives from its start to the last reader of its
    // result (the slices that copy the parameters out).
    struct Interval {
      int64_t from, to, bytes;
    };
    auto positions = [&] {
      DenseMap<Operation *, int64_t> pos;
      int64_t i = 0;
      for (Operation &op : entry)
        pos[&op] = i++;
      return pos;
    };
    auto lastUse = [&](WaitOp w, DenseMap<Operation *, int64_t> &pos) {
      int64_t last = pos[w];
      for (Operation *u : w.getResult().getUsers())
        last = std::max(last, pos[u]);
      return last;
    };
    SmallVector<Interval> placed;
    for (size_t i = 0; i < gathers.size(); ++i) {
      auto pos = positions();
      auto [start, wait] = gathers[i];
      int64_t original = pos[start];
      int64_t earliest = 0;
      if (i >= (size_t)prefetchBuckets && prefetchBuckets >= 0)
        earliest = pos[gathers[i - prefetchBuckets].second] + 1;
      if (Operation *def = start->getOperand(0).getDefiningOp())
        earliest = std::max(earliest, pos[def] + 1);
      if (i > 0) // starts keep their order
        earliest = std::max(earliest, pos[gathers[i - 1].first] + 1);
      int64_t end = lastUse(wait, pos), bytes = bytesOf(start->getResult(0));
      // Earlier gathers have moved: recompute their intervals in this order.
      placed.clear();
      for (size_t j = 0; j < i; ++j)
        placed.push_back({pos[gathers[j].first], lastUse(gathers[j].second, pos),
                          bytesOf(gathers[j].first->getResult(0))});
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
      while (at < original && !fits(at))
        ++at;
      if (at < original) {
        Operation *anchor = &*std::next(entry.begin(), at);
        start->moveBefore(anchor);
      }
    }
    return success();
  }
};

} // namespace
