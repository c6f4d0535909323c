//===- ShardZero.cpp - ZeRO stages 0-3 with flat, padded buckets ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Rewrites the per-parameter optimizer of a training step into bucketed, sharded
// form. The upstream shard passes are not used: they would pick tensor parallelism,
// hoist every gather to the function entry and never emit reduce-scatter (see
// docs/Design.md); this pass places each collective itself.
//
//===----------------------------------------------------------------------===//

#include "ZeroSharder.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

namespace zero {
#define GEN_PASS_DEF_SHARDZEROPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;
using namespace zero::shard_zero;

namespace {

struct ShardZeroPass : public zero::impl::ShardZeroPassBase<ShardZeroPass> {
  using Base::Base;

  /// The options as ZeroSharder reads them. The generated base has no getter for
  /// them; an option added to Passes.td must be added here too.
  ShardZeroPassOptions options() const {
    ShardZeroPassOptions o;
    o.stage = stage;
    o.worldSize = worldSize;
    o.bucketSizeMb = bucketSizeMb;
    o.persistenceThreshold = persistenceThreshold;
    o.hpzPartitionSize = hpzPartitionSize;
    o.shardGroupSize = shardGroupSize;
    o.quantizedWeights = quantizedWeights;
    o.quantizedGradients = quantizedGradients;
    o.quantizeBlock = quantizeBlock;
    o.reduceDtype = reduceDtype;
    return o;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    ZeroSharder sharder(options());
    if (!func) {
      module.emitError("no func.func @main to shard");
      return signalPassFailure();
    }
    if (stage < 0 || stage > 3 || worldSize < 1) {
      module.emitError("--zero-stage must be 0 to 3 and --world-size at least 1");
      return signalPassFailure();
    }
    if (shardGroupSize < 0 || (shardGroupSize > 0 && worldSize % shardGroupSize) ||
        (sharder.hybrid() && stage == 0)) {
      module.emitError("shard-group-size must divide world-size, and a hybrid "
                       "grid needs stage 1, 2 or 3");
      return signalPassFailure();
    }
    if (hpzPartitionSize < 1 || worldSize % hpzPartitionSize ||
        (sharder.hpz() && sharder.hybrid())) {
      module.emitError("hpz-partition-size must divide world-size, and goes without "
                       "shard-group-size");
      return signalPassFailure();
    }
    if ((quantizedWeights && stage != 3) || (quantizedGradients && stage == 0) ||
        quantizeBlock < 1 || quantizeBlock > (1 << 20)) {
      module.emitError("quantized-weights needs stage 3, quantized-gradients stage 1, "
                       "2 or 3, and quantize-block 1 to 2^20 values");
      return signalPassFailure();
    }
    if (failed(sharder.shard(module, func)))
      return signalPassFailure();
    // For the plan (checkpoint manifests name the stage that wrote them).
    module->setAttr(zops::attr::kStage,
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64), stage));
  }
};

} // namespace

Value ZeroSharder::constantScalar(OpBuilder &b, Location loc, Type et, double v) {
  auto t = RankedTensorType::get({}, et);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(t, b.getFloatAttr(et, v)));
}

Value ZeroSharder::flatten(OpBuilder &b, Location loc, const Bucket &bucket, ArrayRef<Value> values) {
  Type et = typeOf(values.front()).getElementType();
  SmallVector<Value> parts;
  for (auto [m, v] : llvm::zip(bucket.members, values))
    parts.push_back(ReshapeOp::create(b, loc, RankedTensorType::get({m.numel}, et), v));
  if (int64_t pad = bucket.padded - bucket.elements) {
    auto t = RankedTensorType::get({pad}, et);
    parts.push_back(
        ConstantOp::create(b, loc, DenseElementsAttr::get(t, b.getFloatAttr(et, 0.0))));
  }
  auto t = RankedTensorType::get({bucket.padded}, et);
  if (parts.size() == 1)
    return parts[0];
  return ConcatOp::create(b, loc, t, parts, b.getI64IntegerAttr(0));
}

Value ZeroSharder::unflatten(OpBuilder &b, Location loc, Value flat, const Member &m) {
  auto et = typeOf(flat).getElementType();
  Value s = SliceOp::create(b, loc, RankedTensorType::get({m.numel}, et), flat,
                            b.getDenseI64ArrayAttr({m.offset}),
                            b.getDenseI64ArrayAttr({1}));
  return ReshapeOp::create(b, loc, typeOf(m.param).clone(et), s);
}

bool ZeroSharder::hpz() const {
  return stage == 3 && hpzPartitionSize > 1 && hpzPartitionSize < worldSize;
}

Value ZeroSharder::allGather(OpBuilder &b, Location loc, Value shard, int64_t full, StringRef grid, ArrayRef<int16_t> axes) {
  auto t = RankedTensorType::get({full}, typeOf(shard).getElementType());
  return mlir::shard::AllGatherOp::create(
      b, loc, t, grid, axes.empty() ? ArrayRef<int16_t>(shardAxes()) : axes, shard,
      APInt(64, 0));
}

Value ZeroSharder::reduceScatter(OpBuilder &b, Location loc, Value full, int64_t part) {
  auto t = RankedTensorType::get({part}, typeOf(full).getElementType());
  return mlir::shard::ReduceScatterOp::create(b, loc, t, kGrid, shardAxes(), full,
                                              mlir::shard::ReductionKind::Sum,
                                              APInt(64, 0));
}

Value ZeroSharder::allReduce(OpBuilder &b, Location loc, Value full, ArrayRef<int16_t> axes) {
  return mlir::shard::AllReduceOp::create(b, loc, full.getType(), kGrid, axes, full,
                                          mlir::shard::ReductionKind::Sum);
}

Value ZeroSharder::allSlice(OpBuilder &b, Location loc, Value full, int64_t part) {
  auto t = RankedTensorType::get({part}, typeOf(full).getElementType());
  return mlir::shard::AllSliceOp::create(b, loc, t, full, kGrid, shardAxes(), 0);
}

Value ZeroSharder::quantizedIf(bool on, Value v) {
  if (on)
    v.getDefiningOp()->setAttr(
        zops::attr::kQuantizeBlock, IntegerAttr::get(IntegerType::get(v.getContext(), 64),
                                             quantizeBlock));
  return v;
}

Value ZeroSharder::average(OpBuilder &b, Location loc, Value sum) {
  if (worldSize == 1)
    return sum;
  Value k = constantScalar(b, loc, typeOf(sum).getElementType(), 1.0 / worldSize);
  return MulOp::create(b, loc, sum.getType(), sum, k);
}

FailureOr<SmallVector<Bucket>> ZeroSharder::makeBuckets(func::FuncOp func, ArrayRef<Operation *> optimizers) {
  // Mixed precision: the optimizer updates the master copy; the bucket is laid
  // out by the 16-bit parameter of the same name, which forward reads.
  DenseMap<StringRef, BlockArgument> paramNamed;
  for (BlockArgument a : func.getArguments())
    if (auto n = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), compute::attr::kParam))
      paramNamed[n.getValue()] = a;
  DenseMap<BlockArgument, Operation *> optimizerOf;
  DenseMap<BlockArgument, BlockArgument> masterOf;
  for (Operation *op : optimizers) {
    auto p = dyn_cast<BlockArgument>(op->getOperand(0));
    BlockArgument param = p;
    if (p) {
      if (auto n = func.getArgAttrOfType<StringAttr>(p.getArgNumber(), compute::attr::kMaster))
        param = paramNamed.lookup(n.getValue());
      else if (!func.getArgAttrOfType<StringAttr>(p.getArgNumber(), compute::attr::kParam))
        param = BlockArgument();
    }
    if (!param)
      return op->emitOpError("updates a value that is not a parameter argument"),
             failure();
    optimizerOf[param] = op;
    masterOf[param] = p;
  }
  SmallVector<BlockArgument> order;
  DenseSet<BlockArgument> seen;
  for (Operation &op : func.getBody().front()) {
    if (isa<AdamWOp, SgdOp>(op))
      continue;
    for (Value v : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v))
        if (optimizerOf.count(arg) && seen.insert(arg).second)
          order.push_back(arg);
  }
  for (Operation *op : optimizers) // parameters only the optimizer reads
    for (auto &[arg, o] : optimizerOf)
      if (o == op && seen.insert(arg).second)
        order.push_back(arg);

  int64_t capBytes = std::max<int64_t>(1, (int64_t)(bucketSizeMb * 1024 * 1024));
  SmallVector<Bucket> buckets;
  auto add = [&](SmallVector<Bucket> &list, BlockArgument p, bool replicated) {
    auto t = cast<RankedTensorType>(p.getType());
    int64_t bytes = zero::shapedBytes(t);
    if (list.empty() || list.back().elementType != t.getElementType() ||
        (list.back().elements > 0 &&
         (list.back().elements * zero::elementBytes(t.getElementType()) + bytes > capBytes)))
      list.push_back(Bucket{{}, 0, 0, replicated, t.getElementType()});
    Bucket &bk = list.back();
    Member m{p, masterOf[p],
             func.getArgAttrOfType<StringAttr>(p.getArgNumber(), compute::attr::kParam).str(),
             optimizerOf[p], bk.elements, t.getNumElements()};
    bk.members.push_back(m);
    bk.elements += m.numel;
  };
  SmallVector<Bucket> replicatedBuckets;
  for (BlockArgument p : order) {
    int64_t numel = cast<RankedTensorType>(p.getType()).getNumElements();
    if (stage == 3 && numel < persistenceThreshold)
      add(replicatedBuckets, p, true);
    else
      add(buckets, p, false);
  }
  llvm::append_range(buckets, replicatedBuckets);
  int64_t n = shardRanks();
  for (Bucket &bk : buckets)
    bk.padded = (bk.elements + n - 1) / n * n;
  return buckets;
}

LogicalResult ZeroSharder::shard(ModuleOp module, func::FuncOp func) {
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Operation *> optimizers;
  for (Operation &op : entry)
    if (isa<AdamWOp, SgdOp>(op))
      optimizers.push_back(&op);
  if (optimizers.empty())
    return func.emitError("no optimizer ops to shard; run "
                          "--zero-build-training-step first");
  for (Operation *op : optimizers)
    if (op->getName() != optimizers[0]->getName() ||
        op->getDiscardableAttrDictionary() != optimizers[0]->getDiscardableAttrDictionary())
      return op->emitOpError("differs from the other optimizer ops");
  unsigned i = 0;
  for (Operation &op : entry)
    position[&op] = i++;
  lossOp = ret.getOperand(0).getDefiningOp();
  if (!lossOp)
    return func.emitError("the loss is an argument; nothing to shard");

  auto buckets = makeBuckets(func, optimizers);
  if (failed(buckets))
    return failure();

  OpBuilder mb(module.getBody(), module.getBody()->begin());
  if (!module.lookupSymbol(kGrid)) {
    SmallVector<int64_t> shape = {worldSize};
    if (hybrid())
      shape = {worldSize / shardGroupSize, shardGroupSize};
    mlir::shard::GridOp::create(mb, module.getLoc(), kGrid, shape);
  }
  if (hpz() && !module.lookupSymbol(kHpzGrid))
    mlir::shard::GridOp::create(
        mb, module.getLoc(), kHpzGrid,
        ArrayRef<int64_t>{worldSize / hpzPartitionSize, hpzPartitionSize});

  StepRewrite s;
  s.func = func;
  s.ret = ret;
  s.first = optimizers.front();
  s.deadArgs.resize(entry.getNumArguments() + 4 * buckets->size() + 4);
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    s.resultIndexOf[v] = k;
  if (failed(prepareScales(s)))
    return failure();

  for (auto [bi, bucket] : llvm::enumerate(*buckets)) {
    FailureOr<Value> gavg = reduceBucket(s, bi, bucket);
    if (failed(gavg))
      return failure();
    if (stage != 0 && failed(shardOptimizer(s, bi, bucket, *gavg)))
      return failure();
  }
  reduceOverflowAndNorm(s);
  commitNewArgs(func);
  if (stage == 0)
    return success(); // the optimizer and its results are unchanged
  return rebuildSignature(s, *buckets);
}
