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

#include "zplan/KernelKind.h"
#include "zrt/AtomicFile.h"
#include "zrt/BlasCore.h"
#include "zrt/Calibrate.h"
#include "zrt/Checkpoint.h"
#include "zrt/CheckpointLayout.h"
#include "zrt/CheckpointReader.h"
#include "zrt/Communicator.h"
#include "zrt/Consolidate.h"
#include "zrt/Device.h"
#include "zrt/Error.h"
#include "zrt/Executor.h"
#include "zrt/Kernels.h"
#include "zrt/Launch.h"
#include "zrt/LossScaler.h"
#include "zrt/LrSchedule.h"
#include "zrt/NvmeFile.h"
#include "zrt/OnnxTensors.h"
#include "zrt/ParallelFor.h"
#include "zrt/PlanFile.h"
#include "zrt/ResidentMemory.h"
#include "zrt/RunAgreement.h"
#include "zrt/SaveWeights.h"
#include "zrt/TorchWeights.h"
#include "zrt/TokenData.h"
#include "zrt/Watchdog.h"

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

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const char *kUsage =
    "usage: zero-run PLAN.zplan --init MODEL.onnx [options]\n"
    "       zero-run --consolidate DIR -o OUT.safetensors|OUT.onnx\n"
    "                                           (a checkpoint's weights in one file)\n"
    "       zero-run --list-devices              (cpu, and cuda:N for each GPU)\n"
    "       zero-run --check-cuda-libraries      (loads the CUDA libraries opened at\n"
    "                                           run time, cuBLAS and cuDNN, and says\n"
    "                                           where)\n"
    "       zero-run --calibrate MACHINE.json   (measures this machine for\n"
    "                                           zero-opt --machine; under mpirun\n"
    "                                           the network too; --device cuda:\n"
    "                                           the GPU's kernels; --nvme-path DIR:\n"
    "                                           that disk, as NVMe offload uses it)\n"
    "\n"
    "Runs a plan compiled by zero-opt. A plan compiled for N ranks runs as N\n"
    "threads of this process (GPUs 0..N-1 with --device cuda, NCCL communicators\n"
    "from ncclCommInitAll), or one process per rank: under `mpirun -np N`, or\n"
    "started by torchrun, srun or a shell loop with RANK, WORLD_SIZE, LOCAL_RANK,\n"
    "MASTER_ADDR, MASTER_PORT (or SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and\n"
    "MASTER_ADDR, MASTER_PORT) set: those ranks meet through TCP at MASTER_ADDR.\n"
    "  --init MODEL.onnx      initial parameter values (the model's initializers,\n"
    "                         external data included, read from the model's folder)\n"
    "  --init W.safetensors   with --init MODEL.onnx: the parameters' values from a\n"
    "                         Hugging Face checkpoint instead, by PyTorch name\n"
    "  --nvme-path DIR        NVMe offload: the folder of each rank's NVMe file\n"
    "                         (zero-opt --offload-param=nvme, --offload-optimizer=nvme;\n"
    "                         made at the start with direct I/O, removed at the end)\n"
    "  --nvme-queue-depth N   NVMe offload: requests in flight, each through a 4 MiB\n"
    "                         staging buffer of its own (default 8; 1 to 1024)\n"
    "  --random-init SEED     with --init MODEL.onnx: generate the parameters instead\n"
    "                         (GPT-2's initialization; each rank only its shard, the\n"
    "                         same values on any number of ranks; the model's\n"
    "                         weights need not have been written)\n"
    "  --device cuda|cpu      where to run (default: cuda when this build has it and\n"
    "                         a GPU is present, else cpu)\n"
    "  --allow-tf32           fp32 GEMMs on the GPU may round their operands to TF32\n"
    "                         on the tensor cores (PyTorch's allow_tf32; off: fp32)\n"
    "  --no-cuda-graph        on the GPU, launch each kernel every step (default: the\n"
    "                         step is captured once as a CUDA graph and replayed)\n"
    "  --attention cudnn|own  bf16/fp16 fused attention on the GPU: cuDNN's fused\n"
    "                         kernels where it takes it (default), or zero-opt's own\n"
    "  --fused-kernels generated|interpreter\n"
    "                         on the GPU, each fused elementwise program as its own\n"
    "                         kernel, compiled by NVRTC when the plan is loaded and\n"
    "                         cached (default; ZERO_KERNEL_CACHE names the folder), or\n"
    "                         one interpreter kernel for every program\n"
    "Training (the plan reads tokens and targets [B, T] and returns the loss):\n"
    "  --data FILE            token file; global sample g of step s starts at\n"
    "                         ((s*G + g)*T) mod (L - T - 1), G = ranks * B; rank r\n"
    "                         takes samples r*B .. r*B + B - 1\n"
    "  --data-format FMT      u8 (default: any text file), u16 or u32\n"
    "  --steps K              number of steps (default 1)\n"
    "  --shuffle --seed S     random sample starts instead, reproducible from S\n"
    "  --log-json FILE        one JSON object per step: step, loss (mean over ranks),\n"
    "                         ms, tokens_per_s, peak_bytes (per rank: the plan's\n"
    "                         arena), measured_peak_bytes (per rank: the device's\n"
    "                         peak memory in use over what was in use before the\n"
    "                         arena; on the CPU the process's resident set, shared\n"
    "                         by thread ranks), comm_elements; an offloaded\n"
    "                         optimizer's plan adds host_bytes (rank 0's host\n"
    "                         arena) and copied_bytes (to_host, to_device: rank\n"
    "                         0's copies in the step, counted as they ran); NVMe\n"
    "                         offload adds nvme_bytes (read, written: rank 0's\n"
    "                         transfers in the step, counted as they ran) and\n"
    "                         nvme_busy_s (read, write: seconds with one in flight);\n"
    "                         mixed-precision plans add loss_scale (the scale the step\n"
    "                         used) and skipped (gradients overflowed: no update); a\n"
    "                         schedule adds lr, gradient clipping grad_norm (before\n"
    "                         clipping)\n"
    "  --print-every N        a terminal line every N steps (default 1; the JSON log\n"
    "                         still has every step)\n"
    "  --profile              at the end, time spent per kernel kind\n"
    "  --threads N            CPU threads of each rank process, for OpenBLAS and\n"
    "                         the CPU kernels alike (default: OpenBLAS's count,\n"
    "                         OPENBLAS_NUM_THREADS or one per core)\n"
    "  --trace FILE           Chrome trace-event JSON of every step (compute and\n"
    "                         communication tracks; ranks other than 0 write\n"
    "                         FILE.rankN; on a GPU the compute track is the GPU's\n"
    "                         timeline, from events); opens in Perfetto\n"
    "  --collective-timeout S  a rank that waits for the others longer than S seconds\n"
    "                         (a collective, the GPU's NCCL work) names the wait and\n"
    "                         stops the job (default 600; 0: never)\n"
    "  --rendezvous-timeout S  launched without mpirun (torchrun's or Slurm's\n"
    "                         variables), ranks meet at MASTER_ADDR:MASTER_PORT\n"
    "                         within S seconds or name who is missing (default 300)\n"
    "  --save-weights OUT     the model with its trained initializers, as ONNX, or\n"
    "                         (OUT.safetensors) the parameters by PyTorch name\n"
    "  --save-checkpoint DIR  sharded checkpoints DIR/step-S (one file per rank and a\n"
    "                         manifest), DIR/latest naming the newest; every\n"
    "  --checkpoint-every K   K steps (default: only at the end) and at the end,\n"
    "  --keep-checkpoints N   keeping the newest N (default: all)\n"
    "  --resume PATH          go on from a checkpoint (PATH/latest, or PATH itself)\n"
    "                         of the same model, written by any number of ranks at\n"
    "                         any ZeRO stage (bit-exact with the same plan): --steps\n"
    "                         stays the run's total, the data position carries over\n"
    "                         as a count of samples\n"
    "Consolidation (no plan, one process):\n"
    "  --consolidate DIR      the checkpoint DIR (or DIR/latest) as one file, -o\n"
    "  -o OUT                 OUT.safetensors (Hugging Face's layout, written tensor\n"
    "                         by tensor; with --init MODEL.onnx, the export, under\n"
    "                         PyTorch's names) or OUT.onnx (with --init MODEL.onnx:\n"
    "                         that model with the checkpoint's weights)\n"
    "  --with-optimizer-state the optimizer state too (safetensors: NAME.exp_avg,\n"
    "                         NAME.exp_avg_sq, NAME.momentum_buffer, optimizer.step)\n"
    "One run on given inputs:\n"
    "  --inputs DIR           graph inputs as DIR/input_K.pb (ONNX TensorProto)\n"
    "  --save-outputs DIR     writes graph outputs as DIR/output_K.pb\n"
    "  --quiet                prints nothing but errors\n";

/// A number for the JSON log: JSON has no inf or NaN (a skipped step's loss or
/// gradient norm may be either), so those are null. `digits` significant digits
/// (17: every bit of a double).
std::string jsonNumber(double v, int digits = 9) {
  if (!std::isfinite(v))
    return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

/// A rank and a step (--test-fail-rank R:S); rank -1: none.
struct RankAtStep {
  int64_t rank = -1, step = 0;
};

struct Options {
  std::string plan, init, initWeights, inputs, saveOutputs, data, dataFormat = "u8", logJson,
      saveWeights, trace, calibrate, device, saveCheckpoint, resume, consolidate, output;
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
  int nvmeQueueDepth = kDefaultNvmeQueueDepth; // --nvme-queue-depth N
};

int64_t parseInt(const std::string &flag, const std::string &v) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (...) {
    used = 0;
  }
  ZRT_CHECK(used == v.size() && !v.empty() && n >= 0,
            flag << " needs a non-negative integer, not '" << v << "'");
  return n;
}

RankAtStep parseRankAtStep(const std::string &flag, const std::string &v) {
  size_t colon = v.find(':');
  ZRT_CHECK(colon != std::string::npos, flag << " needs RANK:STEP, not '" << v << "'");
  return {parseInt(flag, v.substr(0, colon)), parseInt(flag, v.substr(colon + 1))};
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto is = [&](const std::string &flag) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    };
    auto value = [&](const std::string &flag) -> std::string {
      if (a.size() > flag.size())
        return a.substr(flag.size() + 1);
      ZRT_CHECK(i + 1 < argc, flag << " needs a value\n" << kUsage);
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--list-devices") {
      std::printf("cpu\n");
      for (int g = 0; g < cudaDeviceCount(); ++g)
        std::printf("cuda:%d\n", g);
      if (!cudaBackendBuilt())
        std::printf("(this zero-run was built without the CUDA backend)\n");
      std::exit(0);
    } else if (a == "--check-cuda-libraries") {
      std::printf("%s\n", loadCudaLibraries().c_str());
      std::exit(0);
    } else if (is("--init")) {
      // An ONNX model, and optionally a safetensors file of weights by PyTorch name.
      std::string path = value("--init");
      std::string &slot = endsWith(path, ".safetensors") ? o.initWeights : o.init;
      ZRT_CHECK(slot.empty(), "--init takes one ONNX model and at most one safetensors "
                              "file; '" << path << "' is a second one");
      slot = path;
    } else if (is("--nvme-path")) {
      o.nvmePath = value("--nvme-path");
    } else if (is("--nvme-queue-depth")) {
      int64_t n = parseInt("--nvme-queue-depth", value("--nvme-queue-depth"));
      ZRT_CHECK(n >= 1 && n <= 1024, "--nvme-queue-depth=" << n << ": must be 1 to 1024");
      o.nvmeQueueDepth = (int)n;
    } else if (is("--random-init")) {
      o.randomInit = (uint64_t)parseInt("--random-init", value("--random-init"));
    } else if (is("--inputs")) {
      o.inputs = value("--inputs");
    } else if (is("--save-outputs")) {
      o.saveOutputs = value("--save-outputs");
    } else if (is("--data-format")) {
      o.dataFormat = value("--data-format");
    } else if (is("--data")) {
      o.data = value("--data");
    } else if (is("--steps")) {
      o.steps = parseInt("--steps", value("--steps"));
    } else if (is("--print-every")) {
      o.printEvery = parseInt("--print-every", value("--print-every"));
      ZRT_CHECK(o.printEvery > 0, "--print-every needs a positive integer");
      o.printEveryGiven = true;
    } else if (is("--device")) {
      o.device = value("--device");
      ZRT_CHECK(o.device == "cuda" || o.device == "cpu",
                "--device=" << o.device << " is not one of cuda, cpu");
    } else if (is("--calibrate")) {
      o.calibrate = value("--calibrate");
    } else if (is("--trace")) {
      o.trace = value("--trace");
    } else if (a == "--test-calibrate-small") {
      o.calibrateSmall = true;
    } else if (is("--test-comm-delay-ns-per-byte")) {
      std::string v = value("--test-comm-delay-ns-per-byte");
      char *end = nullptr;
      o.commDelayNsPerByte = std::strtod(v.c_str(), &end);
      ZRT_CHECK(end && *end == 0 && o.commDelayNsPerByte >= 0,
                "--test-comm-delay-ns-per-byte needs a non-negative number, not '" << v
                                                                                   << "'");
    } else if (is("--collective-timeout")) {
      std::string v = value("--collective-timeout");
      char *end = nullptr;
      o.collectiveTimeoutS = std::strtod(v.c_str(), &end);
      ZRT_CHECK(!v.empty() && end && *end == 0 && o.collectiveTimeoutS >= 0,
                "--collective-timeout needs a non-negative number of seconds, not '"
                    << v << "'");
    } else if (is("--rendezvous-timeout")) {
      std::string v = value("--rendezvous-timeout");
      char *end = nullptr;
      o.rendezvousTimeoutS = std::strtod(v.c_str(), &end);
      ZRT_CHECK(!v.empty() && end && *end == 0 && o.rendezvousTimeoutS > 0,
                "--rendezvous-timeout needs a positive number of seconds, not '" << v << "'");
    } else if (is("--test-fail-rank")) {
      o.testFail = parseRankAtStep("--test-fail-rank", value("--test-fail-rank"));
    } else if (is("--test-overflow-rank")) {
      o.testOverflow =
          parseRankAtStep("--test-overflow-rank", value("--test-overflow-rank"));
    } else if (is("--test-nvme-cut-rank")) {
      o.testNvmeCut = parseRankAtStep("--test-nvme-cut-rank", value("--test-nvme-cut-rank"));
    } else if (is("--test-nvme-delete-rank")) {
      o.testNvmeDelete =
          parseRankAtStep("--test-nvme-delete-rank", value("--test-nvme-delete-rank"));
    } else if (is("--test-stall-rank")) {
      o.testStall = parseRankAtStep("--test-stall-rank", value("--test-stall-rank"));
    } else if (is("--seed")) {
      o.seed = parseInt("--seed", value("--seed"));
    } else if (is("--log-json")) {
      o.logJson = value("--log-json");
    } else if (is("--save-weights")) {
      o.saveWeights = value("--save-weights");
    } else if (is("--save-checkpoint")) {
      o.saveCheckpoint = value("--save-checkpoint");
    } else if (is("--checkpoint-every")) {
      o.checkpointEvery = parseInt("--checkpoint-every", value("--checkpoint-every"));
      ZRT_CHECK(o.checkpointEvery >= 0, "--checkpoint-every needs a count of steps");
    } else if (is("--keep-checkpoints")) {
      o.keepCheckpoints = parseInt("--keep-checkpoints", value("--keep-checkpoints"));
      ZRT_CHECK(o.keepCheckpoints >= 0, "--keep-checkpoints needs a count");
    } else if (is("--resume")) {
      o.resume = value("--resume");
    } else if (is("--consolidate")) {
      o.consolidate = value("--consolidate");
    } else if (is("-o") || is("--output")) {
      o.output = value(a.rfind("--", 0) == 0 ? "--output" : "-o");
    } else if (a == "--with-optimizer-state") {
      o.withOptimizerState = true;
    } else if (a == "--shuffle") {
      o.shuffle = true;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--allow-tf32") {
      o.allowTf32 = true;
    } else if (a == "--no-cuda-graph") {
      o.cudaGraph = false;
    } else if (is("--attention")) {
      std::string v = value("--attention");
      ZRT_CHECK(v == "cudnn" || v == "own",
                "--attention takes cudnn or own, not '" << v << "'");
      o.cudnnAttention = v == "cudnn";
    } else if (is("--fused-kernels")) {
      std::string v = value("--fused-kernels");
      ZRT_CHECK(v == "generated" || v == "interpreter",
                "--fused-kernels takes generated or interpreter, not '" << v << "'");
      o.generatedKernels = v == "generated";
    } else if (is("--threads")) {
      o.threads = parseInt("--threads", value("--threads"));
      ZRT_CHECK(o.threads >= 1, "--threads needs at least 1");
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      ZRT_FAIL("unknown option '" << a << "'\n" << kUsage);
    } else {
      ZRT_CHECK(o.plan.empty(), "more than one plan given ('" << o.plan << "', '" << a
                                                              << "')");
      o.plan = a;
    }
  }
  if (!o.consolidate.empty()) {
    ZRT_CHECK(o.plan.empty(), "--consolidate takes no plan ('" << o.plan << "')");
    ZRT_CHECK(!o.output.empty(), "--consolidate needs -o OUT.safetensors or OUT.onnx");
    return o;
  }
  ZRT_CHECK(o.output.empty(), "-o goes with --consolidate");
  ZRT_CHECK(!o.withOptimizerState, "--with-optimizer-state goes with --consolidate");
  ZRT_CHECK(!o.plan.empty() || !o.calibrate.empty(), "no plan given\n" << kUsage);
  ZRT_CHECK(o.data.empty() || o.inputs.empty(), "--data and --inputs exclude each other");
  return o;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// A short human summary of a tensor: all values when few, else the first ones.
void printTensor(const std::string &name, const TensorView &v) {
  std::printf("%s: %s =", name.c_str(), v.describe().c_str());
  int64_t n = v.numel(), shown = std::min<int64_t>(n, 8);
  for (int64_t i = 0; i < shown; ++i) {
    switch (v.dtype) {
    case zero::zplan::F32:
      std::printf(" %.7g", v.as<float>()[i]);
      break;
    case zero::zplan::F64:
      std::printf(" %.15g", v.as<double>()[i]);
      break;
    case zero::zplan::I64:
      std::printf(" %lld", (long long)v.as<int64_t>()[i]);
      break;
    case zero::zplan::I32:
      std::printf(" %d", v.as<int32_t>()[i]);
      break;
    case zero::zplan::I8:
      std::printf(" %d", v.as<int8_t>()[i]);
      break;
    default:
      std::printf(" %u", v.as<uint8_t>()[i]);
    }
  }
  std::printf("%s\n", n > shown ? " ..." : "");
}

double scalarOf(const TensorView &v) {
  ZRT_CHECK(v.numel() == 1 && (v.dtype == zero::zplan::F32 || v.dtype == zero::zplan::F64),
            "output 0 is " << v.describe() << ", not a scalar float loss");
  return v.dtype == zero::zplan::F32 ? v.as<float>()[0] : v.as<double>()[0];
}

/// The buffer of the `which`-th graph input that --constant-input left (whatever
/// its position in the file: a TorchScript export's attention mask, bound at
/// compile time, sits between input_ids and labels), checked to be a [B, T] i64
/// token tensor.
int tokenInput(const Executor &exec, int which, const char *what, int micro = 0) {
  std::vector<int> inputs = exec.inputIndices();
  ZRT_CHECK((int)inputs.size() > which,
            "--data needs two graph inputs (tokens and targets) besides those bound by "
            "--constant-input; the plan has "
                << inputs.size());
  int index = inputs[which];
  for (int i = 0; i < exec.plan().buffers_size(); ++i) {
    const auto &b = exec.plan().buffers(i);
    if (b.role() == zero::zplan::INPUT && b.index() == index && b.micro_step() == micro) {
      TensorView v = exec.buffer(i);
      ZRT_CHECK(v.dtype == zero::zplan::I64 && v.shape.size() == 2,
                "--data feeds graph input " << index << " ('" << b.name() << "', " << what
                                            << ") an i64 [B, T] tensor; the plan's is "
                                            << v.describe());
      return i;
    }
  }
  ZRT_FAIL("the plan has no micro-step " << micro << " buffer of graph input " << index);
}

/// A progress bar on the line below the step lines, redrawn in place.
void drawBar(int64_t done, int64_t total) {
  const int width = 30;
  int filled = total ? (int)(width * done / total) : width;
  std::printf("[%s%s] %lld/%lld", std::string(filled, '#').c_str(),
              std::string(width - filled, '.').c_str(), (long long)done,
              (long long)total);
  std::fflush(stdout);
}

/// The trace file of `rank`: FILE for rank 0, FILE.rankN for the others.
std::string traceFile(const std::string &path, int rank) {
  return rank == 0 ? path : path + ".rank" + std::to_string(rank);
}

/// Chrome trace-event JSON: one complete event per kernel (track 0, compute) and per
/// collective (track 1, communication); the process is the rank. Built in memory,
/// written whole.
void writeTrace(const std::string &path, int rank, const std::vector<TraceEvent> &events) {
  std::string json;
  char line[512];
  auto add = [&](int n) { json.append(line, std::min<size_t>(n, sizeof(line) - 1)); };
  add(std::snprintf(line, sizeof(line),
                    "{\"traceEvents\": [\n"
                    "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, "
                    "\"args\": {\"name\": \"compute\"}},\n"
                    "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 1, "
                    "\"args\": {\"name\": \"communication\"}}",
                    rank, rank));
  for (const TraceEvent &e : events)
    add(std::snprintf(line, sizeof(line),
                      ",\n{\"name\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, "
                      "\"ts\": %.3f, \"dur\": %.3f}",
                      e.name.c_str(), rank, e.track, e.beginUs, e.durationUs));
  json += "\n]}\n";
  writeFileAtomically(traceFile(path, rank), json);
}

/// Kernel kinds by total time, per step, with their share and how many kernels
/// of the kind one step runs.
void printProfile(const std::map<std::string, double> &msByKernel,
                  const std::vector<std::string> &kernelNames, int64_t steps) {
  std::map<std::string, int64_t> count;
  for (const std::string &name : kernelNames)
    ++count[name];
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto &[name, ms] : msByKernel) {
    rows.push_back({ms, name});
    total += ms;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::printf("time per step by kernel kind:\n");
  for (const auto &[ms, name] : rows)
    std::printf("  %-28s %9.3f ms  %5.1f%%  %6lld per step\n", name.c_str(),
                ms / std::max<int64_t>(steps, 1), total ? 100.0 * ms / total : 0.0,
                (long long)count[name]);
}

/// Stops every rank when any rank's parameters, master copies or optimizer state
/// hold inf or NaN, before anything is written from them: `subject` says what was
/// checked ("after the update of step 3"), `stop` what happens. Every rank takes
/// part and gives the same message, naming the first rank's tensor and element.
void checkFinite(Executor &exec, const std::string &subject, const std::string &stop) {
  Communicator &comm = exec.comm();
  Executor::NonFinite mine = exec.findNonFinite();
  std::vector<int64_t> buffers = comm.allGatherInts(mine.buffer);
  std::vector<int64_t> elements = comm.allGatherInts(mine.element);
  std::vector<int64_t> counts = comm.allGatherInts(mine.count);
  for (int r = 0; r < comm.size(); ++r) {
    if (buffers[r] < 0)
      continue;
    const auto &b = exec.plan().buffers((int)buffers[r]);
    std::string tensor;
    int64_t element = elements[r];
    for (const TensorPiece &p : tensorPieces(describeBuffer(b), r, comm.size()))
      if (elements[r] >= p.at && elements[r] < p.at + p.count) {
        tensor = p.tensor;
        element = p.first + elements[r] - p.at;
      }
    std::ostringstream why;
    why << subject << ": ";
    if (tensor.empty())
      why << "the padding of bucket '" << b.name() << "'";
    else
      why << (b.role() == zero::zplan::STATE    ? "optimizer state '"
              : b.role() == zero::zplan::MASTER ? "the f32 master copy of parameter '"
                                                : "parameter '")
          << tensor << "'";
    why << " is non-finite (element " << element << "; " << counts[r]
        << " non-finite values in rank " << r << "'s buffer '" << b.name() << "'); "
        << stop;
    throw AgreedError(why.str());
  }
}

int train(const Options &o, Executor &exec, const onnx::ModelProto *model,
          int64_t memoryBefore) {
  // Gradient accumulation: A micro-batches per step, each in its own input buffers.
  int64_t accum = std::max(1, exec.plan().grad_accum_steps());
  std::vector<int> tokenBuffers, targetBuffers;
  for (int m = 0; m < accum; ++m) {
    tokenBuffers.push_back(tokenInput(exec, 0, "tokens", m));
    targetBuffers.push_back(tokenInput(exec, 1, "targets", m));
  }
  TensorView tokens = exec.buffer(tokenBuffers[0]), targets = exec.buffer(targetBuffers[0]);
  std::vector<int64_t> hostTokens(tokens.numel()), hostTargets(targets.numel());
  ZRT_CHECK(tokens.shape == targets.shape,
            "tokens " << tokens.describe() << " and targets " << targets.describe()
                      << " differ in shape");
  int64_t batch = tokens.shape[0], seqLen = tokens.shape[1];
  // A Hugging Face causal LM (inputs input_ids and labels) shifts its labels
  // itself: it is fed the same window twice.
  bool labelsAreTokens = exec.plan().buffers(targetBuffers[0]).name() == "labels";
  Communicator &comm = exec.comm();
  int64_t ranks = comm.size(), globalBatch = accum * ranks * batch;
  bool root = comm.rank() == 0;
  TokenData data = TokenData::load(o.data, o.dataFormat);
  // The log is renamed into place when the run ends (a failed run's log too, up to
  // its last step); a failed write is an error and leaves the previous log whole.
  std::unique_ptr<AtomicFile> log;
  if (!o.logJson.empty() && root)
    log = std::make_unique<AtomicFile>(o.logJson);
  // What the runtime holds for the plan: the arena, allocated once (the compiler's
  // report predicts it as total_peak).
  std::vector<int64_t> peakBytes = comm.gatherInts(exec.plan().arena_bytes());
  bool quiet = o.quiet || !root;
  bool tty = !quiet && isatty(STDOUT_FILENO);
  if (!quiet)
    std::printf("training %lld steps on %s, %s: global batch %lld x %lld tokens, %lld "
                "tokens of data\n",
                (long long)o.steps, exec.device().name().c_str(), comm.name().c_str(),
                (long long)globalBatch,
                (long long)seqLen, (long long)data.size());
  if (!quiet && exec.device().name() == "cpu")
    std::printf("matrix products: OpenBLAS, its %s kernels\n", blasCoreName());
  if (!quiet && labelsAreTokens)
    std::printf("graph input 1 is 'labels': fed the tokens of input 0 (the model shifts "
                "them)\n");
  double totalMs = 0;
  std::map<std::string, double> msByKernel;
  // Mixed precision: the loss scale each step starts its gradients from, and the
  // plan's overflow count (summed over the ranks by the plan, so every rank skips
  // the same steps).
  LossScaler scaler = LossScaler::forPlan(exec.plan());
  int overflowOutput = -1;
  for (int i = 0; i < exec.numOutputs(); ++i)
    if (exec.outputName(i) == "overflow")
      overflowOutput = i;
  bool mixed = exec.hasRuntimeValue("loss_scale");
  // A learning-rate schedule: the optimizers read `lr`, set before each step from
  // the schedule's iteration, the number of steps that were not skipped.
  bool scheduled = exec.plan().has_lr_schedule();
  ZRT_CHECK(scheduled == exec.hasRuntimeValue("lr"),
            "the plan has a learning-rate schedule but no runtime lr, or the other way "
            "round");
  if (scheduled)
    checkLrSchedule(exec.plan().lr_schedule());
  int64_t scheduleIter = 0;
  int gradNormOutput = -1;
  for (int i = 0; i < exec.numOutputs(); ++i)
    if (exec.outputName(i) == "grad_norm")
      gradNormOutput = i;
  ZRT_CHECK(mixed == (overflowOutput >= 0),
            "the plan has a loss scale but no overflow output, or the other way round");
  ZRT_CHECK(o.testOverflow.rank < 0 || mixed,
            "--test-overflow-rank needs a mixed-precision plan");
  if (mixed && !quiet) {
    std::printf("mixed precision %s: f32 master weights; loss scale %s",
                exec.plan().precision().c_str(),
                scaler.dynamic() ? "dynamic, starting at " : "fixed at ");
    std::printf("%g\n", scaler.scale());
    if (exec.plan().precision() == "bf16" && exec.device().name() == "cpu")
      std::printf("bf16 matrix products: %s\n", bf16MatmulPath());
  }
  int64_t skippedSteps = 0;
  // Checkpoints: a resumed run goes on from the checkpoint's step, with its loss
  // scaler, schedule and data order.
  int64_t firstStep = 0, samples = 0; // samples: global samples consumed
  if (o.resume.empty()) {
    checkFinite(exec, "the initial weights (--init " + o.init + ")",
                "stopping before training");
  } else {
    std::string summary;
    TrainerState st = loadCheckpoint(exec, o.resume, &summary);
    ZRT_CHECK(st.shuffle == o.shuffle && (!o.shuffle || st.seed == o.seed),
              "the checkpoint's data order is "
                  << (st.shuffle ? "--shuffle --seed " + std::to_string(st.seed)
                                 : std::string("unshuffled"))
                  << "; give the same to resume");
    ZRT_CHECK(st.step <= o.steps, "the checkpoint is at step " << st.step
                                                               << ", past --steps "
                                                               << o.steps);
    scaler.restore(st.scaler, o.resume);
    checkFinite(exec, "the checkpoint " + o.resume, "stopping before training");
    scheduleIter = st.scheduleIteration;
    firstStep = st.step;
    samples = st.samples;
    if (!quiet)
      std::printf("resumed from %s at step %lld, sample %lld (%s)\n", o.resume.c_str(),
                  (long long)firstStep, (long long)samples, summary.c_str());
  }
  // Folders the run will save into hold nothing a checkpoint would overwrite.
  if (!o.saveCheckpoint.empty() && root)
    checkCheckpointTargets(exec.plan(), o.saveCheckpoint, firstStep, o.steps,
                           o.checkpointEvery);
  auto checkpoint = [&](int64_t stepsDone) {
    TrainerState st;
    st.step = stepsDone;
    st.samples = samples;
    st.shuffle = o.shuffle;
    st.seed = o.seed;
    st.scaler = scaler.state();
    st.scheduleIteration = scheduleIter;
    saveCheckpoint(exec, o.saveCheckpoint, st, (int)o.keepCheckpoints);
  };
  int64_t lastCheckpoint = -1;
  // Settings the plan carries (a DeepSpeed config's steps_per_print and
  // wall_clock_breakdown); zero-run's own flags win.
  int64_t printEvery =
      !o.printEveryGiven && exec.plan().print_every() > 0 ? exec.plan().print_every()
                                                          : o.printEvery;
  bool profile = o.profile || exec.plan().profile();
  try {
    for (int64_t step = firstStep; step < o.steps; ++step) {
      if (o.testFail.rank == comm.rank() && o.testFail.step == step + 1)
        ZRT_FAIL("rank " << comm.rank() << " fails before step " << step + 1
                         << " (--test-fail-rank)");
      while (o.testStall.rank == comm.rank() && o.testStall.step == step + 1)
        std::this_thread::sleep_for(std::chrono::seconds(1)); // a hung rank
      // A damaged NVMe file (cut, or deleted) between steps.
      if (o.testNvmeCut.rank == comm.rank() && o.testNvmeCut.step == step + 1)
        ZRT_CHECK(::truncate(exec.nvmeFilePath().c_str(), 4096) == 0,
                  "--test-nvme-cut-rank: " << std::strerror(errno));
      if (o.testNvmeDelete.rank == comm.rank() && o.testNvmeDelete.step == step + 1)
        ZRT_CHECK(::unlink(exec.nvmeFilePath().c_str()) == 0,
                  "--test-nvme-delete-rank: " << std::strerror(errno));
      // Micro-batch m of rank r: samples (m N + r) B .. (m N + r) B + B - 1 of the
      // global batch (A = 1: r B .., as before), which starts at global sample
      // `samples` (step * G, unless a checkpoint of another G was resumed).
      for (int64_t m = 0; m < accum; ++m) {
        data.fillBatch(samples + (m * ranks + comm.rank()) * batch, batch, seqLen,
                       o.shuffle, o.seed, hostTokens.data(), hostTargets.data());
        if (labelsAreTokens)
          hostTargets = hostTokens;
        exec.write(tokenBuffers[m], hostTokens.data(), hostTokens.size() * sizeof(int64_t));
        exec.write(targetBuffers[m], hostTargets.data(),
                   hostTargets.size() * sizeof(int64_t));
      }
      int64_t ag = comm.allGatherElements, rs = comm.reduceScatterElements,
              ar = comm.allReduceElements;
      int64_t toHost = exec.copiedToHostBytes(), toDevice = exec.copiedToDeviceBytes();
      exec.takeNvmeTraffic(); // what loading and checkpoints moved is not the step's
      double scaleUsed = scaler.scale();
      bool forceOverflow =
          o.testOverflow.rank == comm.rank() && o.testOverflow.step == step + 1;
      if (mixed)
        exec.setRuntimeValue("loss_scale", forceOverflow ? INFINITY : scaleUsed);
      double lrUsed = 0;
      if (scheduled) {
        lrUsed = lrAfterAppliedSteps(exec.plan().lr_schedule(), scheduleIter);
        exec.setRuntimeValue("lr", lrUsed);
      }
      auto start = std::chrono::steady_clock::now();
      if (profile)
        exec.runProfiled(msByKernel);
      else
        exec.run();
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      totalMs += ms;
      samples += globalBatch;
      ag = comm.allGatherElements - ag;
      rs = comm.reduceScatterElements - rs;
      ar = comm.allReduceElements - ar;
      // Each rank's loss is the mean over its micro-batch; the global batch's loss
      // is their mean.
      double loss = comm.meanOf(scalarOf(exec.readOutput(0).view()));
      bool skipped = mixed && scalarOf(exec.readOutput(overflowOutput).view()) != 0.0;
      skippedSteps += skipped;
      scheduleIter += !skipped; // DeepSpeed's scheduler steps only with the optimizer
      double gradNorm =
          gradNormOutput >= 0 ? scalarOf(exec.readOutput(gradNormOutput).view()) : 0.0;
      double tps = globalBatch * seqLen / (ms / 1000.0);
      bool print = (step + 1) % printEvery == 0 || step == 0 || step + 1 == o.steps;
      if (tty)
        std::printf("\r\033[K");
      if (!quiet && (print || skipped)) {
        std::printf("step %lld/%lld  loss %.6f  %.2f ms/step  %.0f tokens/s",
                    (long long)step + 1, (long long)o.steps, loss, ms, tps);
        if (skipped)
          std::printf("  skipped: gradients overflow at loss scale %g", scaleUsed);
        std::printf("\n");
      }
      if (tty && step + 1 < o.steps)
        drawBar(step + 1, o.steps);
      // Measured, not the plan's figure: the device's peak memory in use over what
      // was in use before the plan's arena (every rank takes part in the gather).
      std::vector<int64_t> measured;
      if (!o.logJson.empty())
        measured = comm.gatherInts(exec.device().peakMemoryInUse() - memoryBefore);
      if (log) {
        std::string peaks, measuredList;
        for (size_t r = 0; r < measured.size(); ++r)
          measuredList += (r ? ", " : "") + std::to_string(measured[r]);
        for (size_t r = 0; r < peakBytes.size(); ++r)
          peaks += (r ? ", " : "") + std::to_string(peakBytes[r]);
        log->printf("{\"step\": %lld, \"loss\": %s, \"ms\": %.4f, \"tokens_per_s\": "
                    "%.1f, \"peak_bytes\": [%s], \"gathered_peak_bytes\": %lld, "
                    "\"measured_peak_bytes\": [%s], "
                    "\"comm_elements\": {\"all_gather\": %lld, \"reduce_scatter\": %lld, "
                    "\"all_reduce\": %lld, \"volume\": %lld}",
                    (long long)step + 1, jsonNumber(loss).c_str(), ms, tps, peaks.c_str(),
                    (long long)exec.gatheredPeakBytes(), measuredList.c_str(), (long long)ag,
                    (long long)rs, (long long)ar, (long long)(ag + rs + 2 * ar));
        if (exec.plan().host_arena_bytes() > 0)
          log->printf(", \"host_bytes\": %lld, \"copied_bytes\": {\"to_host\": %lld, "
                      "\"to_device\": %lld}",
                      (long long)exec.plan().host_arena_bytes(),
                      (long long)(exec.copiedToHostBytes() - toHost),
                      (long long)(exec.copiedToDeviceBytes() - toDevice));
        if (exec.plan().nvme_arena_bytes() > 0) {
          NvmeTraffic t = exec.takeNvmeTraffic();
          log->printf(", \"nvme_bytes\": {\"read\": %lld, \"written\": %lld}, "
                      "\"nvme_busy_s\": {\"read\": %.6f, \"write\": %.6f}",
                      (long long)t.read, (long long)t.written, t.readS, t.writeS);
        }
        if (mixed)
          log->printf(", \"loss_scale\": %s, \"skipped\": %s",
                      jsonNumber(scaleUsed, 17).c_str(), skipped ? "true" : "false");
        if (scheduled)
          log->printf(", \"lr\": %s", jsonNumber(lrUsed, 17).c_str());
        if (gradNormOutput >= 0)
          log->printf(", \"grad_norm\": %s", jsonNumber(gradNorm).c_str());
        log->printf("}\n");
      }
      // A skipped step's loss may be inf (fp16 logits overflowed): the scale goes
      // down and training goes on, as in DeepSpeed.
      ZRT_CHECK(skipped || std::isfinite(loss),
                "the loss is " << loss << " at step " << step + 1 << "; stopping");
      if (mixed)
        scaler.update(skipped);
      // The update is checked before anything can be written from it: a
      // non-finite weight never reaches a checkpoint or a saved model.
      checkFinite(exec, "after the update of step " + std::to_string(step + 1),
                  "stopping: nothing from this step is saved");
      if (!o.saveCheckpoint.empty() && o.checkpointEvery > 0 &&
          (step + 1) % o.checkpointEvery == 0) {
        checkpoint(step + 1);
        lastCheckpoint = step + 1;
      }
    }
  } catch (const Error &) {
    // Training stopped (a bad token, a NaN loss): keep the log of the steps that
    // ran, for the post-mortem. A log that cannot be written stays the error.
    if (log) {
      try {
        log->commit();
      } catch (const Error &) {
      }
    }
    throw;
  }
  if (log)
    log->commit();
  if (!o.saveCheckpoint.empty() && lastCheckpoint != o.steps)
    checkpoint(o.steps);
  int64_t ran = o.steps - firstStep; // a resumed run ran only the rest
  if (!quiet && ran)
    std::printf("%lld steps, %.2f ms/step on average\n", (long long)ran, totalMs / ran);
  if (!quiet && skippedSteps)
    std::printf("%lld of %lld steps skipped (gradient overflow)\n",
                (long long)skippedSteps, (long long)ran);
  if (profile && root && ran)
    printProfile(msByKernel, exec.kernelNames(), ran);
  if (!o.trace.empty())
    writeTrace(o.trace, comm.rank(), exec.takeTrace());
  if (!o.saveWeights.empty()) {
    if (endsWith(o.saveWeights, ".safetensors"))
      saveSafetensorsByName(*model, exec, o.saveWeights);
    else
      saveWeights(*model, dirOf(o.init), exec, o.saveWeights);
    if (!quiet)
      std::printf("wrote the trained model to %s\n", o.saveWeights.c_str());
  }
  return 0;
}

int runOnce(const Options &o, Executor &exec) {
  std::vector<int> inputs = exec.inputIndices();
  ZRT_CHECK(inputs.empty() || !o.inputs.empty(),
            "the plan reads " << inputs.size()
                              << " graph inputs; give them with --inputs DIR, or "
                                 "train with --data FILE");
  for (int i : inputs)
    exec.setInput(i, readTensorFile(o.inputs + "/input_" + std::to_string(i) + ".pb"));
  auto start = std::chrono::steady_clock::now();
  exec.run();
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!o.quiet) {
    for (int i = 0; i < exec.numOutputs(); ++i)
      printTensor(exec.outputName(i).empty() ? "output_" + std::to_string(i)
                                             : exec.outputName(i),
                  exec.readOutput(i).view());
    std::printf("ran %d kernels in %.2f ms\n", exec.plan().kernels_size(), ms);
  }
  if (!o.saveOutputs.empty()) {
    for (int i = 0; i < exec.numOutputs(); ++i) {
      std::string path = o.saveOutputs + "/output_" + std::to_string(i) + ".pb";
      std::string bytes;
      ZRT_CHECK(tensorFromView(exec.readOutput(i).view(), exec.outputName(i))
                    .SerializeToString(&bytes),
                "cannot serialize output " << i << " for '" << path << "'");
      writeFileAtomically(path, bytes);
    }
  }
  return 0;
}

/// --device, or CUDA when this build has it and a GPU is present.
std::string deviceKind(const Options &o) {
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

/// The --init model, with the values of --init W.safetensors (by PyTorch name) in
/// place of its own.
onnx::ModelProto readInitModel(const Options &o, bool announce) {
  onnx::ModelProto model = readModelAsCompiled(o.init);
  if (o.initWeights.empty())
    return model;
  int64_t unused = 0;
  int64_t replaced = loadSafetensorsByName(model, o.initWeights, unused);
  if (announce && !o.quiet)
    std::printf("%s: %lld initializers of %s by PyTorch name%s\n", o.initWeights.c_str(),
                (long long)replaced, o.init.c_str(),
                unused ? (", " + std::to_string(unused) + " of its tensors unused").c_str()
                       : "");
  return model;
}

/// One rank's run of the plan on its device.
int runRank(const Options &o, zero::zplan::Plan plan, Device &device, Communicator &comm,
            onnx::ModelProto *preloaded = nullptr) {
  // The model first, then the memory in use: what the run adds to it is its
  // measured memory (the arena and whatever else the run allocates). `preloaded`
  // is --init when the caller has read it already.
  onnx::ModelProto model;
  if (preloaded)
    model = std::move(*preloaded);
  else if (!o.init.empty())
    model = readInitModel(o, comm.rank() == 0);
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
  ZRT_CHECK(o.initWeights.empty() || !o.init.empty(),
            "--init " << o.initWeights << " needs --init MODEL.onnx too: the exported "
                         "model holds the constants, and says which initializer holds "
                         "which parameter");
  ZRT_CHECK(!o.randomInit || !o.init.empty(),
            "--random-init needs --init MODEL.onnx too: the model holds the constants "
            "and the parameters' names and shapes");
  ZRT_CHECK(!o.randomInit || o.initWeights.empty(),
            "--random-init and --init " << o.initWeights << " both give the parameters' "
                                            "values; choose one");
  ZRT_CHECK(!needsParams || !o.init.empty(),
            "the plan has parameters; give their values with --init MODEL.onnx");
  ZRT_CHECK(o.saveWeights.empty() || !o.init.empty(), "--save-weights needs --init");
  if (!o.init.empty())
    exec.loadParameters(model, dirOf(o.init), o.randomInit);
  if (!o.data.empty())
    return train(o, exec, &model, memoryBefore);
  ZRT_CHECK(comm.size() == 1, "running once on --inputs takes one rank");
  ZRT_CHECK(o.saveWeights.empty(), "--save-weights goes with --data (training)");
  return runOnce(o, exec);
}

/// No launcher: the plan's ranks are threads of this process, one device each
/// (GPUs 0 .. N-1, their NCCL communicators from one ncclCommInitAll, or the CPU).
/// The first rank to fail stops the others; its error is the one reported.
int runInProcess(const Options &o, const zero::zplan::Plan &plan) {
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
void checkOutputPaths(const Options &o, int rank) {
  if (rank == 0) {
    if (!o.logJson.empty())
      checkWritable(o.logJson, "--log-json");
    if (!o.saveWeights.empty())
      checkWritable(o.saveWeights, "--save-weights");
    if (!o.trace.empty())
      checkWritable(o.trace, "--trace");
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
std::vector<AgreedValue> runAgreement(const Options &o, const zero::zplan::Plan &plan,
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
                                   initializerFingerprint(model, dirOf(o.init),
                                                          !o.randomInit));
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
int consolidate(const Options &o, Communicator &comm) {
  ZRT_CHECK(comm.size() == 1, "--consolidate runs as one process, not under mpirun -np "
                                  << comm.size());
  auto endsWith = [&](const char *ext) {
    std::string e = ext;
    return o.output.size() > e.size() &&
           o.output.compare(o.output.size() - e.size(), e.size(), e) == 0;
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

int run(const Options &o, Communicator &comm, bool launched) {
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
    model = readInitModel(o, comm.rank() == 0);
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

} // namespace

int main(int argc, char **argv) {
  // Before MPI or any thread starts: it may run this program again.
  useKnownBlasCore(argv);
  // A file past the size limit (ulimit -f) is a write that fails with EFBIG, which
  // the writer reports naming the file, not a signal that kills the process and
  // leaves its files behind.
  std::signal(SIGXFSZ, SIG_IGN);
  std::unique_ptr<Communicator> comm;
  int rc = 1, launchRank = -1; // launchRank: before the rendezvous completes
  try {
    comm = makeMpiCommunicatorIfLaunched(&argc, &argv);
    bool launched = comm != nullptr;
    if (!launched)
      comm = makeLocalCommunicator();
    Options o = parseArgs(argc, argv);
    // Not under mpirun: torchrun's or Slurm's variables say the rank, and the
    // ranks meet through a TCP rendezvous.
    if (!launched)
      if (std::optional<LaunchVariables> v = readLaunchVariables(std::getenv))
        if (v->worldSize > 1) {
          launchRank = v->rank;
          comm = makeTcpCommunicator(*v, o.rendezvousTimeoutS);
          launched = true;
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
    rc = run(o, *comm, launched);
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
