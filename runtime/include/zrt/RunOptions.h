//===- RunOptions.h - zero-run's command line -------------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// zero-run's flags, parsed and checked (every bad value is an error naming the
// flag) before anything runs.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RUNOPTIONS_H
#define ZRT_RUNOPTIONS_H

#include "zrt/NvmeFile.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zrt {

/// A rank and a step (--test-fail-rank R:S); rank -1: none.
struct RankAtStep {
  int64_t rank = -1, step = 0;
};

/// zero-run's command line.
struct RunOptions {
  /// What to do: run (a plan, --consolidate, --calibrate) or answer at once.
  enum class Action { Run, Help, ListDevices, CheckCudaLibraries };
  Action action = Action::Run;
  /// --init's checkpoint (a save_pretrained folder, its index, or safetensors
  /// files), besides the ONNX model.
  std::vector<std::string> initCheckpoint;
  std::string plan, init, inputs, saveOutputs, data, dataFormat = "u8", logJson,
      saveWeights, trace, calibrate, device, saveCheckpoint, resume, consolidate, output;
  /// --save-pretrained DIR, its dtype (--save-dtype; empty: the --init
  /// checkpoint's) and shard size (--save-shard-mb).
  std::string savePretrained, saveDtype;
  /// --eval-data FILE (in --data-format), --eval-every N steps (0: at the end
  /// only), --eval-batches K global batches.
  std::string evalData;
  int64_t evalEvery = 0, evalBatches = 8;
  int64_t saveShardBytes = int64_t(5000) * 1000000;
  bool saveShardGiven = false;
  int64_t checkpointEvery = 0, keepCheckpoints = 0;
  double commDelayNsPerByte = 0, collectiveTimeoutS = 600, rendezvousTimeoutS = 300;
  RankAtStep testFail, testStall, testOverflow, testNvmeCut, testNvmeDelete;
  int64_t steps = 1, printEvery = 1, threads = 0;
  bool printEveryGiven = false; // else the plan's steps_per_print, if it has one
  bool shuffle = false, quiet = false, profile = false, withOptimizerState = false,
       allowTf32 = false, cudnnAttention = true, calibrateSmall = false, cudaGraph = true,
       generatedKernels = true;
  uint64_t seed = 0;
  std::optional<uint64_t> randomInit; // --random-init SEED
  std::string nvmePath;               // --nvme-path DIR
  std::string ranksAs = "auto";       // --ranks-as threads|processes
  int nvmeQueueDepth = kDefaultNvmeQueueDepth; // --nvme-queue-depth N
};

/// `zero-run --help`.
const char *runUsage();

/// argv's flags; an Error naming the flag for a bad one. --help, --list-devices
/// and --check-cuda-libraries set `action` and end the parse.
RunOptions parseRunOptions(int argc, char **argv);

/// The folder of `path` ("." for a bare file name): where a model's external data
/// lives.
std::string folderOf(const std::string &path);

/// Whether `path` ends in `suffix` (a file's kind by its name: ".safetensors").
bool pathEndsWith(const std::string &path, const std::string &suffix);

} // namespace zrt

#endif // ZRT_RUNOPTIONS_H
