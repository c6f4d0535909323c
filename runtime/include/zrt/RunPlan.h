//===- RunPlan.h - One run of zero-run, on its ranks ------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What zero-run runs once its ranks exist: a checkpoint's consolidation, the
// machine's calibration, or the plan, on this process's ranks (threads, one per
// device, when no launcher started it) after the ranks agree on what they run.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RUNPLAN_H
#define ZRT_RUNPLAN_H

#include "zrt/Communicator.h"
#include "zrt/RunOptions.h"

#include <string>

namespace zrt {

/// Runs what `o` asks on this process's rank of `comm` (or, when not `launched`,
/// on every rank of the plan as threads); the exit status.
int runPlan(const RunOptions &o, Communicator &comm, bool launched);

/// Without a launcher: how many rank processes zero-run starts for `o` (0: the
/// ranks run as threads of this process), and why, for the user. On GPUs with
/// CUDA graphs, one process per GPU (NCCL's guidance for collectives in graphs);
/// elsewhere threads, unless --ranks-as processes. Throws where the build cannot
/// (the emulated CUDA build's NCCL joins only threads).
int rankProcessesToStart(const RunOptions &o, std::string &why);

/// Before a launch's ranks meet: a plan run launched as `worldSize` ranks (the
/// launcher's `variable` says so) must have been compiled for that many, or
/// nothing is allocated for them and the error names both.
void checkLaunchFitsPlan(const RunOptions &o, int worldSize, const std::string &variable);

} // namespace zrt

#endif // ZRT_RUNPLAN_H
