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

#include <cmath>
#include <cstdio>

using namespace mlir;

std::string zero::formatOptionValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::optional<zero::OptionProblem> zero::notOneOf(StringRef option, StringRef value,
                                                  StringRef allowed) {
  SmallVector<StringRef> values;
  allowed.split(values, ", ");
  if (llvm::is_contained(values, value))
    return std::nullopt;
  return OptionProblem{option.str(), value.str(), "must be one of " + allowed.str()};
}

std::optional<zero::OptionProblem> zero::findOptionProblem(const ZeroPipelineOptions &o) {
  using P = std::optional<zero::OptionProblem>;
  auto number = [](StringRef name, double v, std::string rule) -> P {
    return zero::OptionProblem{name.str(), formatOptionValue(v), rule};
  };
  auto count = [](StringRef name, int64_t v, std::string rule) -> P {
    return zero::OptionProblem{name.str(), std::to_string(v), rule};
  };
  for (P p : {notOneOf("mode", o.mode, "train, inference, gradients"),
              notOneOf("level", o.level, "graph, step, plan, zplan"),
              notOneOf("optimizer", o.optimizer, "adamw, sgd"),
              notOneOf("precision", o.precision, "fp32, bf16, fp16"),
              notOneOf("offload-optimizer", o.offloadOptimizer, "none, cpu, nvme"),
              notOneOf("offload-param", o.offloadParam, "none, cpu, nvme"),
              notOneOf("offload-activations", o.offloadActivations, "none, cpu")})
    if (p)
      return p;
  // The optimizers' hyper-parameters, by torch.optim's rules (which refuse each
  // of these in its constructor), and finite: an infinite rate trains nothing.
  if (!(std::isfinite(o.lr) && o.lr >= 0))
    return number("lr", o.lr, "a learning rate must be finite and >= 0 (torch.optim)");
  if (!(o.beta1 >= 0 && o.beta1 < 1))
    return number("beta1", o.beta1, "AdamW's betas must be in [0, 1) (torch.optim.AdamW)");
  if (!(o.beta2 >= 0 && o.beta2 < 1))
    return number("beta2", o.beta2, "AdamW's betas must be in [0, 1) (torch.optim.AdamW)");
  if (!(std::isfinite(o.eps) && o.eps >= 0))
    return number("eps", o.eps, "AdamW's epsilon must be finite and >= 0 (torch.optim.AdamW)");
  if (o.weightDecay != -1.0 && !(std::isfinite(o.weightDecay) && o.weightDecay >= 0))
    return number("weight-decay", o.weightDecay,
                  "weight decay must be finite and >= 0 (torch.optim)");
  if (!(std::isfinite(o.momentum) && o.momentum >= 0))
    return number("momentum", o.momentum,
                  "SGD's momentum must be finite and >= 0 (torch.optim.SGD)");
  if (!(std::isfinite(o.clipGradNorm) && o.clipGradNorm >= 0))
    return number("clip-grad-norm", o.clipGradNorm,
                  "the gradients' norm is clipped to a finite value >= 0 (0: off)");
  if (o.gradAccumSteps < 1 || o.gradAccumSteps > 4096)
    return count("grad-accum-steps", o.gradAccumSteps, "must be 1 to 4096");
  // ZeRO and the schedule.
  if (o.worldSize < 1 || o.worldSize > 65536)
    return count("world-size", o.worldSize, "must be 1 to 65536");
  if (o.zeroStage < 0 || o.zeroStage > 3)
    return count("zero-stage", o.zeroStage, "must be one of 0, 1, 2, 3");
  if (o.shardGroupSize < 0 || (o.shardGroupSize > 0 && o.worldSize % o.shardGroupSize))
    return count("zero-shard-group-size", o.shardGroupSize,
                 "must divide --world-size (" + std::to_string(o.worldSize) +
                     ") into groups of equal size (0: one group of every rank)");
  bool hybrid = o.shardGroupSize > 0 && o.shardGroupSize < o.worldSize;
  if (hybrid && (o.mode != "train" || o.zeroStage == 0))
    return count("zero-shard-group-size", o.shardGroupSize,
                 "shards within groups: it needs mode train and ZeRO stage 1, 2 or 3 "
                 "(stage 0 shards nothing)");
  if (hybrid && (o.offloadOptimizer != "none" || o.offloadParam != "none"))
    return count("zero-shard-group-size", o.shardGroupSize,
                 "hybrid sharding with --offload-optimizer or --offload-param is not "
                 "built yet");
  if (o.hpzPartitionSize < 1 || o.worldSize % o.hpzPartitionSize)
    return count("zero-hpz-partition-size", o.hpzPartitionSize,
                 "must divide --world-size (" + std::to_string(o.worldSize) +
                     ") into groups of equal size (1: off)");
  bool hpz = o.hpzPartitionSize > 1 && o.hpzPartitionSize < o.worldSize;
  if (hpz && (o.mode != "train" || o.zeroStage != 3))
    return count("zero-hpz-partition-size", o.hpzPartitionSize,
                 "partitions stage 3's gathered parameters: it needs mode train and "
                 "ZeRO stage 3");
  if (hpz && (hybrid || o.offloadParam != "none"))
    return count("zero-hpz-partition-size", o.hpzPartitionSize,
                 "hpZ with --zero-shard-group-size or --offload-param is not built yet");
  if (o.quantizeBlock < 1 || o.quantizeBlock > (1 << 20))
    return count("zero-quantize-block", o.quantizeBlock, "must be 1 to 1048576 values");
  if (o.quantizedWeights && (o.mode != "train" || o.zeroStage != 3 || o.worldSize == 1))
    return zero::OptionProblem{"zero-quantized-weights", "true",
                               "quantizes stage 3's parameter gathers: it needs mode "
                               "train, ZeRO stage 3 and --world-size above 1"};
  if (o.quantizedGradients && (o.mode != "train" || o.zeroStage == 0 || o.worldSize == 1))
    return zero::OptionProblem{"zero-quantized-gradients", "true",
                               "quantizes the gradients' reduce-scatter: it needs mode "
                               "train, ZeRO stage 1, 2 or 3 and --world-size above 1"};
  if ((o.quantizedWeights && o.offloadParam != "none") ||
      (o.quantizedGradients && o.offloadOptimizer != "none"))
    return zero::OptionProblem{
        o.quantizedWeights && o.offloadParam != "none" ? "zero-quantized-weights"
                                                       : "zero-quantized-gradients",
        "true", "quantized collectives with --offload-param or --offload-optimizer are "
                "not built yet"};
  if (o.offloadOptimizer != "none" && (o.mode != "train" || o.zeroStage == 0))
    return zero::OptionProblem{"offload-optimizer", o.offloadOptimizer,
                         "offloads a ZeRO optimizer: it needs mode train and ZeRO "
                         "stage 1, 2 or 3"};
  if (o.offloadParam != "none" && (o.mode != "train" || o.zeroStage != 3))
    return zero::OptionProblem{"offload-param", o.offloadParam,
                         "offloads ZeRO stage 3's parameter slices: it needs mode "
                         "train and ZeRO stage 3"};
  if (o.offloadActivations != "none" && o.mode != "train")
    return zero::OptionProblem{"offload-activations", o.offloadActivations,
                               "keeps a training step's saved activations on the host: "
                               "it needs mode train"};
  if (!(std::isfinite(o.bucketSizeMb) && o.bucketSizeMb > 0))
    return number("bucket-size-mb", o.bucketSizeMb, "must be finite and > 0 (MiB)");
  if (o.persistenceThreshold < 0)
    return count("persistence-threshold", o.persistenceThreshold, "must be >= 0 (elements)");
  if (o.prefetchBuckets < 0)
    return count("prefetch-buckets", o.prefetchBuckets, "must be >= 0");
  if (o.nvmeReadAhead < -1)
    return count("nvme-read-ahead", o.nvmeReadAhead,
                 "must be >= 0 (-1: as --prefetch-buckets)");
  if (!(std::isfinite(o.maxLiveMb) && o.maxLiveMb >= 0))
    return number("max-live-mb", o.maxLiveMb, "must be finite and >= 0 (MiB; 0: no limit)");
  if (!(std::isfinite(o.fuseBelowKb) && o.fuseBelowKb >= 0))
    return number("fuse-below-kb", o.fuseBelowKb, "must be finite and >= 0 (KiB; 0: off)");
  if (!o.reduceDtype.empty() && o.reduceDtype != "fp32")
    return zero::OptionProblem{"reduce-dtype", o.reduceDtype, "must be fp32"};
  if (!o.reduceDtype.empty() && o.precision == "fp32")
    return zero::OptionProblem{"reduce-dtype", o.reduceDtype,
                         "needs --precision=bf16 or fp16"};
  if (o.recomputeLevel < 0)
    return count("recompute-level", o.recomputeLevel, "must be >= 0");
  return std::nullopt;
}

std::string zero::checkZeroPipelineOptions(const ZeroPipelineOptions &o, StringRef dashes) {
  std::optional<OptionProblem> p = findOptionProblem(o);
  if (!p)
    return "";
  return dashes.str() + p->option + "=" + p->value + ": " + p->rule;
}

void zero::buildZeroPipeline(OpPassManager &pm, const ZeroPipelineOptions &o) {
  // The training step first: it needs the forward graph as imported. Then drop what
  // the loss does not need (canonicalize removes dead pure ops, CSE merges the
  // constants the gradient rules repeat).
  // GELU's erf chain as one op before anything reads the graph: its gradient rule
  // and autocast then see one op.
  if (o.level != "graph")
    pm.addPass(createRecomposeGeluPass());
  // Attention written as its parts as one op, likewise before the backward exists.
  if (o.level != "graph" && !o.noAttentionFusion)
    pm.addPass(createFuseAttentionPass());
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
    // The loss and its gradient of the logits in one pass over them, once the
    // backward exists and before anything schedules it.
    if (!o.noFusion)
      pm.addPass(createFuseClassifierPass());
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
      zopts.shardGroupSize = o.shardGroupSize;
      zopts.hpzPartitionSize = o.hpzPartitionSize;
      zopts.quantizedWeights = o.quantizedWeights;
      zopts.quantizedGradients = o.quantizedGradients;
      zopts.quantizeBlock = o.quantizeBlock;
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
      // NVMe offload is host offload whose host-held states then move to the
      // NVMe file.
      if (o.offloadOptimizer != "none")
        pm.addPass(createOffloadOptimizerPass());
      if (o.offloadParam != "none")
        pm.addPass(createOffloadParamsPass());
      if (o.offloadOptimizer == "nvme" || o.offloadParam == "nvme") {
        OffloadNvmePassOptions nopts;
        nopts.params = o.offloadParam == "nvme";
        nopts.optimizer = o.offloadOptimizer == "nvme";
        // The NVMe reads run ahead as the gathers do, unless told otherwise.
        nopts.readAhead = o.nvmeReadAhead >= 0 ? o.nvmeReadAhead
                          : o.noOverlap        ? 0
                                               : o.prefetchBuckets;
        pm.addPass(createOffloadNvmePass(nopts));
      }
    }
    // Last of the placements: the copies go where the schedule left the ops.
    if (o.offloadActivations == "cpu")
      pm.addPass(createOffloadActivationsPass());
  }
  if (o.level == "plan" || o.level == "zplan") {
    // A product's bias and residual adds first: elementwise chains would take
    // them in otherwise.
    if (!o.noEpilogueFusion)
      pm.addPass(createFuseMatMulEpiloguePass());
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
