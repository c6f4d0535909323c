//===- OptionSettings.cpp - What a session's options set ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/OptionSettings.h"
#include "zero/Driver/DeepSpeedConfig.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace zero;

void zero::pipelineOptionsFrom(const CompileOptions &o, ZeroPipelineOptions &p,
                               StringRef level, const PlanSettings &s) {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  p.FIELD = o.FIELD.getValue();
#include "zero/Pipeline/ZeroPipelineOptions.def"
  p.level = level.str();
  p.runtimeLr = o.lrSchedule != "constant";
  p.bucketSizeMb = s.bucketMb;
  p.prefetchBuckets = s.prefetch;
  p.recomputeLevel = s.recomputeLevel;
  if (s.offloadActivations)
    p.offloadActivations = "cpu";
  if (s.shardGroupSize >= 0)
    p.shardGroupSize = s.shardGroupSize;
}

int64_t zero::recomputeLevelOf(const CompileOptions &o) {
  return o.recompute == "cheap" ? 1 : o.recompute == "blocks" ? 2 : 0;
}

namespace {

/// Sets option `name` from the DeepSpeed config's `key`, unless it was given
/// (then one line says which wins). A command line that breaks the config's
/// batch rule (`batchRule`: train_batch_size) is an error instead.
bool applyConfigFlag(CompileOptions &o, StringRef name, StringRef value, StringRef key,
                     const std::string &batchRule = "", bool deepspeedDefault = false) {
  if (!o.has(name)) {
    llvm::errs() << "zero-opt: error: internal: the config sets --" << name
                 << ", which zero-opt does not have\n";
    return false;
  }
  if (o.isGiven(name)) {
    if (name == "grad-accum-steps" && !batchRule.empty() &&
        std::to_string(o.gradAccumSteps) != value) {
      llvm::errs() << "zero-opt: error: --grad-accum-steps=" << o.gradAccumSteps
                   << " on the command line contradicts " << o.deepspeedConfig << ": its "
                   << batchRule << " needs " << value
                   << " micro-batches per step (change train_batch_size for "
                   << o.gradAccumSteps << " instead)\n";
      return false;
    }
    if (!deepspeedDefault) // a key the file leaves out: nothing to override
      llvm::errs() << "zero-opt: note: --" << name << " on the command line overrides "
                   << key << " (" << value << ") of " << o.deepspeedConfig << "\n";
    return true;
  }
  o.configOrigins[name.str()] = {key.str(), value.str()};
  if (!o.set(name, value)) {
    llvm::errs() << "zero-opt: error: " << o.deepspeedConfig << ": " << key << " (" << value
                 << ") is not a valid --" << name << "\n";
    return false;
  }
  return true;
}

/// An option by its flag's name, whatever its type.
struct Flag {
  const char *name;
  bool given;
};
template <typename S> Flag flag(const S &s) { return {s.name, s.given}; }

} // namespace

/// The first value among zero-opt's own flags (the pipeline's are
/// findOptionProblem's) that no run accepts: DeepSpeed's rules for its schedules
/// (each takes the parameters its class takes) and loss scaling, and budgets that
/// are finite. Flags that go with a setting not chosen are problems too.
std::optional<zero::OptionProblem> zero::findDriverProblem(const CompileOptions &o,
                                                           double optimizerLr) {
  using P = std::optional<zero::OptionProblem>;
  auto number = [](const auto &s, double v, std::string rule) -> P {
    return zero::OptionProblem{s.name, zero::formatOptionValue(v), rule};
  };
  auto count = [](const auto &s, int64_t v, std::string rule) -> P {
    return zero::OptionProblem{s.name, std::to_string(v), rule};
  };
  auto oneOf = [](const Setting<std::string> &s, StringRef allowed) {
    return zero::notOneOf(s.name, s.getValue(), allowed);
  };
  auto given = [](const auto &s) { return s.given; };
  for (P p : {oneOf(o.lrSchedule, "constant, warmup, warmup-decay, warmup-cosine"),
              oneOf(o.warmupType, "log, linear"),
              oneOf(o.recompute, "auto, none, cheap, blocks")})
    if (p)
      return p;
  // torch.optim's constructors take only their own hyper-parameters.
  if (o.optimizer == "sgd")
    for (Flag f : {flag(o.beta1), flag(o.beta2), flag(o.eps)})
      if (f.given)
        return zero::OptionProblem{f.name, "", "is AdamW's: --optimizer=sgd "
                                   "takes no betas or epsilon (torch.optim.SGD)"};
  if (o.optimizer == "adamw" && given(o.momentum))
    return zero::OptionProblem{o.momentum.name, "",
                               "is SGD's: --optimizer=adamw takes no momentum "
                               "(torch.optim.AdamW)"};
  // DeepSpeed's schedules, each with the parameters of its class
  // (deepspeed/runtime/lr_schedules.py): others are an error there, so here.
  bool warmupLr = o.lrSchedule == "warmup" || o.lrSchedule == "warmup-decay";
  bool cosine = o.lrSchedule == "warmup-cosine";
  struct Takes {
    Flag flag;
    bool taken;
  };
  for (Takes t : {Takes{flag(o.warmupMinLr), warmupLr}, Takes{flag(o.warmupMaxLr), warmupLr},
                  Takes{flag(o.warmupSteps), warmupLr || cosine},
                  Takes{flag(o.warmupType), warmupLr || cosine},
                  Takes{flag(o.totalSteps), o.lrSchedule == "warmup-decay" || cosine},
                  Takes{flag(o.cosMinRatio), cosine}, Takes{flag(o.warmupMinRatio), cosine}})
    if (t.flag.given && !t.taken)
      return zero::OptionProblem{
          t.flag.name, "",
          o.lrSchedule == "constant"
              ? "goes with --lr-schedule: without a schedule the learning rate is --lr"
              : "is not a parameter of --lr-schedule=" + o.lrSchedule.getValue() + " (" +
                    (cosine ? "WarmupCosineLR" : o.lrSchedule == "warmup" ? "WarmupLR"
                                                                         : "WarmupDecayLR") +
                    " has none of that name in DeepSpeed)"};
  if (!(std::isfinite(o.warmupMinLr) && o.warmupMinLr >= 0))
    return number(o.warmupMinLr, o.warmupMinLr, "must be finite and >= 0 (a learning rate)");
  if (given(o.warmupMaxLr) && !(std::isfinite(o.warmupMaxLr) && o.warmupMaxLr >= 0))
    return number(o.warmupMaxLr, o.warmupMaxLr, "must be finite and >= 0 (a learning rate)");
  double maxLr = given(o.warmupMaxLr) ? (double)o.warmupMaxLr : optimizerLr;
  if (warmupLr && maxLr < o.warmupMinLr)
    return number(o.warmupMaxLr, maxLr,
                  "must be at least --warmup-min-lr (" +
                      zero::formatOptionValue(o.warmupMinLr) +
                      "): the warm-up rises from the minimum to it (default: --lr)");
  if (o.warmupSteps < 1)
    return count(o.warmupSteps, o.warmupSteps,
                 "must be >= 1 (DeepSpeed's schedulers refuse fewer warm-up steps)");
  if (o.totalSteps < 0 || ((o.lrSchedule == "warmup-decay" || cosine) && o.totalSteps < 1))
    return count(o.totalSteps, o.totalSteps,
                 "must be >= 1 with --lr-schedule=" + o.lrSchedule.getValue() +
                     " (the steps of the whole run)");
  for (const Setting<double> *r : {&o.cosMinRatio, &o.warmupMinRatio})
    if (!(*r >= 0 && *r <= 1))
      return number(*r, *r, "must be in [0, 1] (a ratio of --lr)");
  // Loss scaling, by DeepSpeed's DynamicLossScaler; fp16 only.
  for (Flag f : {flag(o.lossScale), flag(o.initialScalePower), flag(o.lossScaleWindow),
                 flag(o.hysteresis), flag(o.minLossScale)})
    if (f.given && o.precision != "fp16")
      return zero::OptionProblem{f.name, "",
                                 "goes with --precision=fp16 (fp32 and bf16 train "
                                 "without loss scaling)"};
  if (!(std::isfinite(o.lossScale) && o.lossScale >= 0))
    return number(o.lossScale, o.lossScale, "must be finite and >= 0 (0: dynamic)");
  if (o.initialScalePower < 0 || o.initialScalePower > 120)
    return count(o.initialScalePower, o.initialScalePower, "must be 0 to 120");
  if (o.lossScaleWindow < 1)
    return count(o.lossScaleWindow, o.lossScaleWindow, "must be >= 1");
  if (o.hysteresis < 1)
    return count(o.hysteresis, o.hysteresis, "must be >= 1");
  if (!(std::isfinite(o.minLossScale) && o.minLossScale > 0))
    return number(o.minLossScale, o.minLossScale, "must be finite and > 0");
  if (o.lossScale == 0 && o.minLossScale > std::ldexp(1.0, o.initialScalePower))
    return number(o.minLossScale, o.minLossScale,
                  "must be at most the first dynamic scale, 2^--initial-scale-power = " +
                      zero::formatOptionValue(std::ldexp(1.0, o.initialScalePower)));
  // A flag that tunes a feature that is off would be ignored: said instead.
  if (given(o.quantizeBlock) && !o.quantizedWeights && !o.quantizedGradients)
    return count(o.quantizeBlock, o.quantizeBlock,
                 "sets the block of ZeRO++'s quantized collectives: it goes with "
                 "--zero-quantized-weights or --zero-quantized-gradients");
  if (given(o.nvmeReadAhead) && o.offloadParam != "nvme" && o.offloadOptimizer != "nvme")
    return count(o.nvmeReadAhead, o.nvmeReadAhead,
                 "sets how far ahead NVMe reads are issued: it goes with "
                 "--offload-param=nvme or --offload-optimizer=nvme");
  if (!(std::isfinite(o.maxMemoryGb) && o.maxMemoryGb >= 0))
    return number(o.maxMemoryGb, o.maxMemoryGb, "must be finite and >= 0 (GiB; 0: no budget)");
  if (o.stepsPerPrint < 0)
    return count(o.stepsPerPrint, o.stepsPerPrint, "must be >= 0");
  return std::nullopt;
}

/// Every value zero-opt was given, from its flags and a DeepSpeed config alike,
/// checked once, here: the pipeline's options by findOptionProblem, zero-opt's
/// own by findDriverProblem. The message names the flag, or the config key that
/// set it, and the rule with its range.
bool zero::validateSettings(const CompileOptions &o, const zero::ZeroPipelineOptions &options) {
  std::optional<zero::OptionProblem> p = zero::findOptionProblem(options);
  if (!p)
    p = zero::findDriverProblem(o, options.lr);
  if (!p)
    return true;
  auto origin = o.configOrigins.find(p->option);
  if (origin != o.configOrigins.end())
    llvm::errs() << "zero-opt: error: " << o.deepspeedConfig << ": '" << origin->second.key
                 << "' (" << origin->second.value << ", zero-opt's --" << p->option
                 << "): " << p->rule << "\n";
  else
    llvm::errs() << "zero-opt: error: --" << p->option
                 << (p->value.empty() ? " " : "=" + p->value + ": ") << p->rule << "\n";
  return false;
}

/// Reads --deepspeed and sets the flags it implies. The micro-batch it asks for
/// goes to `microBatch` (checked against the model once imported).
bool zero::applyDeepSpeedConfig(CompileOptions &o, std::optional<int64_t> &microBatch) {
  std::string error;
  zero::DeepSpeedConfig cfg;
  bool ok = zero::readDeepSpeedConfig(o.deepspeedConfig, o.worldSize, cfg, error);
  for (const std::string &w : cfg.warnings)
    llvm::errs() << "zero-opt: warning: " << o.deepspeedConfig << ": " << w << "\n";
  for (const std::string &n : cfg.notes)
    llvm::errs() << "zero-opt: note: " << o.deepspeedConfig << ": " << n << "\n";
  if (!ok) {
    llvm::errs() << "zero-opt: error: " << error << "\n";
    return false;
  }
  zero::DeepSpeedConfig *config = &cfg;
  for (const zero::ConfigFlag &f : config->flags)
    if (!applyConfigFlag(o, f.flag, f.value, f.key, config->batchRule, cfg.isDefault(f.key)))
      return false;
  // overlap_comm left out is on at stage 3 only (DeepSpeed's validator
  // overlap_comm_valid), whichever stage the config or the command line chose.
  bool overlap = cfg.overlapComm.value_or(o.zeroStage == 3);
  if (!cfg.overlapComm)
    cfg.defaults.push_back({"zero_optimization.overlap_comm",
                            std::string(overlap ? "true" : "false") + " (at stage " +
                                std::to_string((int64_t)o.zeroStage) + ")"});
  if (!overlap && !applyConfigFlag(o, "no-overlap", "true", "zero_optimization.overlap_comm",
                                   "", !cfg.overlapComm))
    return false;
  if (!cfg.defaults.empty()) {
    llvm::errs() << "zero-opt: note: " << o.deepspeedConfig
                 << ": keys it leaves out take DeepSpeed's defaults:";
    for (size_t i = 0; i < cfg.defaults.size(); ++i)
      llvm::errs() << (i ? ", " : " ") << cfg.defaults[i].key << " "
                   << cfg.defaults[i].value;
    llvm::errs() << "\n";
  }
  // DeepSpeed counts bucket sizes in elements; zero-opt's flags are MiB of the
  // parameters' type.
  double bytes = o.precision == "fp32" ? 4.0 : 2.0;
  auto mib = [&](double elements) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", elements * bytes / (1024.0 * 1024.0));
    return std::string(buf);
  };
  if (config->reduceBucketElements &&
      !applyConfigFlag(o, "bucket-size-mb", mib(*config->reduceBucketElements),
                       "zero_optimization.reduce_bucket_size", "",
                       cfg.isDefault("zero_optimization.reduce_bucket_size")))
    return false;
  if (config->maxLiveElements &&
      !applyConfigFlag(o, "max-live-mb", mib(*config->maxLiveElements),
                       "zero_optimization.stage3_max_live_parameters", "",
                       cfg.isDefault("zero_optimization.stage3_max_live_parameters")))
    return false;
  if (config->prefetchElements) {
    // zero-opt prefetches whole buckets: as many as hold the elements asked for.
    double bucketElements = o.bucketSizeMb * 1024.0 * 1024.0 / bytes;
    int64_t buckets = std::max<int64_t>(
        1, (int64_t)std::ceil(*config->prefetchElements / bucketElements));
    if (!applyConfigFlag(o, "prefetch-buckets", std::to_string(buckets),
                         "zero_optimization.stage3_prefetch_bucket_size", "",
                         cfg.isDefault("zero_optimization.stage3_prefetch_bucket_size")))
      return false;
  }
  microBatch = config->microBatch;
  return true;
}
