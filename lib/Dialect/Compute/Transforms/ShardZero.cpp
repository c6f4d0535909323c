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

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Support/CollectiveQuantization.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

namespace zero {
#define GEN_PASS_DEF_SHARDZEROPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

constexpr StringLiteral kGrid = "zero";
/// hpZ's groups: axis 1 of [world / size, size] (a grid of its own, so that the
/// primary collectives keep the world's 1-D grid).
constexpr StringLiteral kHpzGrid = "zero_hpz";

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// One trainable parameter and where it sits in its bucket.
struct Member {
  BlockArgument param;  // what forward and backward read
  BlockArgument master; // what the optimizer updates: `param`, or its f32 master copy
  std::string name;
  Operation *optimizer; // the per-parameter adamw or sgd op being replaced
  int64_t offset = 0;   // in elements, in the bucket's flat tensor
  int64_t numel = 0;
};

struct Bucket {
  SmallVector<Member> members;
  int64_t elements = 0; // before padding
  int64_t padded = 0;   // a multiple of the world size
  bool replicated = false; // stage 3 persistence: parameters stay whole
  Type elementType;
};

/// What the parts of one step's rewrite share: the step as it was, the scales
/// the new optimizers multiply the gradients by, and what the rewrite collects
/// (the new values of the arguments, what becomes dead).
struct StepRewrite {
  func::FuncOp func;
  func::ReturnOp ret;
  Operation *first = nullptr; // the first optimizer op
  Value step;                 // AdamW's step counter
  Value oldOverflow, lrValue; // the optimizers' runtime operands
  bool mixed = false;
  ClipGradScaleOp clip;
  Value baseScale; // mixed: 1 / (loss_scale * N)
  Value gradScale; // what the new optimizers multiply the gradients by
  DenseMap<Value, unsigned> resultIndexOf; // result -> its index in the return
  SmallVector<std::pair<unsigned, Value>> updates; // (argument, its new value)
  llvm::BitVector deadArgs;
  SmallVector<Operation *> deadOps;
  SmallVector<Value> reduced; // each bucket's reduced gradient
};

struct ShardZeroPass : public zero::impl::ShardZeroPassBase<ShardZeroPass> {
  using Base::Base;

  // Position of every op in the block, for "first use" and "last gradient".
  DenseMap<Operation *, unsigned> position;
  Operation *lossOp = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no func.func @main to shard");
      return signalPassFailure();
    }
    if (stage < 0 || stage > 3 || worldSize < 1) {
      module.emitError("--zero-stage must be 0 to 3 and --world-size at least 1");
      return signalPassFailure();
    }
    if (shardGroupSize < 0 || (shardGroupSize > 0 && worldSize % shardGroupSize) ||
        (hybrid() && stage == 0)) {
      module.emitError("shard-group-size must divide world-size, and a hybrid "
                       "grid needs stage 1, 2 or 3");
      return signalPassFailure();
    }
    if (hpzPartitionSize < 1 || worldSize % hpzPartitionSize || (hpz() && hybrid())) {
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
    if (failed(shard(module, func)))
      return signalPassFailure();
    // For the plan (checkpoint manifests name the stage that wrote them).
    module->setAttr("zero.stage",
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64), stage));
  }

  //===--------------------------------------------------------------------===//
  // Small builders
  //===--------------------------------------------------------------------===//

  Value constantScalar(OpBuilder &b, Location loc, Type et, double v) {
    auto t = RankedTensorType::get({}, et);
    return ConstantOp::create(b, loc, DenseElementsAttr::get(t, b.getFloatAttr(et, v)));
  }

  /// The members' values, flattened and concatenated, padded with zeros.
  Value flatten(OpBuilder &b, Location loc, const Bucket &bucket,
                ArrayRef<Value> values) {
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

  /// Member `m` of a flat bucket tensor, in its own shape.
  Value unflatten(OpBuilder &b, Location loc, Value flat, const Member &m) {
    auto et = typeOf(flat).getElementType();
    Value s = SliceOp::create(b, loc, RankedTensorType::get({m.numel}, et), flat,
                              b.getDenseI64ArrayAttr({m.offset}),
                              b.getDenseI64ArrayAttr({1}));
    return ReshapeOp::create(b, loc, typeOf(m.param).clone(et), s);
  }

  /// Hybrid sharding: groups of shard-group-size ranks, fewer than the world.
  bool hybrid() const { return shardGroupSize > 0 && shardGroupSize < worldSize; }
  /// The ranks a bucket is sharded over: the group, or the world.
  int64_t shardRanks() const { return hybrid() ? shardGroupSize : worldSize; }
  /// The grid axis within a group (1 of [groups, group size]), or the world's.
  SmallVector<int16_t> shardAxes() const { return {int16_t(hybrid() ? 1 : 0)}; }
  /// The grid axis across the groups (hybrid sharding only).
  SmallVector<int16_t> replicaAxes() const { return {0}; }
  /// hpZ: a secondary partition of stage 3's gathered buckets within groups.
  bool hpz() const {
    return stage == 3 && hpzPartitionSize > 1 && hpzPartitionSize < worldSize;
  }

  /// Collectives: flat tensors, along the shard axes of @zero unless said.
  Value allGather(OpBuilder &b, Location loc, Value shard, int64_t full,
                  StringRef grid = kGrid, ArrayRef<int16_t> axes = {}) {
    auto t = RankedTensorType::get({full}, typeOf(shard).getElementType());
    return mlir::shard::AllGatherOp::create(
        b, loc, t, grid, axes.empty() ? ArrayRef<int16_t>(shardAxes()) : axes, shard,
        APInt(64, 0));
  }
  Value reduceScatter(OpBuilder &b, Location loc, Value full, int64_t part) {
    auto t = RankedTensorType::get({part}, typeOf(full).getElementType());
    return mlir::shard::ReduceScatterOp::create(b, loc, t, kGrid, shardAxes(), full,
                                                mlir::shard::ReductionKind::Sum,
                                                APInt(64, 0));
  }
  Value allReduce(OpBuilder &b, Location loc, Value full, ArrayRef<int16_t> axes) {
    return mlir::shard::AllReduceOp::create(b, loc, full.getType(), kGrid, axes, full,
                                            mlir::shard::ReductionKind::Sum);
  }
  Value allSlice(OpBuilder &b, Location loc, Value full, int64_t part) {
    auto t = RankedTensorType::get({part}, typeOf(full).getElementType());
    return mlir::shard::AllSliceOp::create(b, loc, t, full, kGrid, shardAxes(), 0);
  }
  /// Marks the collective that made `v` as quantized (qwZ, qgZ) when `on`.
  Value quantizedIf(bool on, Value v) {
    if (on)
      v.getDefiningOp()->setAttr(
          kQuantizeBlockAttr, IntegerAttr::get(IntegerType::get(v.getContext(), 64),
                                               quantizeBlock));
    return v;
  }
  /// Gradients are averaged: each rank's loss is the mean over its micro-batch.
  Value average(OpBuilder &b, Location loc, Value sum) {
    if (worldSize == 1)
      return sum;
    Value k = constantScalar(b, loc, typeOf(sum).getElementType(), 1.0 / worldSize);
    return MulOp::create(b, loc, sum.getType(), sum, k);
  }

  //===--------------------------------------------------------------------===//
  // Bucketing
  //===--------------------------------------------------------------------===//

  /// Parameters in first-use order, grouped into buckets of about bucket-size-mb.
  FailureOr<SmallVector<Bucket>> makeBuckets(func::FuncOp func,
                                             ArrayRef<Operation *> optimizers) {
    // Mixed precision: the optimizer updates the master copy; the bucket is laid
    // out by the 16-bit parameter of the same name, which forward reads.
    DenseMap<StringRef, BlockArgument> paramNamed;
    for (BlockArgument a : func.getArguments())
      if (auto n = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "compute.param"))
        paramNamed[n.getValue()] = a;
    DenseMap<BlockArgument, Operation *> optimizerOf;
    DenseMap<BlockArgument, BlockArgument> masterOf;
    for (Operation *op : optimizers) {
      auto p = dyn_cast<BlockArgument>(op->getOperand(0));
      BlockArgument param = p;
      if (p) {
        if (auto n = func.getArgAttrOfType<StringAttr>(p.getArgNumber(), "compute.master"))
          param = paramNamed.lookup(n.getValue());
        else if (!func.getArgAttrOfType<StringAttr>(p.getArgNumber(), "compute.param"))
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
               func.getArgAttrOfType<StringAttr>(p.getArgNumber(), "compute.param").str(),
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

  //===--------------------------------------------------------------------===//
  // The rewrite
  //===--------------------------------------------------------------------===//

  LogicalResult shard(ModuleOp module, func::FuncOp func) {
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

  /// The step counter, the optimizers' runtime operands and the gradients'
  /// scale. Mixed precision: gradients are summed, not averaged; the optimizer
  /// multiplies them by 1 / (loss_scale * N). The overflow count is rebuilt from
  /// the reduced gradients, then summed over the ranks, so that every rank skips
  /// together. Clipping: the sum of squares likewise, from the reduced gradients.
  LogicalResult prepareScales(StepRewrite &s) {
    func::FuncOp func = s.func;
    Block &entry = func.getBody().front();
    Operation *first = s.first;
    s.step = isa<AdamWOp>(first) ? cast<AdamWOp>(first).getStep() : Value();
    s.oldOverflow = runtimeOperand(first, /*found=*/true);
    s.lrValue = runtimeOperand(first, /*found=*/false, /*lr=*/true);
    s.mixed = bool(s.oldOverflow);
    func.walk([&](ClipGradScaleOp op) { s.clip = op; });
    if (s.mixed) {
      BlockArgument lossScale;
      for (BlockArgument a : entry.getArguments())
        if (auto n = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "compute.runtime");
            n && n.getValue() == "loss_scale")
          lossScale = a;
      if (!lossScale)
        return func.emitError("internal: a mixed-precision step without loss_scale");
      OpBuilder fb(first);
      Value divisor = lossScale;
      if (worldSize > 1)
        divisor = MulOp::create(fb, first->getLoc(), lossScale.getType(), lossScale,
                                constantScalar(fb, first->getLoc(), fb.getF32Type(),
                                               (double)worldSize));
      s.baseScale = ReciprocalOp::create(fb, first->getLoc(), divisor.getType(), divisor);
    }
    s.gradScale = s.clip ? s.clip.getClippedScale() : s.baseScale;
    if (!s.mixed && reduceDtype == "fp32")
      return func.emitError("--reduce-dtype=fp32 needs a mixed-precision step "
                            "(--precision=bf16 or fp16)");
    return success();
  }

  /// The bucket's gradients reduced over the ranks: all-reduced at stage 0 (and
  /// handed to the unchanged optimizers), reduce-scattered to this rank's slice
  /// above. Returns the reduced (and, in f32, averaged) gradient.
  FailureOr<Value> reduceBucket(StepRewrite &s, size_t bi, Bucket &bucket) {
    func::FuncOp func = s.func;
    Operation *first = s.first;
    bool mixed = s.mixed;
    OpBuilder b(s.ret);
    Location loc = bucket.members.front().param.getLoc();
    SmallVector<Value> grads;
    Operation *lastGrad = nullptr;
    for (Member &m : bucket.members) {
      Value g = m.optimizer->getOperand(1);
      grads.push_back(g);
      Operation *def = g.getDefiningOp();
      if (def && (!lastGrad || position[def] > position[lastGrad]))
        lastGrad = def;
    }
    // Stage 0 and 2/3 reduce a bucket as soon as backward completes it; stage 1
    // after backward, just before the optimizer.
    if (stage == 1 || !lastGrad)
      b.setInsertionPoint(first);
    else
      b.setInsertionPointAfter(lastGrad);
    // The reduction's type: the parameters' (16-bit in mixed precision, whatever
    // the accumulator's), or f32 with reduce-dtype=fp32 (DeepSpeed's
    // communication_data_type).
    Type commType = mixed && reduceDtype == "fp32" ? b.getF32Type() : bucket.elementType;
    auto toComm = [&](Value flat) -> Value {
      if (typeOf(flat).getElementType() == commType)
        return flat;
      return CastOp::create(b, loc, typeOf(flat).clone(commType), flat);
    };
    Value gflat;
    if (stage < 2 || !accumulating(grads))
      gflat = toComm(flatten(b, loc, bucket, grads)); // accumulated locally

    if (stage == 0) {
      Value sum = allReduce(b, loc, gflat, {0});
      Value gavg = mixed ? sum : average(b, loc, sum);
      s.reduced.push_back(gavg);
      for (auto [m, g] : llvm::zip(bucket.members, grads)) {
        m.optimizer->setOperand(1, unflatten(b, loc, gavg, m));
        if (mixed && !s.clip)
          setGradScale(m.optimizer, s.baseScale);
      }
      return gavg;
    }

    int64_t part = bucket.padded / shardRanks();
    Value gsum;
    if (gflat) {
      gsum = quantizedIf(quantizedGradients, reduceScatter(b, loc, gflat, part));
    } else {
      // Gradient accumulation at stages 2-3: each micro-batch's bucket is
      // reduce-scattered as soon as its backward completes it, into a sharded
      // accumulator (f32 in mixed precision): no full gradient outlives its
      // micro-batch.
      SmallVector<SmallVector<Value>> perMember;
      for (Value g : grads)
        perMember.push_back(microContributions(g));
      for (size_t mi = 0; mi < perMember[0].size(); ++mi) {
        SmallVector<Value> micro;
        Operation *last = nullptr;
        for (auto &c : perMember) {
          if (c.size() != perMember[0].size())
            return func.emitError("internal: the members of bucket ")
                   << bi << " accumulate different numbers of micro-batches";
          micro.push_back(c[mi]);
          Operation *def = c[mi].getDefiningOp();
          if (def && (!last || position[def] > position[last]))
            last = def;
        }
        if (last)
          b.setInsertionPointAfter(last);
        else
          b.setInsertionPoint(first);
        Value shard = quantizedIf(
            quantizedGradients,
            reduceScatter(b, loc, toComm(flatten(b, loc, bucket, micro)), part));
        if (mixed)
          shard = CastOp::create(b, loc, typeOf(shard).clone(b.getF32Type()), shard);
        gsum = gsum ? AddOp::create(b, loc, shard.getType(), gsum, shard).getResult()
                    : shard;
      }
    }
    // Hybrid sharding: the groups hold the same slice of the bucket, each summed
    // over its own ranks; the slice's sum over every rank adds them up.
    if (hybrid())
      gsum = quantizedIf(quantizedGradients, allReduce(b, loc, gsum, replicaAxes()));
    Value gavg = mixed ? gsum : average(b, loc, gsum);
    s.reduced.push_back(gavg);
    return gavg;
  }

  /// Stages 1-3: the bucket's optimizer on this rank's slice, with sharded state,
  /// at the end of the step (after every reader of the old values); the updated
  /// slice gathered back (stages 1-2) or kept sharded (stage 3). The
  /// per-parameter optimizers, their state and casts become dead.
  LogicalResult shardOptimizer(StepRewrite &s, size_t bi, Bucket &bucket, Value gavg) {
    func::FuncOp func = s.func;
    Operation *first = s.first;
    bool mixed = s.mixed;
    OpBuilder b(s.ret);
    Location loc = bucket.members.front().param.getLoc();
    int64_t part = bucket.padded / shardRanks();
    Type masterType = typeOf(bucket.members.front().master).getElementType();
    auto shardType = RankedTensorType::get({part}, bucket.elementType);
    auto masterShardType = RankedTensorType::get({part}, masterType);
    std::string bname = "bucket" + std::to_string(bi);

    // The owned slice of the parameters (mixed precision: of the master copies,
    // kept sharded from the start at every stage above 0).
    Value pshard;
    BlockArgument pArg, masterArg;
    bool sharded = stage == 3 && !bucket.replicated;
    if (sharded) {
      pArg = addArg(func, shardType, "compute.param_bucket", bname);
      setBucketLayout(func, pArg.getArgNumber(), bucket);
      pshard = pArg;
    }
    if (mixed) {
      masterArg = addArg(func, masterShardType, "compute.master_bucket", bname);
      setBucketLayout(func, masterArg.getArgNumber(), bucket);
      pshard = masterArg;
    } else if (!sharded) {
      OpBuilder pb(first);
      SmallVector<Value> params;
      for (Member &m : bucket.members)
        params.push_back(m.param);
      pshard = allSlice(pb, loc, flatten(pb, loc, bucket, params), part);
    }

    Value newShard;
    if (auto adam = dyn_cast<AdamWOp>(first)) {
      BlockArgument m =
          addArg(func, masterShardType, "compute.state", bname + ".exp_avg");
      BlockArgument v =
          addArg(func, masterShardType, "compute.state", bname + ".exp_avg_sq");
      setBucketLayout(func, m.getArgNumber(), bucket);
      setBucketLayout(func, v.getArgNumber(), bucket);
      auto op = AdamWOp::create(b, loc, pshard, gavg, m, v, s.step, s.gradScale,
                                s.oldOverflow, s.lrValue, adam.getLr().convertToDouble(),
                                adam.getBeta1().convertToDouble(),
                                adam.getBeta2().convertToDouble(),
                                adam.getEps().convertToDouble(),
                                adam.getWeightDecay().convertToDouble());
      newShard = op.getNewParam();
      s.updates.push_back({m.getArgNumber(), op.getNewExpAvg()});
      s.updates.push_back({v.getArgNumber(), op.getNewExpAvgSq()});
    } else {
      auto sgd = cast<SgdOp>(first);
      BlockArgument buf =
          addArg(func, masterShardType, "compute.state", bname + ".momentum_buffer");
      setBucketLayout(func, buf.getArgNumber(), bucket);
      auto op = SgdOp::create(b, loc, pshard, gavg, buf, s.gradScale, s.oldOverflow,
                              s.lrValue, sgd.getLr().convertToDouble(),
                              sgd.getMomentum().convertToDouble(),
                              sgd.getWeightDecay().convertToDouble());
      newShard = op.getNewParam();
      s.updates.push_back({buf.getArgNumber(), op.getNewMomentumBuffer()});
    }
    if (mixed) { // the master slice is kept; the parameters get its rounding
      s.updates.push_back({masterArg.getArgNumber(), newShard});
      newShard = CastOp::create(b, loc, shardType, newShard);
    }

    if (sharded) {
      s.updates.push_back({pArg.getArgNumber(), newShard});
      if (failed(gatherForUse(func, bucket, pArg)))
        return failure();
    } else {
      Value full = allGather(b, loc, newShard, bucket.padded);
      for (Member &m : bucket.members)
        s.updates.push_back({m.param.getArgNumber(), unflatten(b, loc, full, m)});
    }
    // The per-parameter optimizer, its state and (mixed precision) its whole
    // master copies and casts go.
    for (Member &m : bucket.members) {
      for (Value r : m.optimizer->getResults()) {
        for (Operation *user : r.getUsers())
          if (isa<CastOp>(user))
            s.deadOps.push_back(user);
        if (s.resultIndexOf.count(r))
          if (auto a = func.getResultAttrOfType<IntegerAttr>(s.resultIndexOf[r],
                                                             "compute.updates"))
            if (a.getInt() != m.param.getArgNumber())
              s.deadArgs.set(a.getInt());
      }
      s.deadOps.push_back(m.optimizer);
    }
    return success();
  }

  /// Mixed precision's overflow count and clipping's sum of squares, from the
  /// reduced gradients and over every rank, before the first optimizer.
  void reduceOverflowAndNorm(StepRewrite &s) {
    Operation *first = s.first;
    if (s.mixed) {
      OpBuilder fb(first);
      Location loc = first->getLoc();
      auto scalarF32 = RankedTensorType::get({}, fb.getF32Type());
      // A count per reduced bucket (a bucket holds many tensors), as soon as it is
      // reduced: with optimizer offload a bucket's device copy then dies once it
      // has crossed to the host, where one count over all of them would keep every
      // bucket on the device until the last.
      Value overflow;
      for (Value r : s.reduced) {
        Value n = NonfiniteCountOp::create(fb, loc, scalarF32, ValueRange{r});
        overflow = overflow ? AddOp::create(fb, loc, scalarF32, overflow, n).getResult() : n;
      }
      if (worldSize > 1) {
        auto flat = RankedTensorType::get({1}, fb.getF32Type());
        overflow = ReshapeOp::create(
            fb, loc, scalarF32,
            allReduce(fb, loc, ReshapeOp::create(fb, loc, flat, overflow), shardAxes()));
      }
      s.oldOverflow.replaceAllUsesWith(overflow);
    }
    if (s.clip) {
      // Each rank's slices are disjoint above stage 0 (padding is zero): their
      // squares add up over the ranks (over a group's, with hybrid sharding: the
      // groups hold the same slices). At stage 0 every rank has every gradient.
      OpBuilder fb(first);
      Location loc = s.clip.getLoc();
      auto scalarF32 = RankedTensorType::get({}, fb.getF32Type());
      // One op over every reduced gradient: one kernel launch.
      Value sumSq = SumSquaresOp::create(fb, loc, scalarF32, ValueRange(s.reduced));
      if (worldSize > 1 && stage != 0) {
        auto flat = RankedTensorType::get({1}, fb.getF32Type());
        sumSq = ReshapeOp::create(
            fb, loc, scalarF32,
            allReduce(fb, loc, ReshapeOp::create(fb, loc, flat, sumSq), shardAxes()));
      }
      s.clip.getSumSquaresMutable().assign(sumSq);
      if (s.mixed)
        s.clip.getScaleMutable().assign(s.baseScale);
      s.clip->moveBefore(first);
    }
  }

  /// Stages 1-3: the new return (outputs first, then the updates) and signature:
  /// the per-parameter state (and, in stage 3, the whole parameters) dropped, the
  /// updates renumbered.
  LogicalResult rebuildSignature(StepRewrite &s, ArrayRef<Bucket> buckets) {
    func::FuncOp func = s.func;
    Block &entry = func.getBody().front();
    func::ReturnOp ret = s.ret;
    SmallVector<std::pair<unsigned, Value>> &updates = s.updates;
    SmallVector<Value> newResults;
    SmallVector<Attribute> newNames;
    // The step counter's update stays; everything else updates what we built.
    for (auto [k, v] : llvm::enumerate(ret.getOperands()))
      if (auto a = func.getResultAttrOfType<IntegerAttr>(k, "compute.updates"))
        if (s.step && argName(func, a.getInt()) == "optimizer.step")
          updates.push_back({(unsigned)a.getInt(), v});
    // Results that update nothing (the loss, the overflow count, the gradient norm)
    // stay first, in order: read from the return now, after the rewiring above.
    for (auto [k, v] : llvm::enumerate(ret.getOperands()))
      if (!func.getResultAttr(k, "compute.updates")) {
        newResults.push_back(v);
        newNames.push_back(cast<ArrayAttr>(func->getAttr("compute.output_names"))[k]);
      }
    unsigned firstUpdate = newResults.size();
    for (auto [arg, v] : updates) {
      newResults.push_back(v);
      newNames.push_back(StringAttr::get(func.getContext(), argName(func, arg)));
    }
    OpBuilder rb(ret);
    func::ReturnOp::create(rb, ret.getLoc(), newResults);
    ret.erase();
    for (Operation *op : s.deadOps)
      op->erase();

    SmallVector<Type> resultTypes;
    for (Value v : newResults)
      resultTypes.push_back(v.getType());
    func->removeAttr(func.getResAttrsAttrName()); // set again below, per result
    func.setFunctionType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                           resultTypes));
    func->setAttr("compute.output_names", ArrayAttr::get(func.getContext(), newNames));
    SmallVector<BlockArgument> updateArgs;
    for (auto [arg, v] : updates)
      updateArgs.push_back(entry.getArgument(arg));
    llvm::BitVector erase(entry.getNumArguments());
    for (BlockArgument a : entry.getArguments())
      if ((a.getArgNumber() < s.deadArgs.size() && s.deadArgs.test(a.getArgNumber())) ||
          (stage == 3 && a.use_empty() &&
           func.getArgAttr(a.getArgNumber(), "compute.param") &&
           isTrainedAway(buckets, a)))
        erase.set(a.getArgNumber());
    for (BlockArgument a : entry.getArguments())
      if (erase.test(a.getArgNumber()) && !a.use_empty())
        return func.emitError("internal: argument ")
               << a.getArgNumber() << " is still used after sharding";
    if (failed(func.eraseArguments(erase)))
      return failure();
    for (auto [k, a] : llvm::enumerate(updateArgs))
      func.setResultAttr(firstUpdate + k, "compute.updates",
                         IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                          a.getArgNumber()));
    return success();
  }

  /// An optimizer's runtime operand: the overflow count (`found`), the learning
  /// rate (`lr`); null when absent.
  static Value runtimeOperand(Operation *op, bool found, bool lr = false) {
    if (auto a = dyn_cast<AdamWOp>(op))
      return found ? a.getFoundInf() : lr ? a.getLrValue() : a.getGradScale();
    auto s = cast<SgdOp>(op);
    return found ? s.getFoundInf() : lr ? s.getLrValue() : s.getGradScale();
  }
  static void setGradScale(Operation *op, Value v) {
    if (auto a = dyn_cast<AdamWOp>(op))
      a.getGradScaleMutable().assign(v);
    else
      cast<SgdOp>(op).getGradScaleMutable().assign(v);
  }

  static bool isTrainedAway(ArrayRef<Bucket> buckets, BlockArgument a) {
    for (const Bucket &bk : buckets)
      if (!bk.replicated)
        for (const Member &m : bk.members)
          if (m.param == a)
            return true;
    return false;
  }

  std::string argName(func::FuncOp func, unsigned arg) {
    for (StringRef key : {"compute.param", "compute.state", "compute.param_bucket",
                          "compute.master", "compute.master_bucket"})
      if (auto n = dyn_cast_or_null<StringAttr>(argAttr(func, arg, key)))
        return n.str();
    return "";
  }

  /// A new argument of the entry block; its attributes wait in `newArgAttrs`
  /// and the signature takes them all at once (commitNewArgs): inserting into
  /// the function type one by one is quadratic in the arguments (a 175B model's
  /// buckets add tens of thousands).
  BlockArgument addArg(func::FuncOp func, Type type, StringRef key, StringRef name) {
    Block &entry = func.getBody().front();
    if (newArgAttrs.empty())
      committedArgs = func.getNumArguments();
    BlockArgument a = entry.addArgument(type, func.getLoc());
    NamedAttrList attrs;
    attrs.set(key, StringAttr::get(func.getContext(), name));
    newArgAttrs.push_back(attrs);
    return a;
  }

  /// Argument `arg`'s attribute `key`, new arguments' included.
  Attribute argAttr(func::FuncOp func, unsigned arg, StringRef key) {
    if (!newArgAttrs.empty() && arg >= committedArgs)
      return newArgAttrs[arg - committedArgs].get(key);
    return func.getArgAttr(arg, key);
  }
  void setArgAttr(func::FuncOp func, unsigned arg, StringRef key, Attribute value) {
    if (!newArgAttrs.empty() && arg >= committedArgs)
      newArgAttrs[arg - committedArgs].set(key, value);
    else
      func.setArgAttr(arg, key, value);
  }

  /// The signature takes the entry block's arguments and the new ones' attributes.
  void commitNewArgs(func::FuncOp func) {
    if (newArgAttrs.empty())
      return;
    Block &entry = func.getBody().front();
    SmallVector<DictionaryAttr> attrs;
    for (unsigned i = 0; i < committedArgs; ++i)
      attrs.push_back(func.getArgAttrDict(i));
    for (NamedAttrList &l : newArgAttrs)
      attrs.push_back(l.getDictionary(func.getContext()));
    func.setFunctionType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                           func.getResultTypes()));
    func.setAllArgAttrs(attrs);
    newArgAttrs.clear();
  }
  unsigned committedArgs = 0;
  SmallVector<NamedAttrList> newArgAttrs;

  /// Records where each member of a bucket lives, for the runtime to load its
  /// slice from the model's initializers, to gather the weights back, and to map
  /// sharded optimizer state onto parameters (checkpoints, resharding).
  void setBucketLayout(func::FuncOp func, unsigned arg, const Bucket &bucket) {
    Builder b(func.getContext());
    SmallVector<Attribute> members;
    for (const Member &m : bucket.members)
      members.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(m.name)),
           b.getNamedAttr("offset", b.getI64IntegerAttr(m.offset)),
           b.getNamedAttr("shape", b.getDenseI64ArrayAttr(
                                       cast<RankedTensorType>(m.param.getType())
                                           .getShape()))}));
    setArgAttr(func, arg, "compute.bucket_members", b.getArrayAttr(members));
    setArgAttr(func, arg, "compute.bucket_elements", b.getI64IntegerAttr(bucket.padded));
  }

  /// Gradient accumulation: a gradient that is a chain of `zero.accumulate` adds
  /// gives each micro-batch's contribution, in order (mixed precision: the 16-bit
  /// gradient under its f32 cast); any other gradient is its own one contribution.
  static SmallVector<Value> microContributions(Value g) {
    SmallVector<Value> parts;
    auto strip = [](Value v) {
      auto c = v.getDefiningOp<CastOp>();
      return c && c->hasAttr("zero.accumulate") ? c.getInput() : v;
    };
    while (auto add = g.getDefiningOp<AddOp>()) {
      if (!add->hasAttr("zero.accumulate"))
        break;
      parts.push_back(strip(add.getRhs()));
      g = add.getLhs();
    }
    parts.push_back(strip(g));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  static bool accumulating(ArrayRef<Value> grads) {
    return llvm::any_of(grads, [](Value g) { return microContributions(g).size() > 1; });
  }

  /// The phase of an op that reads a parameter: 2m for micro-batch m's forward,
  /// 2m + 1 for its backward (gradient accumulation marks ops with it; without it,
  /// forward is what comes before the loss).
  int64_t phaseOf(Operation *op) {
    if (auto p = op->getAttrOfType<IntegerAttr>("zero.micro_phase"))
      return p.getInt();
    return position[op] > position[lossOp] ? 1 : 0;
  }

  /// Stage 3: each use of a member parameter reads a copy sliced out of an
  /// all-gathered bucket: one gather before the first forward use, another before
  /// the first backward use (per micro-batch with accumulation), so nothing full
  /// stays alive in between.
  LogicalResult gatherForUse(func::FuncOp func, const Bucket &bucket,
                             BlockArgument shardArg) {
    std::map<int64_t, SmallVector<OpOperand *>> usesByPhase;
    for (const Member &m : bucket.members)
      for (OpOperand &use : m.param.getUses()) {
        Operation *user = use.getOwner();
        if (user == m.optimizer || !position.count(user))
          continue; // the optimizer goes; ops this pass built read the shard
        usesByPhase[phaseOf(user)].push_back(&use);
      }
    Value secondary; // hpZ: this rank's slice of the bucket within its group
    for (auto &[phase, uses] : usesByPhase) {
      Operation *firstUser = nullptr;
      for (OpOperand *use : uses)
        if (!firstUser || position[use->getOwner()] < position[firstUser])
          firstUser = use->getOwner();
      OpBuilder b(firstUser);
      Location loc = shardArg.getLoc();
      // hpZ: after the first, within the group from the secondary partition.
      Value full = secondary ? allGather(b, loc, secondary, bucket.padded, kHpzGrid, {1})
                             : quantizedIf(quantizedWeights,
                                           allGather(b, loc, shardArg, bucket.padded));
      if (hpz() && !secondary) {
        // The first gather (forward) also keeps its group's slice of the bucket.
        auto t = RankedTensorType::get({bucket.padded / hpzPartitionSize},
                                       typeOf(shardArg).getElementType());
        secondary = mlir::shard::AllSliceOp::create(b, loc, t, full, kHpzGrid,
                                                    ArrayRef<int16_t>{1}, 0);
      }
      // Without this the gathers are identical pure ops and CSE would merge them,
      // keeping the full bucket alive from forward to backward.
      std::string name = phase % 2 ? "backward" : "forward";
      if (phase > 1)
        name += "-" + std::to_string(phase / 2);
      full.getDefiningOp()->setAttr("zero.phase", b.getStringAttr(name));
      DenseMap<Value, Value> copyOf;
      for (const Member &m : bucket.members)
        copyOf[m.param] = unflatten(b, loc, full, m);
      for (OpOperand *use : uses)
        use->set(copyOf[use->get()]);
    }
    return success();
  }
};

} // namespace
