//===- RankProcesses.h - A plan's ranks as processes of this machine -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Without a launcher, zero-run runs a plan's ranks as threads of one process,
// except on GPUs, where NCCL's guidance for CUDA graphs is one GPU per process
// ("Using NCCL with CUDA Graphs": several GPUs per process may deadlock under
// capture): there it starts itself once per rank, as torchrun would on one
// machine, and waits for them.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RANKPROCESSES_H
#define ZRT_RANKPROCESSES_H

#include <string>

namespace zrt {

/// Runs this program (`argv`, as it was started) once per rank, `ranks` child
/// processes with torchrun's variables for one machine (RANK, WORLD_SIZE,
/// LOCAL_RANK, MASTER_ADDR 127.0.0.1, MASTER_PORT a free port) and a fresh
/// ZERO_RUN_SECRET, and waits for all of them. The first child to fail ends the
/// others (SIGTERM, then SIGKILL after 10 s); the exit status is that child's
/// (128 + its signal when one ended it), or 0. `why` is said once, unless quiet.
int runRanksAsProcesses(int ranks, char **argv, const std::string &why, bool quiet);

} // namespace zrt

#endif // ZRT_RANKPROCESSES_H
