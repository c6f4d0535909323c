//===- RunPlan.cpp - One run of zero-run, on its ranks --------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/RunPlan.h"
#include "zrt/TrainingLoop.h"
#include "zplan/KernelKind.h"
#include "zrt/AtomicFile.h"
#include "zrt/Calibrate.h"
#include "zrt/Checkpoint.h"
#include "zrt/CheckpointReader.h"
#include "zrt/Communicator.h"
#include "zrt/Consolidate.h"
#include "zrt/Device.h"
#include "zrt/Error.h"
#include "zrt/Executor.h"
#include "zrt/Kernels.h"
#include "zrt/Launch.h"
#include "zrt/ModelAsCompiled.h"
#include "zrt/OnnxTensors.h"
#include "zrt/PlanFile.h"
#include "zrt/PretrainedWeights.h"
#include "zrt/ResidentMemory.h"
#include "zrt/RunAgreement.h"
#include "zrt/SaveWeights.h"
#include "zrt/TorchWeights.h"
#include "zrt/TokenData.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

using namespace zrt;

namespace {

/// --device, or CUDA when this build has it and a GPU is present.
std::string deviceKind(const RunOptions &o) {
  std::string kind = o.device;
  if (kind.empty())
    kind = cudaDeviceCount() > 0 ? "cuda" : "cpu";
  if (kind == "cuda") {
    ZRT_CHECK(cudaBackendBuilt(), "--device=cuda: this zero-run was built without CUDA");
    ZRT_CHECK(cudaDeviceCount() > 0, "--device=cuda: no GPU is visible");
  }
  ZRT_CHECK(o.cudnnAttention || kind == "cuda",
            "--attention chooses the GPU's attention kernels; the CPU backend has one");
  ZRT_CHECK(o.generatedKernels || kind == "cuda",
            "--fused-kernels chooses how the GPU runs fused programs; the CPU backend "
            "has one way");
  ZRT_CHECK(!o.allowTf32 || kind == "cuda",
            "--allow-tf32 is for the GPU's tensor cores; the CPU backend's fp32 GEMMs "
            "are fp32");
  return kind;
}

/// The --init model, as the compiler read it.
onnx::ModelProto readInitModel(const RunOptions &o) { return readModelAsCompiled(o.init); }

/// --init CHECKPOINT: its files' headers, matched to the model's parameters by
/// PyTorch name (no tensor is read yet: each rank reads its slices as it loads).
std::unique_ptr<PretrainedWeights> openCheckpoint(const RunOptions &o,
                                                  const onnx::ModelProto &model,
                                                  const std::vector<std::string> &trained,
                                                  bool announce) {
  if (o.initCheckpoint.empty())
    return nullptr;
  ZRT_CHECK(!o.init.empty(),
            "--init " << o.initCheckpoint[0]
                      << " needs --init MODEL.onnx too: the exported model holds the "
                         "constants, and says which initializer holds which parameter");
  auto weights = std::make_unique<PretrainedWeights>(o.initCheckpoint);
  int64_t bound = weights->bind(model, trained);
  if (announce && !o.quiet)
    std::printf("%s: %lld initializers of %s by PyTorch name%s\n", weights->describe().c_str(),
                (long long)bound, o.init.c_str(),
                weights->unused()
                    ? (", " + std::to_string(weights->unused()) + " of its tensors unused").c_str()
                    : "");
  return weights;
}

/// One rank's run of the plan on its device.
int runRank(const RunOptions &o, zero::zplan::Plan plan, Device &device, Communicator &comm,
            onnx::ModelProto *preloaded = nullptr) {
  // The model first, then the memory in use: what the run adds to it is its
  // measured memory (the arena and whatever else the run allocates). `preloaded`
  // is --init when the caller has read it already.
  onnx::ModelProto model;
  if (preloaded)
    model = std::move(*preloaded);
  else if (!o.init.empty())
    model = readInitModel(o);
  std::unique_ptr<PretrainedWeights> checkpoint =
      openCheckpoint(o, model, planParameterNames(plan), comm.rank() == 0);
  int64_t memoryBefore = device.memoryInUse();
  ExecutorOptions eopts;
  eopts.commDelayNsPerByte = o.commDelayNsPerByte;
  eopts.trace = !o.trace.empty();
  eopts.graph = o.cudaGraph;
  eopts.nvmePath = o.nvmePath;
  eopts.nvmeQueueDepth = o.nvmeQueueDepth;
  Executor exec(std::move(plan), device, comm, eopts);
  bool needsParams = false;
  for (const auto &b : exec.plan().buffers())
    needsParams |= b.role() == zero::zplan::PARAM;
  ZRT_CHECK(!o.randomInit || !o.init.empty(),
            "--random-init needs --init MODEL.onnx too: the model holds the constants "
            "and the parameters' names and shapes");
  ZRT_CHECK(!o.randomInit || o.initCheckpoint.empty(),
            "--random-init and --init " << o.initCheckpoint[0]
                                        << " both give the parameters' values; choose one");
  ZRT_CHECK(!needsParams || !o.init.empty(),
            "the plan has parameters; give their values with --init MODEL.onnx");
  ZRT_CHECK(o.saveWeights.empty() || !o.init.empty(), "--save-weights needs --init");
  ZRT_CHECK(o.savePretrained.empty() || checkpoint,
            "--save-pretrained writes the model as from_pretrained loads it, with the "
            "config.json of the checkpoint it started from: give that checkpoint with --init "
            "(a save_pretrained folder) too");
  ZRT_CHECK(o.savePretrained.empty() ||
                std::filesystem::exists(std::filesystem::path(checkpoint->folder()) / "config.json"),
            "--save-pretrained: " << checkpoint->folder()
                                  << " has no config.json to write beside the weights "
                                     "(from_pretrained needs it)");
  ZRT_CHECK(o.savePretrained.empty() || !o.data.empty(),
            "--save-pretrained goes with --data (training)");
  ZRT_CHECK(!o.savePretrained.empty() || (o.saveDtype.empty() && !o.saveShardGiven),
            "--save-dtype and --save-shard-mb say how --save-pretrained writes; give "
            "--save-pretrained DIR too");
  if (!o.init.empty()) {
    // The first phase that can take minutes (a large model from its shards).
    bool say = comm.rank() == 0 && !o.quiet;
    auto start = std::chrono::steady_clock::now();
    // Whole lines: an error on stderr after a line left open would join it.
    if (say) {
      std::printf("loading the parameters from %s\n",
                  checkpoint ? checkpoint->describe().c_str()
                  : o.randomInit ? "--random-init"
                                 : o.init.c_str());
      std::fflush(stdout);
    }
    exec.loadParameters(model, folderOf(o.init), o.randomInit, checkpoint.get());
    if (say)
      std::printf("loaded the parameters in %.1f s\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                      .count());
  }
  if (!o.data.empty())
    return runTraining(o, exec, &model, checkpoint.get(), memoryBefore);
  ZRT_CHECK(comm.size() == 1, "running once on --inputs takes one rank");
  ZRT_CHECK(o.saveWeights.empty(), "--save-weights goes with --data (training)");
  return runOnInputs(o, exec);
}

/// No launcher: the plan's ranks are threads of this process, one device each
/// (GPUs 0 .. N-1, their NCCL communicators from one ncclCommInitAll, or the CPU).
/// The first rank to fail stops the others; its error is the one reported.
int runInProcess(const RunOptions &o, const zero::zplan::Plan &plan) {
  // Beyond this many, a rank per thread is a mistake (each holds a whole arena).
  const int64_t kMaxThreadRanks = 64;
  ZRT_CHECK(plan.world_size() <= kMaxThreadRanks,
            o.plan << " was compiled for " << plan.world_size()
                   << " ranks; one process runs at most " << kMaxThreadRanks
                   << " as threads: launch it with mpirun -np " << plan.world_size());
  int ranks = (int)plan.world_size();
  std::string kind = deviceKind(o);
  std::vector<std::unique_ptr<Device>> devices;
  if (kind == "cuda") {
    int gpus = cudaDeviceCount();
    ZRT_CHECK(ranks <= gpus, o.plan << " was compiled for " << ranks
                                    << " ranks and this machine has " << gpus
                                    << " GPU(s), one per rank; launch it with mpirun -np "
                                    << ranks << " across machines");
    // One rank without collectives needs no NCCL communicator (its start is most
    // of a small plan's run: the node tests, the gradient checks).
    bool collectives = ranks > 1;
    for (const auto &k : plan.kernels()) {
      zero::zplan::Kernel::Kind kind = zero::zplan::synchronousKind(k.kind());
      collectives |= kind == zero::zplan::Kernel::ALL_GATHER ||
                     kind == zero::zplan::Kernel::REDUCE_SCATTER ||
                     kind == zero::zplan::Kernel::ALL_REDUCE;
    }
    devices = makeCudaDevicesForThreads(ranks, CudaOptions{o.allowTf32, collectives, o.cudnnAttention, o.generatedKernels, o.quiet});
  } else {
    for (int r = 0; r < ranks; ++r)
      devices.push_back(makeCpuDevice());
  }
  if (ranks == 1) {
    std::unique_ptr<Communicator> comm = makeLocalCommunicator();
    devices[0]->bindToCallingThread();
    return runRank(o, plan, *devices[0], *comm);
  }
  if (!o.quiet)
    std::printf("running the %d ranks as threads of this process, on %s\n", ranks,
                kind == "cuda" ? ("GPUs 0-" + std::to_string(ranks - 1)).c_str() : "the CPU");
  std::vector<std::unique_ptr<Communicator>> comms = makeThreadCommunicators(ranks);
  std::mutex mutex;
  std::string firstError;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        devices[r]->bindToCallingThread();
        runRank(o, plan, *devices[r], *comms[r]);
      } catch (const std::exception &e) {
        bool first = false;
        {
          std::lock_guard<std::mutex> lock(mutex);
          first = firstError.empty();
          if (first)
            firstError = "rank " + std::to_string(r) + ": " + e.what();
        }
        // The others may wait for this rank in a host-side collective or, on
        // GPUs, inside NCCL: stop both.
        comms[r]->abort();
        if (first)
          for (auto &d : devices)
            d->abort();
      }
    });
  for (std::thread &t : threads)
    t.join();
  ZRT_CHECK(firstError.empty(), firstError);
  return 0;
}

/// Every file the run will write can be written: found now, not after training.
void checkOutputPaths(const RunOptions &o, int rank) {
  if (rank == 0) {
    if (!o.logJson.empty())
      checkWritable(o.logJson, "--log-json");
    if (!o.saveWeights.empty())
      checkWritable(o.saveWeights, "--save-weights");
    if (!o.trace.empty())
      checkWritable(o.trace, "--trace");
    if (!o.savePretrained.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.savePretrained, ec);
      ZRT_CHECK(!ec, "--save-pretrained: cannot create " << o.savePretrained << ": "
                                                          << ec.message());
      checkWritable((std::filesystem::path(o.savePretrained) / "config.json").string(),
                    "--save-pretrained");
    }
    if (!o.saveCheckpoint.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.saveCheckpoint, ec);
      ZRT_CHECK(!ec, "--save-checkpoint: cannot create " << o.saveCheckpoint << ": "
                                                          << ec.message());
      checkWritable((std::filesystem::path(o.saveCheckpoint) / "latest").string(),
                    "--save-checkpoint");
    }
  } else if (!o.trace.empty()) {
    checkWritable(traceFile(o.trace, rank), "--trace");
  }
  if (!o.saveOutputs.empty()) {
    struct stat st;
    if (::stat(o.saveOutputs.c_str(), &st) != 0)
      ZRT_CHECK(::mkdir(o.saveOutputs.c_str(), 0755) == 0,
                "--save-outputs '" << o.saveOutputs
                                   << "': cannot create the folder: " << std::strerror(errno));
    else
      ZRT_CHECK(S_ISDIR(st.st_mode),
                "--save-outputs '" << o.saveOutputs << "' is not a folder");
    checkWritable(o.saveOutputs + "/output_0.pb", "--save-outputs");
  }
}

/// What the ranks of an mpirun launch must agree on: the plan, what they read, the
/// steps and data order, and the options that make them call collectives (saving
/// weights and checkpoints, the JSON log, the device's set-up).
std::vector<AgreedValue> runAgreement(const RunOptions &o, const zero::zplan::Plan &plan,
                                      const onnx::ModelProto &model,
                                      const std::string &deviceKind) {
  auto hashOf = [](const std::string &s) {
    return (int64_t)contentHash(s.data(), s.size());
  };
  std::vector<AgreedValue> v;
  v.push_back({"plan", hashOf(planFingerprint(plan))});
  v.push_back({"device", hashOf(deviceKind)});
  // Generated weights: the seed, and the initializers' descriptions (their values,
  // never read, may not exist).
  int64_t weights = 0;
  if (!o.init.empty()) {
    uint64_t seed = o.randomInit ? *o.randomInit + 1 : 0; // 0: read, not generated
    weights = (int64_t)contentHash(&seed, sizeof seed,
                                   initializerFingerprint(model, folderOf(o.init),
                                                          !o.randomInit));
    if (!o.initCheckpoint.empty()) {
      uint64_t h = PretrainedWeights(o.initCheckpoint).fingerprint();
      weights = (int64_t)contentHash(&h, sizeof h, (uint64_t)weights);
    }
  }
  v.push_back({"initial weights (--init, --random-init)", weights});
  int64_t data = 0;
  if (!o.data.empty())
    data = (int64_t)TokenData::load(o.data, o.dataFormat).fingerprint();
  v.push_back({"data (--data, --data-format)", data});
  v.push_back({"--steps", o.steps, AgreedValue::Number});
  v.push_back({"--shuffle", o.shuffle, AgreedValue::Flag});
  v.push_back({"--seed", (int64_t)o.seed, AgreedValue::Number});
  int64_t resume = 0;
  if (!o.resume.empty())
    resume = hashOf(CheckpointReader(o.resume).manifest().manifest_checksum());
  v.push_back({"checkpoint to resume (--resume)", resume});
  v.push_back({"--save-checkpoint", !o.saveCheckpoint.empty(), AgreedValue::Flag});
  v.push_back({"--checkpoint-every", o.checkpointEvery, AgreedValue::Number});
  v.push_back({"--save-weights", !o.saveWeights.empty(), AgreedValue::Flag});
  v.push_back({"--log-json", !o.logJson.empty(), AgreedValue::Flag});
  v.push_back({"--inputs", !o.inputs.empty(), AgreedValue::Flag});
  return v;
}

/// --consolidate: one process writes the checkpoint's weights as one file.
int consolidate(const RunOptions &o, Communicator &comm) {
  ZRT_CHECK(comm.size() == 1, "--consolidate runs as one process, not under mpirun -np "
                                  << comm.size());
  auto endsWith = [&](const std::string &ext) { // and has a name before it
    return o.output.size() > ext.size() && pathEndsWith(o.output, ext);
  };
  checkWritable(o.output, "-o");
  ConsolidateResult r;
  if (endsWith(".safetensors")) {
    // With --init MODEL.onnx (the export), by PyTorch name.
    onnx::ModelProto model;
    if (!o.init.empty())
      model = readModelAsCompiled(o.init);
    r = consolidateToSafetensors(o.consolidate, o.output, o.withOptimizerState,
                                 o.init.empty() ? nullptr : &model);
  } else if (endsWith(".onnx")) {
    ZRT_CHECK(!o.init.empty(), "-o " << o.output << " needs --init MODEL.onnx (the model "
                                     << "whose initializers it replaces)");
    ZRT_CHECK(!o.withOptimizerState,
              "--with-optimizer-state writes safetensors only; ONNX has no place for it");
    r = consolidateToOnnx(o.consolidate, o.init, o.output);
  } else {
    ZRT_FAIL("-o " << o.output << ": the output is OUT.safetensors or OUT.onnx");
  }
  if (!o.quiet)
    std::printf("wrote %lld tensors (%.1f MB) of step %lld to %s; peak resident memory "
                "%.1f MB\n",
                (long long)r.tensors, r.bytes / 1e6, (long long)r.step, o.output.c_str(),
                peakResidentBytes() / 1048576.0);
  return 0;
}

} // namespace

int zrt::rankProcessesToStart(const RunOptions &o, std::string &why) {
  if (o.ranksAs == "threads" || !o.consolidate.empty() || !o.calibrate.empty())
    return 0;
  // By default, processes only on GPUs whose step is a CUDA graph holding NCCL
  // collectives (threads elsewhere: no plan is read twice for them).
  bool gpus = deviceKind(o) == "cuda", chosen = o.ranksAs == "processes";
  if (!chosen && (!gpus || !o.cudaGraph || !cudaRanksMayBeProcesses()))
    return 0;
  int64_t ranks = loadPlanFile(o.plan).world_size();
  if (ranks <= 1)
    return 0;
  if (chosen) {
    ZRT_CHECK(!gpus || cudaRanksMayBeProcesses(),
              "--ranks-as processes: this build's CUDA is emulated, and its NCCL joins only "
              "ranks that are threads of one process (--ranks-as threads)");
    ZRT_CHECK(ranks <= kMaxLaunchRanks, o.plan << " was compiled for " << ranks
                                              << " ranks: too many processes to start");
    why = "--ranks-as processes";
    return (int)ranks;
  }
  if (ranks > cudaDeviceCount())
    return 0; // the threads' path says there are too few GPUs
  why = "one per GPU, as NCCL advises for collectives in CUDA graphs; --ranks-as threads "
        "keeps them in this process";
  return (int)ranks;
}

void zrt::checkLaunchFitsPlan(const RunOptions &o, int worldSize, const std::string &variable) {
  if (!o.consolidate.empty() || !o.calibrate.empty())
    return;
  zero::zplan::Plan plan = loadPlanFile(o.plan);
  ZRT_CHECK(plan.world_size() == worldSize,
            variable << "=" << worldSize << " but " << o.plan << " was compiled for "
                     << plan.world_size() << " ranks: launch " << plan.world_size()
                     << " processes, or compile the plan with --world-size=" << worldSize);
}

int zrt::runPlan(const RunOptions &o, Communicator &comm, bool launched) {
  if (!o.consolidate.empty())
    return consolidate(o, comm);
  if (!o.calibrate.empty()) {
    if (comm.rank() == 0)
      checkWritable(o.calibrate, "--calibrate");
    // On a GPU (--device cuda) the kernel figures are its own; the CPU's otherwise.
    std::unique_ptr<Device> gpu;
    if (deviceKind(o) == "cuda")
      gpu = makeCudaDevice(localDeviceIndex(comm, cudaDeviceCount()), comm,
                           CudaOptions{o.allowTf32, false, o.cudnnAttention, o.generatedKernels, o.quiet});
    std::string json = calibrateMachine(comm, gpu.get(), o.calibrateSmall, o.nvmePath);
    if (comm.rank() == 0) {
      writeFileAtomically(o.calibrate, json);
      if (!o.quiet)
        std::printf("%s", json.c_str());
    }
    return 0;
  }
  checkOutputPaths(o, comm.rank());
  zero::zplan::Plan plan = loadPlanFile(o.plan);
  if (!launched)
    return runInProcess(o, plan);
  // Every rank finds a mismatch at once: they agree on it first, so that each says
  // why and exits (an MPI_Abort from the first could end the others before they do).
  bool mismatch = plan.world_size() != comm.size();
  if (comm.meanOf(mismatch ? 1.0 : 0.0) > 0) {
    std::ostringstream why;
    if (mismatch)
      why << o.plan << " was compiled for " << plan.world_size() << " ranks; this run has "
          << comm.size();
    else
      why << "another rank's plan was compiled for another number of ranks";
    throw AgreedError(why.str());
  }
  // Then everything else that must agree, before the ranks meet in anything that
  // one of them might not call (NCCL's set-up, a collective, a checkpoint).
  onnx::ModelProto model;
  if (!o.init.empty())
    model = readInitModel(o);
  std::string kind = deviceKind(o);
  if (comm.size() > 1)
    agreeAcrossRanks(comm, runAgreement(o, plan, model, kind));
  // Under mpirun each rank takes the GPU of its rank among the machine's.
  std::unique_ptr<Device> device;
  if (kind == "cpu")
    device = makeCpuDevice();
  else
    device = makeCudaDevice(localDeviceIndex(comm, cudaDeviceCount()), comm, CudaOptions{o.allowTf32, true, o.cudnnAttention, o.generatedKernels, o.quiet});
  return runRank(o, std::move(plan), *device, comm, &model);
}

