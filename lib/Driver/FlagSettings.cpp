//===- FlagSettings.cpp - What zero-opt's flags set -----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/FlagSettings.h"
#include "zero/Driver/DeepSpeedConfig.h"
#include "zero/Driver/ZeroOptFlags.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace zero::flags;

/// The pipeline's options as zero-opt's flags set them, compiling down to
/// `level` with the memory budget's or auto-tune's settings `s`.
void zero::pipelineOptionsFromFlags(zero::ZeroPipelineOptions &o, StringRef level,
                                     const zero::PlanSettings &s) {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  o.FIELD = FIELD.getValue();
#include "zero/Pipeline/ZeroPipelineOptions.def"
  o.level = level.str();
  o.runtimeLr = lrSchedule != "constant";
  o.bucketSizeMb = s.bucketMb;
  o.prefetchBuckets = s.prefetch;
  o.recomputeLevel = s.recomputeLevel;
  if (s.offloadActivations)
    o.offloadActivations = "cpu";
  if (s.shardGroupSize >= 0)
    o.shardGroupSize = s.shardGroupSize;
}

/// --recompute as a --zero-recompute level (auto: none until a budget asks).
int64_t zero::recomputeLevelFromFlags() {
  return recompute == "cheap" ? 1 : recompute == "blocks" ? 2 : 0;
}

namespace {

/// The flags a DeepSpeed config set (the command line did not): the key and
/// value each came from, for messages about them.
struct ConfigOrigin {
  std::string key, value;
};
std::map<std::string, ConfigOrigin> configOrigins;

/// Sets flag `name` from the DeepSpeed config's `key`, unless the command line
/// gave it (then one line says which wins). A command line that breaks the
/// config's batch rule (`batchRule`: train_batch_size) is an error instead.
bool applyConfigFlag(StringRef name, StringRef value, StringRef key,
                     const std::string &batchRule = "", bool deepspeedDefault = false) {
  auto &registered = cl::getRegisteredOptions();
  auto it = registered.find(name);
  if (it == registered.end()) {
    llvm::errs() << "zero-opt: error: internal: the config sets --" << name
                 << ", which zero-opt does not have\n";
    return false;
  }
  cl::Option *o = it->second;
  if (o->getNumOccurrences()) {
    if (name == "grad-accum-steps" && !batchRule.empty() &&
        std::to_string(gradAccumSteps) != value) {
      llvm::errs() << "zero-opt: error: --grad-accum-steps=" << gradAccumSteps
                   << " on the command line contradicts " << deepspeedConfig << ": its "
                   << batchRule << " needs " << value
                   << " micro-batches per step (change train_batch_size for "
                   << gradAccumSteps << " instead)\n";
      return false;
    }
    if (!deepspeedDefault) // a key the file leaves out: nothing to override
      llvm::errs() << "zero-opt: note: --" << name << " on the command line overrides "
                   << key << " (" << value << ") of " << deepspeedConfig << "\n";
    return true;
  }
  configOrigins[name.str()] = {key.str(), value.str()};
  if (o->addOccurrence(0, name, value)) {
    llvm::errs() << "zero-opt: error: " << deepspeedConfig << ": " << key << " (" << value
                 << ") is not a valid --" << name << "\n";
    return false;
  }
  return true;
}

} // namespace

/// The first value among zero-opt's own flags (the pipeline's are
/// findOptionProblem's) that no run accepts: DeepSpeed's rules for its schedules
/// (each takes the parameters its class takes) and loss scaling, and budgets that
/// are finite. Flags that go with a setting not chosen are problems too.
std::optional<zero::OptionProblem> zero::findDriverProblem(double optimizerLr) {
  using P = std::optional<zero::OptionProblem>;
  auto number = [](const cl::Option &o, double v, std::string rule) -> P {
    return zero::OptionProblem{o.ArgStr.str(), zero::formatOptionValue(v), rule};
  };
  auto count = [](const cl::Option &o, int64_t v, std::string rule) -> P {
    return zero::OptionProblem{o.ArgStr.str(), std::to_string(v), rule};
  };
  auto oneOf = [](const cl::opt<std::string> &o, StringRef allowed) {
    return zero::notOneOf(o.ArgStr, o.getValue(), allowed);
  };
  auto given = [](const cl::Option &o) { return o.getNumOccurrences() > 0; };
  for (P p : {oneOf(lrSchedule, "constant, warmup, warmup-decay, warmup-cosine"),
              oneOf(warmupType, "log, linear"),
              oneOf(recompute, "auto, none, cheap, blocks")})
    if (p)
      return p;
  // torch.optim's constructors take only their own hyper-parameters.
  if (optimizer == "sgd")
    for (const cl::Option *o : {(const cl::Option *)&beta1, (const cl::Option *)&beta2,
                                (const cl::Option *)&eps})
      if (given(*o))
        return zero::OptionProblem{o->ArgStr.str(), "", "is AdamW's: --optimizer=sgd "
                                   "takes no betas or epsilon (torch.optim.SGD)"};
  if (optimizer == "adamw" && given(momentum))
    return zero::OptionProblem{momentum.ArgStr.str(), "",
                               "is SGD's: --optimizer=adamw takes no momentum "
                               "(torch.optim.AdamW)"};
  // DeepSpeed's schedules, each with the parameters of its class
  // (deepspeed/runtime/lr_schedules.py): others are an error there, so here.
  bool warmupLr = lrSchedule == "warmup" || lrSchedule == "warmup-decay";
  bool cosine = lrSchedule == "warmup-cosine";
  struct Takes {
    const cl::Option *flag;
    bool taken;
  };
  for (Takes t : {Takes{&warmupMinLr, warmupLr}, Takes{&warmupMaxLr, warmupLr},
                  Takes{&warmupSteps, warmupLr || cosine}, Takes{&warmupType, warmupLr || cosine},
                  Takes{&totalSteps, lrSchedule == "warmup-decay" || cosine},
                  Takes{&cosMinRatio, cosine}, Takes{&warmupMinRatio, cosine}})
    if (given(*t.flag) && !t.taken)
      return zero::OptionProblem{
          t.flag->ArgStr.str(), "",
          lrSchedule == "constant"
              ? "goes with --lr-schedule: without a schedule the learning rate is --lr"
              : "is not a parameter of --lr-schedule=" + lrSchedule.getValue() + " (" +
                    (cosine ? "WarmupCosineLR" : lrSchedule == "warmup" ? "WarmupLR"
                                                                         : "WarmupDecayLR") +
                    " has none of that name in DeepSpeed)"};
  if (!(std::isfinite(warmupMinLr) && warmupMinLr >= 0))
    return number(warmupMinLr, warmupMinLr, "must be finite and >= 0 (a learning rate)");
  if (given(warmupMaxLr) && !(std::isfinite(warmupMaxLr) && warmupMaxLr >= 0))
    return number(warmupMaxLr, warmupMaxLr, "must be finite and >= 0 (a learning rate)");
  double maxLr = given(warmupMaxLr) ? (double)warmupMaxLr : optimizerLr;
  if (warmupLr && maxLr < warmupMinLr)
    return number(warmupMaxLr, maxLr,
                  "must be at least --warmup-min-lr (" +
                      zero::formatOptionValue(warmupMinLr) +
                      "): the warm-up rises from the minimum to it (default: --lr)");
  if (warmupSteps < 1)
    return count(warmupSteps, warmupSteps,
                 "must be >= 1 (DeepSpeed's schedulers refuse fewer warm-up steps)");
  if (totalSteps < 0 || ((lrSchedule == "warmup-decay" || cosine) && totalSteps < 1))
    return count(totalSteps, totalSteps,
                 "must be >= 1 with --lr-schedule=" + lrSchedule.getValue() +
                     " (the steps of the whole run)");
  for (const cl::opt<double> *r : {&cosMinRatio, &warmupMinRatio})
    if (!(*r >= 0 && *r <= 1))
      return number(*r, *r, "must be in [0, 1] (a ratio of --lr)");
  // Loss scaling, by DeepSpeed's DynamicLossScaler; fp16 only.
  for (const cl::Option *o :
       {(const cl::Option *)&lossScale, (const cl::Option *)&initialScalePower,
        (const cl::Option *)&lossScaleWindow, (const cl::Option *)&hysteresis,
        (const cl::Option *)&minLossScale})
    if (given(*o) && precision != "fp16")
      return zero::OptionProblem{o->ArgStr.str(), "",
                                 "goes with --precision=fp16 (fp32 and bf16 train "
                                 "without loss scaling)"};
  if (!(std::isfinite(lossScale) && lossScale >= 0))
    return number(lossScale, lossScale, "must be finite and >= 0 (0: dynamic)");
  if (initialScalePower < 0 || initialScalePower > 120)
    return count(initialScalePower, initialScalePower, "must be 0 to 120");
  if (lossScaleWindow < 1)
    return count(lossScaleWindow, lossScaleWindow, "must be >= 1");
  if (hysteresis < 1)
    return count(hysteresis, hysteresis, "must be >= 1");
  if (!(std::isfinite(minLossScale) && minLossScale > 0))
    return number(minLossScale, minLossScale, "must be finite and > 0");
  if (lossScale == 0 && minLossScale > std::ldexp(1.0, initialScalePower))
    return number(minLossScale, minLossScale,
                  "must be at most the first dynamic scale, 2^--initial-scale-power = " +
                      zero::formatOptionValue(std::ldexp(1.0, initialScalePower)));
  // A flag that tunes a feature that is off would be ignored: said instead.
  if (given(quantizeBlock) && !quantizedWeights && !quantizedGradients)
    return count(quantizeBlock, quantizeBlock,
                 "sets the block of ZeRO++'s quantized collectives: it goes with "
                 "--zero-quantized-weights or --zero-quantized-gradients");
  if (given(nvmeReadAhead) && offloadParam != "nvme" && offloadOptimizer != "nvme")
    return count(nvmeReadAhead, nvmeReadAhead,
                 "sets how far ahead NVMe reads are issued: it goes with "
                 "--offload-param=nvme or --offload-optimizer=nvme");
  if (!(std::isfinite(maxMemoryGb) && maxMemoryGb >= 0))
    return number(maxMemoryGb, maxMemoryGb, "must be finite and >= 0 (GiB; 0: no budget)");
  if (stepsPerPrint < 0)
    return count(stepsPerPrint, stepsPerPrint, "must be >= 0");
  return std::nullopt;
}

/// Every value zero-opt was given, from its flags and a DeepSpeed config alike,
/// checked once, here: the pipeline's options by findOptionProblem, zero-opt's
/// own by findDriverProblem. The message names the flag, or the config key that
/// set it, and the rule with its range.
bool zero::validateSettings(const zero::ZeroPipelineOptions &options) {
  std::optional<zero::OptionProblem> p = zero::findOptionProblem(options);
  if (!p)
    p = zero::findDriverProblem(options.lr);
  if (!p)
    return true;
  auto origin = configOrigins.find(p->option);
  if (origin != configOrigins.end())
    llvm::errs() << "zero-opt: error: " << deepspeedConfig << ": '" << origin->second.key
                 << "' (" << origin->second.value << ", zero-opt's --" << p->option
                 << "): " << p->rule << "\n";
  else
    llvm::errs() << "zero-opt: error: --" << p->option
                 << (p->value.empty() ? " " : "=" + p->value + ": ") << p->rule << "\n";
  return false;
}

/// Reads --deepspeed and sets the flags it implies. The micro-batch it asks for
/// goes to `microBatch` (checked against the model once imported).
bool zero::applyDeepSpeedConfig(std::optional<int64_t> &microBatch) {
  std::string error;
  zero::DeepSpeedConfig cfg;
  bool ok = zero::readDeepSpeedConfig(deepspeedConfig, worldSize, cfg, error);
  for (const std::string &w : cfg.warnings)
    llvm::errs() << "zero-opt: warning: " << deepspeedConfig << ": " << w << "\n";
  for (const std::string &n : cfg.notes)
    llvm::errs() << "zero-opt: note: " << deepspeedConfig << ": " << n << "\n";
  if (!ok) {
    llvm::errs() << "zero-opt: error: " << error << "\n";
    return false;
  }
  zero::DeepSpeedConfig *config = &cfg;
  for (const zero::ConfigFlag &f : config->flags)
    if (!applyConfigFlag(f.flag, f.value, f.key, config->batchRule, cfg.isDefault(f.key)))
      return false;
  // overlap_comm left out is on at stage 3 only (DeepSpeed's validator
  // overlap_comm_valid), whichever stage the config or the command line chose.
  bool overlap = cfg.overlapComm.value_or(zeroStage == 3);
  if (!cfg.overlapComm)
    cfg.defaults.push_back({"zero_optimization.overlap_comm",
                            std::string(overlap ? "true" : "false") + " (at stage " +
                                std::to_string((int64_t)zeroStage) + ")"});
  if (!overlap && !applyConfigFlag("no-overlap", "true", "zero_optimization.overlap_comm",
                                   "", !cfg.overlapComm))
    return false;
  if (!cfg.defaults.empty()) {
    llvm::errs() << "zero-opt: note: " << deepspeedConfig
                 << ": keys it leaves out take DeepSpeed's defaults:";
    for (size_t i = 0; i < cfg.defaults.size(); ++i)
      llvm::errs() << (i ? ", " : " ") << cfg.defaults[i].key << " "
                   << cfg.defaults[i].value;
    llvm::errs() << "\n";
  }
  // DeepSpeed counts bucket sizes in elements; zero-opt's flags are MiB of the
  // parameters' type.
  double bytes = precision == "fp32" ? 4.0 : 2.0;
  auto mib = [&](double elements) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", elements * bytes / (1024.0 * 1024.0));
    return std::string(buf);
  };
  if (config->reduceBucketElements &&
      !applyConfigFlag("bucket-size-mb", mib(*config->reduceBucketElements),
                       "zero_optimization.reduce_bucket_size", "",
                       cfg.isDefault("zero_optimization.reduce_bucket_size")))
    return false;
  if (config->maxLiveElements &&
      !applyConfigFlag("max-live-mb", mib(*config->maxLiveElements),
                       "zero_optimization.stage3_max_live_parameters", "",
                       cfg.isDefault("zero_optimization.stage3_max_live_parameters")))
    return false;
  if (config->prefetchElements) {
    // zero-opt prefetches whole buckets: as many as hold the elements asked for.
    double bucketElements = bucketSizeMb * 1024.0 * 1024.0 / bytes;
    int64_t buckets = std::max<int64_t>(
        1, (int64_t)std::ceil(*config->prefetchElements / bucketElements));
    if (!applyConfigFlag("prefetch-buckets", std::to_string(buckets),
                         "zero_optimization.stage3_prefetch_bucket_size", "",
                         cfg.isDefault("zero_optimization.stage3_prefetch_bucket_size")))
      return false;
  }
  microBatch = config->microBatch;
  return true;
}
