//===- ZeroPipeline.cpp - From the imported graph to the plan -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Pipeline/ZeroPipeline.h"

#include "zero/Conversion/Passes.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

std::string zero::checkZeroPipelineOptions(const ZeroPipelineOptions &o, StringRef dashes) {
  std::string d = dashes.str();
  auto oneOf = [&](StringRef name, StringRef value, StringRef allowed) -> std::string {
    SmallVector<StringRef> values;
    allowed.split(values, ", ");
    if (llvm::is_contained(values, value))
      return "";
    return d + name.str() + "=" + value.str() + " is not one of " + allowed.str();
  };
  for (std::string why :
       {oneOf("mode", o.mode, "train, inference, gradients"),
        oneOf("level", o.level, "graph, step, plan, zplan"),
        oneOf("precision", o.precision, "fp32, bf16, fp16"),
        oneOf("offload-optimizer", o.offloadOptimizer, "none, cpu")})
    if (!why.empty())
      return why;
  if (o.worldSize < 1)
    return d + "world-size must be at least 1";
  if (o.zeroStage < 0 || o.zeroStage > 3)
    return d + "zero-stage=" + std::to_string(o.zeroStage) + " is not one of 0, 1, 2, 3";
  if (o.offloadOptimizer == "cpu" && (o.mode != "train" || o.zeroStage == 0))
    return d + "offload-optimizer=cpu offloads a ZeRO optimizer: it needs " + d +
           "mode=train and " + d + "zero-stage 1, 2 or 3";
  if (o.bucketSizeMb <= 0 || o.persistenceThreshold < 0 || o.prefetchBuckets < 0 ||
      o.maxLiveMb < 0 || o.fuseBelowKb < 0)
    return d + "bucket-size-mb must be positive; " + d + "persistence-threshold, " + d +
           "prefetch-buckets, " + d + "max-live-mb and " + d +
           "fuse-below-kb non-negative";
  if (!o.reduceDtype.empty() && (o.reduceDtype != "fp32" || o.precision == "fp32"))
    return d + "reduce-dtype=" + o.reduceDtype +
           (o.reduceDtype != "fp32" ? " is not fp32"
                                    : " needs " + d + "precision=bf16 or fp16");
  if (o.gradAccumSteps < 1 || o.gradAccumSteps > 4096)
    return d + "grad-accum-steps must be 1 to 4096";
  if (o.clipGradNorm < 0)
    return d + "clip-grad-norm must be >= 0";
  if (o.recomputeLevel < 0)
    return d + "recompute-level must be >= 0";
  return "";
}

void zero::buildZeroPipeline(OpPassManager &pm, const ZeroPipelineOptions &o) {
  // The training step first: it needs the forward graph as imported. Then drop what
  // the loss does not need (canonicalize removes dead pure ops, CSE merges the
  // constants the gradient rules repeat).
  // GELU's erf chain as one op before anything reads the graph: its gradient rule
  // and autocast then see one op.
  if (o.level != "graph")
    pm.addPass(createRecomposeGeluPass());
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
      if (o.offloadOptimizer == "cpu")
        pm.addPass(createOffloadOptimizerPass());
    }
  }
  if (o.level == "plan" || o.level == "zplan") {
    if (!o.noFusion)
      pm.addPass(createFuseElementwisePass());
    ConvertComputeToPlanPassOptions opts;
    opts.worldSize = o.worldSize;
    opts.views = !o.noViews;
    pm.addPass(createConvertComputeToPlanPass(opts));
  }
  pm.addPass(createVerifyPipelinePass());
}

void zero::registerZeroPipeline() {
  registerPassPipeline(
      "zero-pipeline",
      "The whole compile as zero-opt runs it on a model: from the imported forward "
      "graph down to `level` (training step, ZeRO sharding, collective schedule, "
      "fusion, lowering), ending in --zero-verify-pipeline",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        ZeroPipelineOptions options;
        std::string parseError;
        llvm::raw_string_ostream os(parseError);
        if (failed(options.parseFromString(text, os)))
          return errorHandler(
              "zero-pipeline: " +
              (parseError.empty() ? "cannot read the options '" + text + "'"
                                  : StringRef(parseError).trim()));
        std::string why = checkZeroPipelineOptions(options, "");
        if (!why.empty())
          return errorHandler("zero-pipeline: " + why);
        buildZeroPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(ZeroPipelineOptions());
      });
}
