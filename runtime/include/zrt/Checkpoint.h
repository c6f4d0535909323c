//===- Checkpoint.h - Sharded checkpoints of a training run ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A checkpoint is a folder DIR/step-S/ with one file per rank (its slices of the
// sharded buffers, and its share of the replicated ones: parameters, f32 master
// copies, optimizer state) and a manifest.json written by rank 0 after every
// rank's file is complete; then rank 0 replaces DIR/latest (the folder's name)
// atomically. Every file is written under a temporary name, fsynced and renamed,
// so a crash at any moment leaves `latest` naming a complete checkpoint. The
// layout is include/zplan/checkpoint.proto.
//
// Resuming reads tensors, not buffers (zrt/CheckpointLayout.h): any plan of the
// same model loads it, at any world size and ZeRO stage; with the same plan the
// run goes on bit-exactly. Everything is checked before any step runs: the
// manifest against the plan, each rank file's size and header, the checksum of
// every chunk of every file.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CHECKPOINT_H
#define ZRT_CHECKPOINT_H

#include "zrt/Executor.h"
#include "zrt/LossScaler.h"

#include <cstdint>
#include <string>

namespace zrt {

/// The training loop's state beside the buffers.
struct TrainerState {
  int64_t step = 0;    // optimizer steps done
  int64_t samples = 0; // global samples consumed (the data position)
  bool shuffle = false;
  uint64_t seed = 0;
  LossScaler::State scaler{1.0, 1, 0, -1};
  int64_t scheduleIteration = 0;
};

/// Writes DIR/step-S (S = state.step) from every rank (all must call it), then
/// DIR/latest; keeps the newest `keep` checkpoints (0: all). Throws zrt::Error.
void saveCheckpoint(Executor &exec, const std::string &dir, const TrainerState &state,
                    int keep);

/// Before a run saves checkpoints into `dir` at the steps after `firstStep` up to
/// `lastStep` (every `every` steps, 0: only the last): throws zrt::Error when a
/// folder DIR/step-S it would write holds files no checkpoint writes (a user's) or
/// a checkpoint of another model than `plan`'s, which saving would overwrite.
void checkCheckpointTargets(const zero::zplan::Plan &plan, const std::string &dir,
                            int64_t firstStep, int64_t lastStep, int64_t every);

/// Restores the buffers of this rank from `path` (a checkpoint folder, or a
/// folder whose `latest` names one), resharding as needed, and returns the loop's
/// state; `summary` (if given) says what was read. Every rank must call it.
/// Throws zrt::Error naming the file and the problem (missing, truncated,
/// corrupted, or a checkpoint of another model, optimizer or precision).
TrainerState loadCheckpoint(Executor &exec, const std::string &path,
                            std::string *summary = nullptr);

} // namespace zrt

#endif // ZRT_CHECKPOINT_H
