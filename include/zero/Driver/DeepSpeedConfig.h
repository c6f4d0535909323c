//===- DeepSpeedConfig.h - A DeepSpeed JSON config as zero-opt flags -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// `zero-opt --deepspeed ds_config.json` reads DeepSpeed's config and turns what it
// says into zero-opt's own flags (the table in docs/UserGuide.md). Keys zero-opt
// does not know are warnings (with the nearest known key); keys DeepSpeed knows
// that change what is computed and zero-opt cannot do are errors; keys that only
// tune DeepSpeed's own machinery are notes; "auto" (the HF Trainer's placeholder)
// is an error naming the flag to give instead.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_DEEPSPEEDCONFIG_H
#define ZERO_DRIVER_DEEPSPEEDCONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zero {

/// One zero-opt flag the config sets, and the config key it comes from.
struct ConfigFlag {
  std::string flag;  // without dashes: "lr"
  std::string value; // as it would be written on the command line
  std::string key;   // "optimizer.params.lr"
};

struct DeepSpeedConfig {
  std::vector<ConfigFlag> flags;
  /// Sizes DeepSpeed counts in elements; zero-opt turns them into MiB once the
  /// precision (the element size) is known.
  /// Keys the config leaves out take DeepSpeed's defaults
  /// (deepspeed/runtime/zero/config.py), listed in `defaults`: a command-line
  /// flag wins over one of them without a note.
  std::optional<double> reduceBucketElements, maxLiveElements, prefetchElements;
  struct Default {
    std::string key;   // "zero_optimization.reduce_bucket_size"
    std::string value; // "500000000"
  };
  std::vector<Default> defaults;
  bool isDefault(const std::string &key) const {
    for (const Default &d : defaults)
      if (d.key == key)
        return true;
    return false;
  }
  /// zero_optimization.overlap_comm as given; left out, DeepSpeed turns it on at
  /// stage 3 only (its validator overlap_comm_valid), decided once the stage is.
  std::optional<bool> overlapComm;
  /// The micro-batch the config asks for (the model's batch must be it).
  std::optional<int64_t> microBatch;
  /// With train_batch_size, the accumulation steps follow from DeepSpeed's batch
  /// rule: a --grad-accum-steps that differs breaks it (this names the rule).
  std::string batchRule;
  /// Messages, each one line: warnings (unknown keys) and notes (keys that do not
  /// apply); printed before compiling.
  std::vector<std::string> warnings, notes;
};

/// Reads `path` for a run on `worldSize` ranks into `config`. On a problem
/// (not a regular file of at most 4 MiB, not JSON, nested over 64 deep, an
/// unsupported or "auto" key, a value of the wrong type, batch sizes that
/// disagree) returns false with `error` naming it; the warnings and notes found
/// until then are in `config` either way. The values' ranges are checked where
/// zero-opt's flags are (they become flags).
bool readDeepSpeedConfig(const std::string &path, int64_t worldSize,
                         DeepSpeedConfig &config, std::string &error);
/// The same on the config's text (`path` names it in messages).
bool readDeepSpeedConfigText(const std::string &text, const std::string &path,
                             int64_t worldSize, DeepSpeedConfig &config,
                             std::string &error);

} // namespace zero

#endif // ZERO_DRIVER_DEEPSPEEDCONFIG_H
