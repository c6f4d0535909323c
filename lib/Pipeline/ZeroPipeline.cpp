//===- ZeroPipeline.cpp - From the imported graph to the plan -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Pipeline/ZeroPipeline.h"

#include "zero/Conversion/Passes.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;

void zero::buildZeroPipeline(OpPassManager &pm, const ZeroPipelineOptions &o) {
  // The training step first: it needs the forward graph as imported. Then drop what
  // the loss does not need (canonicalize removes dead pure ops, CSE merges the
  // constants the gradient rules repeat).
  if (o.level != "graph" && o.mode != "inference") {
    if (o.precision != "fp32") {
      AutocastPassOptions cast;
      cast.precision = o.precision;
      cast.freeze = o.freeze;
      pm.addPass(createAutocastPass(cast));
    }
    BuildTrainingStepPassOptions train;
    train.loss = o.loss;
    train.freeze = o.freeze;
    train.optimizer = o.optimizer;
    train.lr = o.lr;
    train.beta1 = o.beta1;
    train.beta2 = o.beta2;
    train.eps = o.eps;
    train.weightDecay = o.weightDecay;
    train.momentum = o.momentum;
    train.gradientsOnly = o.mode == "gradients";
    train.clipGradNorm = o.clipGradNorm;
    train.runtimeLr = o.runtimeLr;
    train.gradAccumSteps = o.gradAccumSteps;
    pm.addPass(createBuildTrainingStepPass(train));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    // Before sharding: a recomputed op that reads a parameter is a backward use,
    // which stage 3 serves from the backward gather.
    if (o.recomputeLevel > 0 && o.mode == "train") {
      RecomputePassOptions r;
      r.level = o.recomputeLevel;
      pm.addPass(createRecomputePass(r));
    }
    // ZeRO sharding rewrites the optimizer of the step; stage 0 on one rank would
    // only add copies.
    if (o.mode == "train" && (o.zeroStage != 0 || o.worldSize != 1)) {
      ShardZeroPassOptions zopts;
      zopts.stage = o.zeroStage;
      zopts.worldSize = o.worldSize;
      zopts.bucketSizeMb = o.bucketSizeMb;
      zopts.persistenceThreshold = o.persistenceThreshold;
      zopts.reduceDtype = o.reduceDtype;
      pm.addPass(createShardZeroPass(zopts));
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
      // Last: the split-phase ops it places have side effects, and nothing after
      // it may move them.
      ScheduleCollectivesPassOptions sopts;
      sopts.prefetchBuckets = o.prefetchBuckets;
      sopts.maxLiveMb = o.maxLiveMb;
      sopts.noOverlap = o.noOverlap;
      sopts.fuseBelowKb = o.fuseBelowKb;
      pm.addPass(createScheduleCollectivesPass(sopts));
      // It only adds copies where values cross; the schedule stays.
      if (o.offloadOptimizer)
        pm.addPass(createOffloadOptimizerPass());
    }
  }
  if (o.level == "plan" || o.level == "zplan") {
    if (o.fuse)
      pm.addPass(createFuseElementwisePass());
    ConvertComputeToPlanPassOptions opts;
    opts.worldSize = o.worldSize;
    opts.views = o.views;
    pm.addPass(createConvertComputeToPlanPass(opts));
  }
  pm.addPass(createVerifyPipelinePass());
}
