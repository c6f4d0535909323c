//===- ZeroSharder.h - The ZeRO rewrite of one training step -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What --zero-shard does, apart from the pass that checks its options and runs
// it: buckets, the builders of collectives (ShardZero.cpp), the sharded
// optimizer and its gradient reduction (ShardOptimizer.cpp), the sharded
// arguments and stage 3's gathers (ShardArguments.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_TRANSFORMS_ZEROSHARDER_H
#define ZERO_DIALECT_COMPUTE_TRANSFORMS_ZEROSHARDER_H

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include <map>
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"

namespace zero::shard_zero {

using namespace mlir;
using namespace zero::compute;

inline constexpr StringLiteral kGrid = "zero";
/// hpZ's groups: axis 1 of [world / size, size] (a grid of its own, so that the
/// primary collectives keep the world's 1-D grid).
inline constexpr StringLiteral kHpzGrid = "zero_hpz";

inline RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

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

/// The rewrite, with the pass's options as plain values.
struct ZeroSharder : public ShardZeroPassOptions {
  explicit ZeroSharder(const ShardZeroPassOptions &options)
      : ShardZeroPassOptions(options) {}

  // Position of every op in the block, for "first use" and "last gradient".
  DenseMap<Operation *, unsigned> position;
  Operation *lossOp = nullptr;

  /// Rewrites @main of `module`; its diagnostics say what failed.
  LogicalResult shard(ModuleOp module, func::FuncOp func);

  //===--------------------------------------------------------------------===//
  // Small builders
  //===--------------------------------------------------------------------===//

  Value constantScalar(OpBuilder &b, Location loc, Type et, double v);

  /// The members' values, flattened and concatenated, padded with zeros.
  Value flatten(OpBuilder &b, Location loc, const Bucket &bucket,
                ArrayRef<Value> values);

  /// Member `m` of a flat bucket tensor, in its own shape.
  Value unflatten(OpBuilder &b, Location loc, Value flat, const Member &m);

  /// Hybrid sharding: groups of shard-group-size ranks, fewer than the world.
  bool hybrid() const { return shardGroupSize > 0 && shardGroupSize < worldSize; }
  /// The ranks a bucket is sharded over: the group, or the world.
  int64_t shardRanks() const { return hybrid() ? shardGroupSize : worldSize; }
  /// The grid axis within a group (1 of [groups, group size]), or the world's.
  SmallVector<int16_t> shardAxes() const { return {int16_t(hybrid() ? 1 : 0)}; }
  /// The grid axis across the groups (hybrid sharding only).
  SmallVector<int16_t> replicaAxes() const { return {0}; }
  /// hpZ: a secondary partition of stage 3's gathered buckets within groups.
  bool hpz() const;

  /// Collectives: flat tensors, along the shard axes of @zero unless said.
  Value allGather(OpBuilder &b, Location loc, Value shard, int64_t full,
                  StringRef grid = kGrid, ArrayRef<int16_t> axes = {});
  Value reduceScatter(OpBuilder &b, Location loc, Value full, int64_t part);
  Value allReduce(OpBuilder &b, Location loc, Value full, ArrayRef<int16_t> axes);
  Value allSlice(OpBuilder &b, Location loc, Value full, int64_t part);
  /// Marks the collective that made `v` as quantized (qwZ, qgZ) when `on`.
  Value quantizedIf(bool on, Value v);
  /// Gradients are averaged: each rank's loss is the mean over its micro-batch.
  Value average(OpBuilder &b, Location loc, Value sum);

  //===--------------------------------------------------------------------===//
  // Bucketing
  //===--------------------------------------------------------------------===//

  /// Parameters in first-use order, grouped into buckets of about bucket-size-mb.
  FailureOr<SmallVector<Bucket>> makeBuckets(func::FuncOp func,
                                             ArrayRef<Operation *> optimizers);

  //===--------------------------------------------------------------------===//
  // The rewrite
  //===--------------------------------------------------------------------===//

  
  /// The step counter, the optimizers' runtime operands and the gradients'
  /// scale. Mixed precision: gradients are summed, not averaged; the optimizer
  /// multiplies them by 1 / (loss_scale * N). The overflow count is rebuilt from
  /// the reduced gradients, then summed over the ranks, so that every rank skips
  /// together. Clipping: the sum of squares likewise, from the reduced gradients.
  LogicalResult prepareScales(StepRewrite &s);

  /// The bucket's gradients reduced over the ranks: all-reduced at stage 0 (and
  /// handed to the unchanged optimizers), reduce-scattered to this rank's slice
  /// above. Returns the reduced (and, in f32, averaged) gradient.
  FailureOr<Value> reduceBucket(StepRewrite &s, size_t bi, Bucket &bucket);

  /// Stages 1-3: the bucket's optimizer on this rank's slice, with sharded state,
  /// at the end of the step (after every reader of the old values); the updated
  /// slice gathered back (stages 1-2) or kept sharded (stage 3). The
  /// per-parameter optimizers, their state and casts become dead.
  LogicalResult shardOptimizer(StepRewrite &s, size_t bi, Bucket &bucket, Value gavg);

  /// Mixed precision's overflow count and clipping's sum of squares, from the
  /// reduced gradients and over every rank, before the first optimizer.
  void reduceOverflowAndNorm(StepRewrite &s);

  /// Stages 1-3: the new return (outputs first, then the updates) and signature:
  /// the per-parameter state (and, in stage 3, the whole parameters) dropped, the
  /// updates renumbered.
  LogicalResult rebuildSignature(StepRewrite &s, ArrayRef<Bucket> buckets);

  /// An optimizer's runtime operand: the overflow count (`found`), the learning
  /// rate (`lr`); null when absent.
  static Value runtimeOperand(Operation *op, bool found, bool lr = false);
  static void setGradScale(Operation *op, Value v);

  static bool isTrainedAway(ArrayRef<Bucket> buckets, BlockArgument a);

  std::string argName(func::FuncOp func, unsigned arg);

  /// A new argument of the entry block; its attributes wait in `newArgAttrs`
  /// and the signature takes them all at once (commitNewArgs): inserting into
  /// the function type one by one is quadratic in the arguments (a 175B model's
  /// buckets add tens of thousands).
  BlockArgument addArg(func::FuncOp func, Type type, StringRef key, StringRef name);

  /// Argument `arg`'s attribute `key`, new arguments' included.
  Attribute argAttr(func::FuncOp func, unsigned arg, StringRef key);
  void setArgAttr(func::FuncOp func, unsigned arg, StringRef key, Attribute value);

  /// The signature takes the entry block's arguments and the new ones' attributes.
  void commitNewArgs(func::FuncOp func);
  unsigned committedArgs = 0;
  SmallVector<NamedAttrList> newArgAttrs;

  /// Records where each member of a bucket lives, for the runtime to load its
  /// slice from the model's initializers, to gather the weights back, and to map
  /// sharded optimizer state onto parameters (checkpoints, resharding).
  void setBucketLayout(func::FuncOp func, unsigned arg, const Bucket &bucket);

  /// Gradient accumulation: a gradient that is a chain of `zero.accumulate` adds
  /// gives each micro-batch's contribution, in order (mixed precision: the 16-bit
  /// gradient under its f32 cast); any other gradient is its own one contribution.
  static SmallVector<Value> microContributions(Value g);
  static bool accumulating(ArrayRef<Value> grads);

  /// The phase of an op that reads a parameter: 2m for micro-batch m's forward,
  /// 2m + 1 for its backward (gradient accumulation marks ops with it; without it,
  /// forward is what comes before the loss).
  int64_t phaseOf(Operation *op);

  /// Stage 3: each use of a member parameter reads a copy sliced out of an
  /// all-gathered bucket: one gather before the first forward use, another before
  /// the first backward use (per micro-batch with accumulation), so nothing full
  /// stays alive in between.
  LogicalResult gatherForUse(func::FuncOp func, const Bucket &bucket,
                             BlockArgument shardArg);
};

} // namespace zero::shard_zero

#endif // ZERO_DIALECT_COMPUTE_TRANSFORMS_ZEROSHARDER_H
