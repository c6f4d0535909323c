//===- DeepSpeedConfig.cpp - A DeepSpeed JSON config as zero-opt flags ----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Key names and defaults follow deepspeed/runtime/config.py, zero/config.py,
// fp16/loss_scaler.py and lr_schedules.py.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/DeepSpeedConfig.h"

#include "zrt/InputFile.h"
#include "zrt/StrictJson.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

using namespace zero;
using llvm::StringRef;
namespace json = llvm::json;

namespace {

/// What a key does.
enum class Role {
  Read,        // the reader handles it (a flag, a section, the batch sizes)
  Note,        // tunes DeepSpeed's own machinery: it does not apply here
  Unsupported, // changes what is computed, and zero-opt cannot: an error
};

struct Key {
  Role role;
  const char *why = ""; // notes and errors: what zero-opt does instead
};

using Table = std::map<std::string, Key>;

const Table kTop = {
    {"train_batch_size", {Role::Read}},
    {"train_micro_batch_size_per_gpu", {Role::Read}},
    {"gradient_accumulation_steps", {Role::Read}},
    {"gradient_clipping", {Role::Read}},
    {"optimizer", {Role::Read}},
    {"scheduler", {Role::Read}},
    {"zero_optimization", {Role::Read}},
    {"fp16", {Role::Read}},
    {"bf16", {Role::Read}},
    {"bfloat16", {Role::Read}},
    {"steps_per_print", {Role::Read}},
    {"wall_clock_breakdown", {Role::Read}},
    {"communication_data_type", {Role::Read}},
    {"zero_allow_untested_optimizer", {Role::Note, "zero-opt builds its own optimizers"}},
    {"zero_force_ds_cpu_optimizer", {Role::Note, "zero-opt builds its own optimizers"}},
    {"flops_profiler", {Role::Note, "zero-run --profile times each kernel kind"}},
    {"memory_breakdown", {Role::Note, "zero-opt --report gives every rank's bytes"}},
    {"tensorboard", {Role::Note, "zero-run --log-json logs every step"}},
    {"wandb", {Role::Note, "zero-run --log-json logs every step"}},
    {"csv_monitor", {Role::Note, "zero-run --log-json logs every step"}},
    {"comet", {Role::Note, "zero-run --log-json logs every step"}},
    {"comms_logger", {Role::Note, "zero-run --trace records every collective"}},
    {"checkpoint", {Role::Note, "DeepSpeed's checkpoint engine"}},
    {"dump_state", {Role::Note, "DeepSpeed's own debugging"}},
    {"timers", {Role::Note, "zero-run --profile times each kernel kind"}},
    {"aio", {Role::Note, "zero-run moves NVMe data by Linux AIO, --nvme-queue-depth "
                    "requests in flight"}},
    {"seq_parallel_communication_data_type", {Role::Note, "no sequence parallelism"}},
    {"autotuning", {Role::Note, "zero-opt --auto-tune picks bucket size and prefetch"}},
    {"amp", {Role::Unsupported, "use \"bf16\" or \"fp16\" (--precision)"}},
    {"activation_checkpointing", {Role::Read}},
    {"sparse_attention", {Role::Unsupported, "attention runs as the model computes it"}},
    {"pipeline", {Role::Unsupported, "no pipeline parallelism"}},
    {"data_efficiency", {Role::Unsupported, "data order is zero-run's"}},
    {"curriculum_learning", {Role::Unsupported, "data order is zero-run's"}},
    {"compression_training", {Role::Unsupported, "no quantization-aware training"}},
    {"elasticity", {Role::Unsupported, "the world size is fixed at compile time"}},
    {"quantize_training", {Role::Unsupported, "no quantization-aware training"}},
    {"gradient_predivide_factor", {Role::Read}},
    {"prescale_gradients", {Role::Read}},
    {"sparse_gradients", {Role::Read}},
};

const Table kZero = {
    {"stage", {Role::Read}},
    {"reduce_bucket_size", {Role::Read}},
    {"allgather_bucket_size", {Role::Read}},
    {"stage3_prefetch_bucket_size", {Role::Read}},
    {"stage3_max_live_parameters", {Role::Read}},
    {"stage3_param_persistence_threshold", {Role::Read}},
    {"overlap_comm", {Role::Read}},
    {"offload_optimizer", {Role::Read}},
    {"offload_param", {Role::Read}},
    {"cpu_offload", {Role::Read}},
    {"cpu_offload_params", {Role::Read}},
    {"cpu_offload_use_pin_memory", {Role::Note, "the host arena is always pinned"}},
    {"contiguous_gradients", {Role::Note, "buckets are always contiguous in the plan"}},
    {"reduce_scatter", {Role::Note, "the stage chooses the collectives"}},
    {"allgather_partitions", {Role::Note, "the stage chooses the collectives"}},
    {"sub_group_size", {Role::Note, "the optimizer and its NVMe transfers run per bucket "
                                "slice (--bucket-size-mb)"}},
    {"stage3_max_reuse_distance", {Role::Note, "gathers are placed at compile time"}},
    {"round_robin_gradients", {Role::Note, "gradient buckets are placed at compile time"}},
    {"load_from_fp32_weights", {Role::Note, "weights load from the model's initializers"}},
    {"elastic_checkpoint", {Role::Note, "DeepSpeed's checkpoint engine"}},
    {"stage3_gather_16bit_weights_on_model_save",
     {Role::Note, "zero-run --save-weights gathers f32 weights"}},
    {"stage3_gather_fp16_weights_on_model_save",
     {Role::Note, "zero-run --save-weights gathers f32 weights"}},
    {"ignore_unused_parameters", {Role::Note, "unused parameters get no update"}},
    {"legacy_stage1", {Role::Note, "one stage-1 implementation"}},
    {"memory_efficient_linear", {Role::Note, "DeepSpeed's own linear layer"}},
    {"use_multi_rank_bucket_allreduce", {Role::Note, "the stage chooses the collectives"}},
    {"zero_hpz_partition_size", {Role::Read}},
    {"zero_quantized_weights", {Role::Read}},
    {"zero_quantized_gradients", {Role::Read}},
    {"mics_shard_size", {Role::Read}},
    {"mics_hierarchical_params_gather",
     {Role::Note, "a shard group's gathers run within the group"}},
};

// offload_optimizer and offload_param (deepspeed/runtime/zero/offload_config.py):
// the device is read; the rest tunes DeepSpeed's own offload engine.
const Table kOffload = {
    {"device", {Role::Read}},
    {"pin_memory", {Role::Note, "the host arena is always pinned"}},
    {"nvme_path", {Role::Note, "the folder is zero-run's --nvme-path"}},
    {"buffer_count", {Role::Note, "NVMe reads run --prefetch-buckets ops ahead "
                             "(--nvme-read-ahead)"}},
    {"buffer_size", {Role::Note, "the plan places every buffer"}},
    {"max_in_cpu", {Role::Note, "NVMe reads run --prefetch-buckets ops ahead "
                           "(--nvme-read-ahead)"}},
    {"pipeline", {Role::Note, "the schedule overlaps copies with compute"}},
    {"pipeline_read", {Role::Note, "NVMe reads run ahead of their readers"}},
    {"pipeline_write", {Role::Note, "NVMe writes run behind the step"}},
    {"fast_init", {Role::Note, "the plan places every buffer"}},
    {"ratio", {Role::Unsupported, "the whole optimizer is offloaded, or none of it"}},
    {"super_offload", {Role::Unsupported, "the optimizer runs as the plan says"}},
    {"cpuadam_cores_perc", {Role::Note, "the host optimizer uses every core"}},
};

// activation_checkpointing (deepspeed/runtime/activation_checkpointing/config.py):
// where the checkpoints wait is read; what to recompute is zero-opt's choice.
const Table kActivationCheckpointing = {
    {"cpu_checkpointing", {Role::Read}},
    {"partition_activations",
     {Role::Note, "data-parallel ranks hold activations of their own samples: nothing "
                  "to partition (DeepSpeed splits those model-parallel ranks share)"}},
    {"contiguous_memory_optimization",
     {Role::Note, "the plan places every activation in one arena"}},
    {"number_checkpoints",
     {Role::Note, "zero-opt chooses the checkpoints (--recompute, --max-memory-gb)"}},
    {"synchronize_checkpoint_boundary", {Role::Note, "DeepSpeed's own synchronization"}},
    {"profile", {Role::Note, "zero-run --profile times each kernel kind"}},
};

const Table kOptimizer = {{"type", {Role::Read}}, {"params", {Role::Read}}};
const Table kOptimizerParams = {
    {"lr", {Role::Read}},           {"betas", {Role::Read}},
    {"eps", {Role::Read}},          {"weight_decay", {Role::Read}},
    {"momentum", {Role::Read}},     {"adam_w_mode", {Role::Read}},
    {"bias_correction", {Role::Read}}, {"amsgrad", {Role::Read}},
    {"dampening", {Role::Read}},    {"nesterov", {Role::Read}},
    {"torch_adam", {Role::Note, "zero-opt's own AdamW kernels"}},
    {"fused", {Role::Note, "zero-opt's own AdamW kernels"}},
};
const Table kScheduler = {{"type", {Role::Read}}, {"params", {Role::Read}}};
const Table kSchedulerParams = {
    {"warmup_min_lr", {Role::Read}},   {"warmup_max_lr", {Role::Read}},
    {"warmup_num_steps", {Role::Read}}, {"warmup_type", {Role::Read}},
    {"total_num_steps", {Role::Read}}, {"cos_min_ratio", {Role::Read}},
    {"warmup_min_ratio", {Role::Read}}, {"last_batch_iteration", {Role::Read}},
};
const Table kFp16 = {
    {"enabled", {Role::Read}},          {"loss_scale", {Role::Read}},
    {"initial_scale_power", {Role::Read}}, {"loss_scale_window", {Role::Read}},
    {"hysteresis", {Role::Read}},       {"min_loss_scale", {Role::Read}},
    {"consecutive_hysteresis", {Role::Read}}, {"auto_cast", {Role::Read}},
    {"fp16_master_weights_and_grads", {Role::Read}},
};
const Table kBf16 = {{"enabled", {Role::Read}},
                     {"immediate_grad_update", {Role::Note, "one update per step"}}};

struct Reader {
  std::string path;
  int64_t world;
  DeepSpeedConfig out;
  std::string error;

  bool fail(const std::string &message) {
    if (error.empty())
      error = path + ": " + message;
    return false;
  }

  /// Checks an object's keys against `table`: unknown keys warn (with the
  /// nearest known one), notes note, unsupported keys fail (unless `allowed`
  /// says their value is harmless).
  bool keys(const json::Object &o, const Table &table, const std::string &prefix) {
    std::vector<std::string> sorted; // JSON objects have no order; messages do
    for (const auto &entry : o)
      sorted.push_back(entry.first.str());
    std::sort(sorted.begin(), sorted.end());
    for (const std::string &k : sorted) {
      std::string name = prefix + k;
      auto it = table.find(k);
      if (it == table.end()) {
        std::string nearest;
        unsigned best = ~0u;
        for (const auto &[known, unused] : table) {
          unsigned d = StringRef(known).edit_distance(StringRef(k), true, 8);
          if (d < best) {
            best = d;
            nearest = known;
          }
        }
        std::string msg = "unknown key '" + name + "' is ignored";
        if (best <= std::max<unsigned>(3, k.size() / 3))
          msg += " (did you mean '" + prefix + nearest + "'?)";
        out.warnings.push_back(msg);
        continue;
      }
      if (it->second.role == Role::Note)
        out.notes.push_back("'" + name + "' does not apply: " + it->second.why);
      else if (it->second.role == Role::Unsupported)
        return fail("'" + name + "' is not supported: " + it->second.why);
    }
    return true;
  }

  /// "auto" is the HF Trainer's placeholder, filled in before DeepSpeed sees it.
  bool notAuto(const json::Value &v, const std::string &name, const char *flag) {
    if (auto s = v.getAsString(); s && *s == "auto")
      return fail("'" + name + "' is \"auto\" (the Hugging Face Trainer's placeholder, "
                  "which it fills in before DeepSpeed reads the file); give " +
                  std::string(flag) + " instead");
    return true;
  }

  std::optional<double> number(const json::Object &o, StringRef key,
                               const std::string &name, const char *flag) {
    const json::Value *v = o.get(key);
    if (!v)
      return std::nullopt;
    if (!notAuto(*v, name, flag))
      return std::nullopt;
    if (auto d = v->getAsNumber())
      return *d;
    fail("'" + name + "' must be a number");
    return std::nullopt;
  }
  std::optional<bool> boolean(const json::Object &o, StringRef key, const std::string &name,
                              const char *flag) {
    const json::Value *v = o.get(key);
    if (!v)
      return std::nullopt;
    if (!notAuto(*v, name, flag))
      return std::nullopt;
    if (auto b = v->getAsBoolean())
      return *b;
    fail("'" + name + "' must be true or false");
    return std::nullopt;
  }
  std::optional<std::string> string(const json::Object &o, StringRef key,
                                    const std::string &name, const char *flag) {
    const json::Value *v = o.get(key);
    if (!v)
      return std::nullopt;
    if (!notAuto(*v, name, flag))
      return std::nullopt;
    if (auto s = v->getAsString())
      return s->str();
    fail("'" + name + "' must be a string");
    return std::nullopt;
  }
  const json::Object *section(const json::Object &o, StringRef key, const std::string &name) {
    const json::Value *v = o.get(key);
    if (!v)
      return nullptr;
    if (const json::Object *s = v->getAsObject())
      return s;
    fail("'" + name + "' must be an object");
    return nullptr;
  }

  /// A number as a flag value: every digit it has (17 significant).
  static std::string text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  static std::string integer(double v) { return std::to_string((long long)v); }
  /// DeepSpeed's default for zero_optimization.`key`, which the config leaves
  /// out: recorded for the note that lists them.
  double deepspeedDefault(const char *key, double value) {
    out.defaults.push_back({std::string("zero_optimization.") + key, text(value)});
    return value;
  }
  void flag(const char *f, const std::string &value, const std::string &key) {
    out.flags.push_back({f, value, key});
  }
  /// A number that must be a non-negative integer (at most 2^53: every such
  /// value converts to int64 exactly).
  bool whole(double v, const std::string &name) {
    if (!(v >= 0 && v == std::floor(v) && v <= 9007199254740992.0))
      return fail("'" + name + "' must be a non-negative integer (at most 2^53), not " +
                  text(v));
    return true;
  }

  bool read(const json::Object &top);
  bool batch(const json::Object &top);
  bool optimizer(const json::Object &o);
  bool scheduler(const json::Object &o);
  bool zero(const json::Object &o);
  bool precision(const json::Object &top);
};

bool Reader::batch(const json::Object &top) {
  auto train = number(top, "train_batch_size", "train_batch_size", "the model's batch");
  auto micro = number(top, "train_micro_batch_size_per_gpu",
                      "train_micro_batch_size_per_gpu", "the model's batch");
  auto accum = number(top, "gradient_accumulation_steps", "gradient_accumulation_steps",
                      "--grad-accum-steps");
  if (!error.empty())
    return false;
  for (auto [v, n] : {std::pair{train, "train_batch_size"},
                      {micro, "train_micro_batch_size_per_gpu"},
                      {accum, "gradient_accumulation_steps"}})
    if (v && (!whole(*v, n) || *v < 1 || *v > 2147483647))
      return fail(std::string("'") + n + "' must be a positive integer up to 2^31 - 1");
  if (train)
    out.batchRule = llvm::formatv("train_batch_size {0} on {1} ranks", (long long)*train,
                                  world)
                        .str();
  // Out of range, the world size is refused where the flags are checked; the
  // arithmetic here stays within what int64 holds.
  int64_t w = std::clamp<int64_t>(world, 1, 65536);
  // DeepSpeed's rule: train_batch_size = micro * accumulation * world size, and
  // its inference of the one left out.
  if (train && micro && accum) {
    if (*train != (long long)(*micro * *accum * w))
      return fail(llvm::formatv("train_batch_size {0} is not train_micro_batch_size_per_gpu "
                                "{1} x gradient_accumulation_steps {2} x world size {3} "
                                "(= {4})",
                                (long long)*train, (long long)*micro, (long long)*accum, w,
                                (long long)(*micro * *accum * w))
                      .str());
  } else if (train && micro) {
    double a = *train / (*micro * w);
    if (a != std::floor(a) || a < 1)
      return fail(llvm::formatv("train_batch_size {0} is not a multiple of "
                                "train_micro_batch_size_per_gpu {1} x world size {2}",
                                (long long)*train, (long long)*micro, w)
                      .str());
    accum = a;
  } else if (train && accum) {
    double m = *train / (*accum * w);
    if (m != std::floor(m) || m < 1)
      return fail(llvm::formatv("train_batch_size {0} is not a multiple of "
                                "gradient_accumulation_steps {1} x world size {2}",
                                (long long)*train, (long long)*accum, w)
                      .str());
    micro = m;
  } else if (train) {
    double m = *train / w;
    if (m != std::floor(m) || m < 1)
      return fail(llvm::formatv("train_batch_size {0} is not a multiple of the world "
                                "size {1}",
                                (long long)*train, w)
                      .str());
    micro = m;
    accum = 1;
  } else if (micro && !accum) {
    accum = 1;
  }
  if (micro)
    out.microBatch = (int64_t)*micro;
  if (accum)
    flag("grad-accum-steps", integer(*accum), "gradient_accumulation_steps");
  return true;
}

bool Reader::optimizer(const json::Object &o) {
  if (!keys(o, kOptimizer, "optimizer."))
    return false;
  auto type = string(o, "type", "optimizer.type", "--optimizer");
  if (!error.empty())
    return false;
  std::string t = type ? StringRef(*type).lower() : "adamw";
  const json::Object *p = section(o, "params", "optimizer.params");
  json::Object empty;
  if (!p)
    p = &empty;
  if (!error.empty() || !keys(*p, kOptimizerParams, "optimizer.params."))
    return false;
  auto adamW = boolean(*p, "adam_w_mode", "optimizer.params.adam_w_mode", "--optimizer");
  auto wd = number(*p, "weight_decay", "optimizer.params.weight_decay", "--weight-decay");
  if (!error.empty())
    return false;
  if (t == "adam" || t == "adamw") {
    // DeepSpeed's "Adam" is AdamW unless adam_w_mode is false; plain Adam (L2
    // regularization) differs only with weight decay.
    if (t == "adam" && adamW && !*adamW && wd && *wd != 0)
      return fail("optimizer Adam with adam_w_mode false and weight_decay " + text(*wd) +
                  " (L2-regularized Adam) is not supported: zero-opt's Adam is AdamW");
    flag("optimizer", "adamw", "optimizer.type");
  } else if (t == "sgd") {
    flag("optimizer", "sgd", "optimizer.type");
  } else {
    return fail("optimizer type '" + *type + "' is not supported (Adam, AdamW or SGD)");
  }
  if (auto lr = number(*p, "lr", "optimizer.params.lr", "--lr"))
    flag("lr", text(*lr), "optimizer.params.lr");
  if (wd)
    flag("weight-decay", text(*wd), "optimizer.params.weight_decay");
  if (auto eps = number(*p, "eps", "optimizer.params.eps", "--eps"))
    flag("eps", text(*eps), "optimizer.params.eps");
  if (auto m = number(*p, "momentum", "optimizer.params.momentum", "--momentum"))
    flag("momentum", text(*m), "optimizer.params.momentum");
  if (const json::Value *betas = p->get("betas")) {
    if (!notAuto(*betas, "optimizer.params.betas", "--beta1 and --beta2"))
      return false;
    const json::Array *a = betas->getAsArray();
    if (!a || a->size() != 2 || !(*a)[0].getAsNumber() || !(*a)[1].getAsNumber())
      return fail("'optimizer.params.betas' must be two numbers");
    flag("beta1", text(*(*a)[0].getAsNumber()), "optimizer.params.betas");
    flag("beta2", text(*(*a)[1].getAsNumber()), "optimizer.params.betas");
  }
  auto bias = boolean(*p, "bias_correction", "optimizer.params.bias_correction", "");
  auto ams = boolean(*p, "amsgrad", "optimizer.params.amsgrad", "");
  auto nesterov = boolean(*p, "nesterov", "optimizer.params.nesterov", "");
  auto damp = number(*p, "dampening", "optimizer.params.dampening", "");
  if (!error.empty())
    return false;
  if (bias && !*bias)
    return fail("'optimizer.params.bias_correction' false is not supported (AdamW "
                "corrects its moments' bias, as torch.optim.AdamW)");
  if (ams && *ams)
    return fail("'optimizer.params.amsgrad' true is not supported");
  if (nesterov && *nesterov)
    return fail("'optimizer.params.nesterov' true is not supported");
  if (damp && *damp != 0)
    return fail("'optimizer.params.dampening' " + text(*damp) + " is not supported (0)");
  return error.empty();
}

bool Reader::scheduler(const json::Object &o) {
  if (!keys(o, kScheduler, "scheduler."))
    return false;
  auto type = string(o, "type", "scheduler.type", "--lr-schedule");
  if (!error.empty())
    return false;
  if (!type)
    return fail("'scheduler' has no 'type'");
  const char *kind = *type == "WarmupLR"         ? "warmup"
                     : *type == "WarmupDecayLR"  ? "warmup-decay"
                     : *type == "WarmupCosineLR" ? "warmup-cosine"
                                                 : nullptr;
  if (!kind)
    return fail("scheduler type '" + *type + "' is not supported (WarmupLR, "
                "WarmupDecayLR or WarmupCosineLR)");
  flag("lr-schedule", kind, "scheduler.type");
  const json::Object *p = section(o, "params", "scheduler.params");
  if (!p)
    return error.empty();
  if (!keys(*p, kSchedulerParams, "scheduler.params."))
    return false;
  struct Param {
    const char *key, *flag;
    bool integral;
  };
  for (Param q : {Param{"warmup_min_lr", "warmup-min-lr", false},
                  Param{"warmup_max_lr", "warmup-max-lr", false},
                  Param{"warmup_num_steps", "warmup-steps", true},
                  Param{"total_num_steps", "total-steps", true},
                  Param{"cos_min_ratio", "cos-min-ratio", false},
                  Param{"warmup_min_ratio", "warmup-min-ratio", false}}) {
    std::string name = std::string("scheduler.params.") + q.key;
    if (auto v = number(*p, q.key, name, (std::string("--") + q.flag).c_str())) {
      if (q.integral && !whole(*v, name))
        return false;
      flag(q.flag, q.integral ? integer(*v) : text(*v), name);
    }
  }
  if (auto t = string(*p, "warmup_type", "scheduler.params.warmup_type", "--warmup-type"))
    flag("warmup-type", *t, "scheduler.params.warmup_type");
  // WarmupDecayLR's own default peak is 0.001, where WarmupLR's (and zero-opt's
  // --warmup-max-lr) is the optimizer's rate.
  if (*type == "WarmupDecayLR" && !p->get("warmup_max_lr"))
    flag("warmup-max-lr", "0.001", "scheduler.params.warmup_max_lr (WarmupDecayLR's default)");
  if (auto last = number(*p, "last_batch_iteration", "scheduler.params.last_batch_iteration",
                         ""))
    if (*last != -1)
      return fail("'scheduler.params.last_batch_iteration' " + text(*last) +
                  " is not supported (-1: a new run)");
  return error.empty();
}

bool Reader::zero(const json::Object &o) {
  if (!keys(o, kZero, "zero_optimization."))
    return false;
  if (auto s = number(o, "stage", "zero_optimization.stage", "--zero-stage")) {
    if (!whole(*s, "zero_optimization.stage") || *s > 3)
      return fail("'zero_optimization.stage' must be 0 to 3");
    flag("zero-stage", integer(*s), "zero_optimization.stage");
  }
  auto reduce = number(o, "reduce_bucket_size", "zero_optimization.reduce_bucket_size",
                       "--bucket-size-mb");
  auto gather = number(o, "allgather_bucket_size", "zero_optimization.allgather_bucket_size",
                       "--bucket-size-mb");
  for (auto [v, n] : {std::pair{reduce, "zero_optimization.reduce_bucket_size"},
                      {gather, "zero_optimization.allgather_bucket_size"}})
    if (v && !whole(*v, n))
      return false;
  if (reduce)
    out.reduceBucketElements = *reduce;
  else if (gather)
    out.reduceBucketElements = *gather;
  else
    out.reduceBucketElements = deepspeedDefault("reduce_bucket_size", 5e8);
  if (reduce && gather && *reduce != *gather)
    out.notes.push_back("zero-opt has one bucket size for reductions and gathers: "
                        "reduce_bucket_size " + text(*reduce) + " is used, "
                        "allgather_bucket_size " + text(*gather) + " is not");
  if (auto v = number(o, "stage3_max_live_parameters",
                      "zero_optimization.stage3_max_live_parameters", "--max-live-mb")) {
    if (!whole(*v, "zero_optimization.stage3_max_live_parameters"))
      return false;
    out.maxLiveElements = *v;
  } else if (error.empty()) {
    out.maxLiveElements = deepspeedDefault("stage3_max_live_parameters", 1e9);
  }
  if (auto v = number(o, "stage3_prefetch_bucket_size",
                      "zero_optimization.stage3_prefetch_bucket_size", "--prefetch-buckets")) {
    if (!whole(*v, "zero_optimization.stage3_prefetch_bucket_size"))
      return false;
    out.prefetchElements = *v;
  } else if (error.empty()) {
    out.prefetchElements = deepspeedDefault("stage3_prefetch_bucket_size", 5e7);
  }
  if (auto v = number(o, "stage3_param_persistence_threshold",
                      "zero_optimization.stage3_param_persistence_threshold",
                      "--persistence-threshold")) {
    if (!whole(*v, "zero_optimization.stage3_param_persistence_threshold"))
      return false;
    flag("persistence-threshold", integer(*v),
         "zero_optimization.stage3_param_persistence_threshold");
  } else if (error.empty()) {
    double v = deepspeedDefault("stage3_param_persistence_threshold", 1e5);
    flag("persistence-threshold", integer(v),
         "zero_optimization.stage3_param_persistence_threshold");
  }
  // Groups of ranks: MiCS shards within groups and replicates across them; ZeRO++'s
  // hpZ keeps a secondary partition of the gathered parameters per group. Each
  // key's default (`off`) leaves its flag alone.
  struct GroupKey {
    const char *key, *flag;
    double off;
  };
  for (GroupKey g : {GroupKey{"mics_shard_size", "zero-shard-group-size", -1},
                     GroupKey{"zero_hpz_partition_size", "zero-hpz-partition-size", 1}}) {
    std::string name = std::string("zero_optimization.") + g.key;
    if (auto v = number(o, g.key, name, (std::string("--") + g.flag).c_str())) {
      if (*v != g.off && !whole(*v, name))
        return false;
      if (*v > std::max(g.off, 0.0))
        flag(g.flag, integer(*v), name);
    }
  }
  // ZeRO++'s qwZ and qgZ.
  for (auto [key, flagName] : {std::pair{"zero_quantized_weights", "zero-quantized-weights"},
                               std::pair{"zero_quantized_gradients",
                                         "zero-quantized-gradients"}}) {
    std::string name = std::string("zero_optimization.") + key;
    if (auto v = boolean(o, key, name, (std::string("--") + flagName).c_str()))
      if (*v)
        flag(flagName, "true", name);
  }
  out.overlapComm =
      boolean(o, "overlap_comm", "zero_optimization.overlap_comm", "--no-overlap");
  // Offload is --offload-optimizer and --offload-param, to cpu or nvme.
  if (auto v = boolean(o, "cpu_offload_params", "zero_optimization.cpu_offload_params",
                       "--offload-param=cpu"))
    if (*v)
      flag("offload-param", "cpu", "zero_optimization.cpu_offload_params");
  if (auto v = boolean(o, "cpu_offload", "zero_optimization.cpu_offload",
                       "--offload-optimizer=cpu"))
    if (*v)
      flag("offload-optimizer", "cpu", "zero_optimization.cpu_offload");
  for (const char *k : {"offload_optimizer", "offload_param"})
    if (const json::Object *s = section(o, k, std::string("zero_optimization.") + k)) {
      if (!keys(*s, kOffload, std::string("zero_optimization.") + k + "."))
        return false;
      std::string key = std::string("zero_optimization.") + k + ".device";
      auto device = string(*s, "device", key, "");
      if (!device || *device == "none")
        continue;
      if (*device == "cpu" || *device == "nvme") {
        flag(std::string(k) == "offload_optimizer" ? "offload-optimizer" : "offload-param",
             *device, key);
        continue;
      }
      return fail(std::string("'zero_optimization.") + k + "' to device '" + *device +
                  "' is not supported (\"none\", \"cpu\" or \"nvme\")");
    }
  return error.empty();
}

bool Reader::precision(const json::Object &top) {
  bool fp16 = false, bf16 = false;
  if (const json::Object *f = section(top, "fp16", "fp16")) {
    if (!keys(*f, kFp16, "fp16."))
      return false;
    auto enabled = boolean(*f, "enabled", "fp16.enabled", "--precision=fp16");
    fp16 = enabled && *enabled;
    if (fp16) {
      struct Param {
        const char *key, *flag;
        bool integral;
      };
      for (Param q : {Param{"loss_scale", "loss-scale", false},
                      Param{"initial_scale_power", "initial-scale-power", true},
                      Param{"loss_scale_window", "loss-scale-window", true},
                      Param{"hysteresis", "hysteresis", true},
                      Param{"min_loss_scale", "min-loss-scale", false}}) {
        std::string name = std::string("fp16.") + q.key;
        if (auto v = number(*f, q.key, name, (std::string("--") + q.flag).c_str())) {
          if (q.integral && !whole(*v, name))
            return false;
          flag(q.flag, q.integral ? integer(*v) : text(*v), name);
        }
      }
      auto consecutive = boolean(*f, "consecutive_hysteresis", "fp16.consecutive_hysteresis", "");
      auto autoCast = boolean(*f, "auto_cast", "fp16.auto_cast", "");
      auto master = boolean(*f, "fp16_master_weights_and_grads",
                            "fp16.fp16_master_weights_and_grads", "");
      if (consecutive && *consecutive)
        return fail("'fp16.consecutive_hysteresis' true is not supported (the hysteresis "
                    "counter refills when the scale doubles)");
      if (autoCast && *autoCast)
        return fail("'fp16.auto_cast' true is not supported (zero-opt casts as autocast "
                    "does, by --precision)");
      if (master && *master)
        return fail("'fp16.fp16_master_weights_and_grads' true is not supported (master "
                    "weights are f32)");
    }
  }
  for (const char *k : {"bf16", "bfloat16"})
    if (const json::Object *b = section(top, k, k)) {
      if (!keys(*b, kBf16, std::string(k) + "."))
        return false;
      auto enabled = boolean(*b, "enabled", std::string(k) + ".enabled", "--precision=bf16");
      bf16 |= enabled && *enabled;
    }
  if (!error.empty())
    return false;
  if (fp16 && bf16)
    return fail("both fp16 and bf16 are enabled");
  if (fp16 || bf16)
    flag("precision", fp16 ? "fp16" : "bf16", fp16 ? "fp16.enabled" : "bf16.enabled");
  if (auto c = string(top, "communication_data_type", "communication_data_type",
                      "--reduce-dtype")) {
    std::string t = StringRef(*c).lower();
    if (t == "fp32" || t == "float32" || t == "float")
      flag("reduce-dtype", "fp32", "communication_data_type");
    else if (!((t == "fp16" && fp16) || (t == "bf16" && bf16)))
      return fail("'communication_data_type' " + *c + " is not supported (fp32, or the "
                  "training precision)");
  }
  return error.empty();
}

bool Reader::read(const json::Object &top) {
  if (!keys(top, kTop, ""))
    return false;
  if (auto f = number(top, "gradient_predivide_factor", "gradient_predivide_factor", ""))
    if (*f != 1)
      return fail("'gradient_predivide_factor' " + text(*f) + " is not supported (1)");
  for (const char *k : {"prescale_gradients", "sparse_gradients"})
    if (auto b = boolean(top, k, k, ""))
      if (*b)
        return fail(std::string("'") + k + "' true is not supported");
  if (!batch(top))
    return false;
  if (auto c = number(top, "gradient_clipping", "gradient_clipping", "--clip-grad-norm"))
    flag("clip-grad-norm", text(*c), "gradient_clipping");
  if (const json::Object *o = section(top, "optimizer", "optimizer"))
    if (!optimizer(*o))
      return false;
  if (const json::Object *o = section(top, "scheduler", "scheduler"))
    if (!scheduler(*o))
      return false;
  // Read even when absent: its keys then all take DeepSpeed's defaults.
  const json::Object *z = section(top, "zero_optimization", "zero_optimization");
  json::Object none;
  if (!error.empty() || !zero(z ? *z : none))
    return false;
  if (!precision(top))
    return false;
  if (const json::Object *a =
          section(top, "activation_checkpointing", "activation_checkpointing")) {
    if (!keys(*a, kActivationCheckpointing, "activation_checkpointing."))
      return false;
    if (auto c = boolean(*a, "cpu_checkpointing", "activation_checkpointing.cpu_checkpointing",
                         "--offload-activations=cpu"))
      if (*c)
        flag("offload-activations", "cpu", "activation_checkpointing.cpu_checkpointing");
  }
  if (auto s = number(top, "steps_per_print", "steps_per_print", "zero-run --print-every")) {
    if (!whole(*s, "steps_per_print") || *s < 1)
      return fail("'steps_per_print' must be a positive integer");
    flag("steps-per-print", integer(*s), "steps_per_print");
  }
  if (auto w = boolean(top, "wall_clock_breakdown", "wall_clock_breakdown",
                       "zero-run --profile"))
    if (*w)
      flag("wall-clock-breakdown", "true", "wall_clock_breakdown");
  return error.empty();
}

} // namespace

bool zero::readDeepSpeedConfigText(const std::string &text, const std::string &path,
                                   int64_t worldSize, DeepSpeedConfig &config,
                                   std::string &error) {
  // Strictly first: a duplicate key is an error, as in DeepSpeed's own parser
  // (LLVM's keeps the last in silence: "stage": 3, "stage": 1 compiled stage 1),
  // and the depth is bounded before LLVM's parser, which recurses per level, runs.
  zrt::JsonValue strict;
  std::string why;
  if (!zrt::parseStrictJson(text, strict, why)) {
    error = path + ": not a DeepSpeed config: " + why +
            (why.find("appears twice") != std::string::npos
                 ? " (DeepSpeed refuses duplicate keys too)"
                 : "");
    return false;
  }
  auto parsed = json::parse(text);
  if (!parsed) {
    error = path + ": not JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  const json::Object *top = parsed->getAsObject();
  if (!top) {
    error = path + ": a DeepSpeed config is a JSON object";
    return false;
  }
  Reader r{path, worldSize, {}, {}};
  bool ok = r.read(*top);
  config = std::move(r.out);
  error = r.error;
  return ok;
}

bool zero::readDeepSpeedConfig(const std::string &path, int64_t worldSize,
                               DeepSpeedConfig &config, std::string &error) {
  std::string text;
  if (!zrt::readInputFile(path, "DeepSpeed config", zrt::kMaxConfigBytes, text, error))
    return false;
  return readDeepSpeedConfigText(text, path, worldSize, config, error);
}
