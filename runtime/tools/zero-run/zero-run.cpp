//===- zero-run.cpp - Executes a compiled zero-opt plan -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Train:  zero-run STEP.zplan --init MODEL.onnx --data FILE --steps K
//                  [--data-format=u8|u16|u32] [--shuffle --seed S]
//                  [--log-json FILE] [--save-weights OUT.onnx]
// Run once on given inputs:
//         zero-run PLAN.zplan --init MODEL.onnx [--inputs DIR] [--save-outputs DIR]
// One model file from a checkpoint:
//         zero-run --consolidate DIR -o OUT.safetensors [--with-optimizer-state]
//         zero-run --consolidate DIR -o OUT.onnx --init MODEL.onnx
//
// DIR follows the ONNX backend-test layout: input_K.pb / output_K.pb hold
// TensorProtos, matched to the graph's inputs and outputs by position.
//
//===----------------------------------------------------------------------===//

#include "zrt/BlasCore.h"
#include "zrt/Communicator.h"
#include "zrt/Device.h"
#include "zrt/Error.h"
#include "zrt/Launch.h"
#include "zrt/NvmeFile.h"
#include "zrt/ParallelFor.h"
#include "zrt/RankProcesses.h"
#include "zrt/RunAgreement.h"
#include "zrt/RunOptions.h"
#include "zrt/RunPlan.h"
#include "zrt/Watchdog.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

using namespace zrt;

namespace {

/// --help, --list-devices, --check-cuda-libraries.
int answerAtOnce(RunOptions::Action action) {
  switch (action) {
  case RunOptions::Action::Help:
    std::fputs(runUsage(), stdout);
    break;
  case RunOptions::Action::ListDevices:
    std::printf("cpu\n");
    for (int g = 0; g < cudaDeviceCount(); ++g)
      std::printf("cuda:%d\n", g);
    if (!cudaBackendBuilt())
      std::printf("(this zero-run was built without the CUDA backend)\n");
    break;
  case RunOptions::Action::CheckCudaLibraries:
    std::printf("%s\n", loadCudaLibraries().c_str());
    break;
  case RunOptions::Action::Run:
    break;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // Before MPI or any thread starts: it may run this program again.
  useKnownBlasCore(argv);
  // A file past the size limit (ulimit -f) is a write that fails with EFBIG, which
  // the writer reports naming the file, not a signal that kills the process and
  // leaves its files behind.
  std::signal(SIGXFSZ, SIG_IGN);
  // A run stopped by a signal (kill, Ctrl-C, a closed terminal) removes its NVMe
  // offload files first.
  removeNvmeFilesOnSignal();
  std::unique_ptr<Communicator> comm;
  int rc = 1, launchRank = -1; // launchRank: before the rendezvous completes
  try {
    comm = makeMpiCommunicatorIfLaunched(&argc, &argv);
    bool launched = comm != nullptr;
    if (!launched)
      comm = makeLocalCommunicator();
    RunOptions o = parseRunOptions(argc, argv);
    if (o.action != RunOptions::Action::Run)
      return answerAtOnce(o.action);
    // Not under mpirun: torchrun's or Slurm's variables say the rank, and the
    // ranks meet through a TCP rendezvous.
    if (!launched) {
      std::optional<LaunchVariables> v = readLaunchVariables(std::getenv);
      if (v && v->worldSize > 1) {
        launchRank = v->rank;
        checkLaunchFitsPlan(o, v->worldSize, v->worldSizeVariable);
        comm = makeTcpCommunicator(*v, o.rendezvousTimeoutS);
        launched = true;
      }
      // No launcher at all: zero-run may be its own, one process per rank.
      std::string why;
      if (!v)
        if (int ranks = rankProcessesToStart(o, why))
          return runRanksAsProcesses(ranks, argv, why, o.quiet);
    }
    setCpuThreads(o.threads ? (int)o.threads : defaultCpuThreads());
    // A rank waiting too long for the others reports the wait and ends the job.
    Communicator *c = comm.get();
    startWatchdog(o.collectiveTimeoutS, [c, launched](const std::string &message) {
      std::fflush(stdout);
      std::fprintf(stderr, "zero-run: error: %s\n", message.c_str());
      if (launched && c->size() > 1)
        c->abort(message); // ends every rank of the job
      std::_Exit(1);
    });
    rc = runPlan(o, *comm, launched);
  } catch (const AgreedError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "zero-run: error (rank %d): %s\n", comm->rank(), e.what());
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::string who = comm && comm->size() > 1
                          ? " (rank " + std::to_string(comm->rank()) + ")"
                      : launchRank >= 0 ? " (rank " + std::to_string(launchRank) + ")"
                                        : "";
    std::fprintf(stderr, "zero-run: error%s: %s\n", who.c_str(), e.what());
    // Under mpirun the others may wait for this rank inside a collective: a failure
    // on one rank ends every rank (MPI_Abort), within seconds.
    if (comm && comm->size() > 1)
      comm->abort(e.what());
  }
  return rc;
}
