//===- OffloadNvme.cpp - ZeRO-Infinity: model states in the NVMe file -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Moves host-held parameter slices and optimizer state into each rank's NVMe
// file: a read before each reader, a write of the new value. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_OFFLOADNVMEPASS
#include "zero/Dialect/Zero/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

struct OffloadNvmePass : public zero::impl::OffloadNvmePassBase<OffloadNvmePass> {
  using Base::Base;

  /// Whether argument `i`, held in host memory, moves to NVMe.
  bool moves(func::FuncOp func, unsigned i) {
    if (!func.getArgAttr(i, compute::attr::kHost))
      return false;
    if (func.getArgAttr(i, compute::attr::kParamBucket))
      return params;
    return optimizer && (func.getArgAttr(i, compute::attr::kMasterBucket) ||
                         func.getArgAttr(i, compute::attr::kMaster) ||
                         func.getArgAttr(i, compute::attr::kState));
  }

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func || !func.getBody().hasOneBlock()) {
      getOperation().emitError("NVMe offload needs a func.func @main of one block");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    Operation *terminator = entry.getTerminator();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);

    DenseMap<unsigned, Operation *> lastRead; // argument -> its last nvme_read
    int moved = 0;
    for (BlockArgument arg : entry.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!moves(func, i))
        continue;
      func.removeArgAttr(i, compute::attr::kHost);
      func.setArgAttr(i, compute::attr::kNvme, UnitAttr::get(ctx));
      ++moved;
      DenseMap<Operation *, Value> readFor;
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Operation *user = use.getOwner();
        if (user == terminator)
          continue;
        Value &read = readFor[user];
        if (!read) {
          b.setInsertionPoint(user);
          read = compute::NvmeReadOp::create(b, arg.getLoc(), arg);
          Operation *&last = lastRead[i];
          if (!last || last->isBeforeInBlock(read.getDefiningOp()))
            last = read.getDefiningOp();
        }
        use.set(read);
      }
    }
    if (moved == 0) {
      func.emitError("NVMe offload: the step holds no ")
          << (params && optimizer ? "parameter slice or optimizer state"
              : params            ? "parameter slice"
                                  : "optimizer state")
          << " in host memory to move (it follows --offload-param=cpu or "
             "--offload-optimizer=cpu)";
      return signalPassFailure();
    }

    // The new values go back once made and once the old value's last read is
    // done, so that the write can go straight into the argument's bytes.
    for (OpOperand &operand : terminator->getOpOperands()) {
      auto updates = func.getResultAttrOfType<IntegerAttr>(operand.getOperandNumber(),
                                                           compute::attr::kUpdates);
      if (!updates || !func.getArgAttr(updates.getInt(), compute::attr::kNvme))
        continue;
      Value v = operand.get();
      if (v == entry.getArgument(updates.getInt()))
        continue; // returned unchanged
      Operation *after = v.getDefiningOp();
      if (!after) {
        func.emitError("NVMe offload: argument ")
            << updates.getInt() << " is updated with another argument";
        return signalPassFailure();
      }
      if (Operation *last = lastRead.lookup(updates.getInt());
          last && after->isBeforeInBlock(last))
        after = last;
      b.setInsertionPointAfter(after);
      operand.set(compute::NvmeWriteOp::create(b, v.getLoc(), v));
    }
    if (readAhead > 0)
      issueReadsAhead(entry);
  }

  /// Moves each op's reads `readAhead` NVMe-reading ops earlier: the reads of the
  /// i-th such op go right before the (i - readAhead)-th (the first readAhead + 1
  /// ops' reads all before the first), so that the NVMe worker reads while the
  /// ops before run, in the order the reads are needed. Reads read arguments
  /// only, and every write of an argument follows its reads: nothing they depend
  /// on is crossed.
  void issueReadsAhead(Block &entry) {
    SmallVector<Operation *> readers;
    DenseMap<Operation *, SmallVector<Operation *>> readsOf;
    for (Operation &op : entry)
      if (auto read = dyn_cast<compute::NvmeReadOp>(op)) {
        Operation *reader = *read->getUsers().begin();
        auto &reads = readsOf[reader];
        if (reads.empty())
          readers.push_back(reader);
        reads.push_back(read);
      }
    for (size_t i = 1; i < readers.size(); ++i) {
      Operation *before = readers[i < (size_t)readAhead ? 0 : i - readAhead];
      for (Operation *read : readsOf[readers[i]])
        read->moveBefore(before);
    }
  }
};

} // namespace
