//===- ShardOptimizer.cpp - Sharded optimizers and their gradients ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The optimizer of each bucket on this rank's shard, the gradient reduction that
// feeds it (reduce-scatter or all-reduce, with accumulation), the global norm
// and overflow checks.
//
//===----------------------------------------------------------------------===//

#include "ZeroSharder.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

using namespace mlir;
using namespace zero;
using namespace zero::compute;
using namespace zero::shard_zero;

LogicalResult ZeroSharder::prepareScales(StepRewrite &s) {
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
      if (auto n = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), compute::attr::kRuntime);
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

FailureOr<Value> ZeroSharder::reduceBucket(StepRewrite &s, size_t bi, Bucket &bucket) {
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

LogicalResult ZeroSharder::shardOptimizer(StepRewrite &s, size_t bi, Bucket &bucket, Value gavg) {
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
    pArg = addArg(func, shardType, compute::attr::kParamBucket, bname);
    setBucketLayout(func, pArg.getArgNumber(), bucket);
    pshard = pArg;
  }
  if (mixed) {
    masterArg = addArg(func, masterShardType, compute::attr::kMasterBucket, bname);
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
        addArg(func, masterShardType, compute::attr::kState, bname + ".exp_avg");
    BlockArgument v =
        addArg(func, masterShardType, compute::attr::kState, bname + ".exp_avg_sq");
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
        addArg(func, masterShardType, compute::attr::kState, bname + ".momentum_buffer");
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
                                                           compute::attr::kUpdates))
          if (a.getInt() != m.param.getArgNumber())
            s.deadArgs.set(a.getInt());
    }
    s.deadOps.push_back(m.optimizer);
  }
  return success();
}

void ZeroSharder::reduceOverflowAndNorm(StepRewrite &s) {
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

Value ZeroSharder::runtimeOperand(Operation *op, bool found, bool lr) {
  if (auto a = dyn_cast<AdamWOp>(op))
    return found ? a.getFoundInf() : lr ? a.getLrValue() : a.getGradScale();
  auto s = cast<SgdOp>(op);
  return found ? s.getFoundInf() : lr ? s.getLrValue() : s.getGradScale();
}

void ZeroSharder::setGradScale(Operation *op, Value v) {
  if (auto a = dyn_cast<AdamWOp>(op))
    a.getGradScaleMutable().assign(v);
  else
    cast<SgdOp>(op).getGradScaleMutable().assign(v);
}

SmallVector<Value> ZeroSharder::microContributions(Value g) {
  SmallVector<Value> parts;
  auto strip = [](Value v) {
    auto c = v.getDefiningOp<CastOp>();
    return c && c->hasAttr(zops::attr::kAccumulate) ? c.getInput() : v;
  };
  while (auto add = g.getDefiningOp<AddOp>()) {
    if (!add->hasAttr(zops::attr::kAccumulate))
      break;
    parts.push_back(strip(add.getRhs()));
    g = add.getLhs();
  }
  parts.push_back(strip(g));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

bool ZeroSharder::accumulating(ArrayRef<Value> grads) {
  return llvm::any_of(grads, [](Value g) { return microContributions(g).size() > 1; });
}
