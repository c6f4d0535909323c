//===- RunOptions.cpp - zero-run's command line ---------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/RunOptions.h"
#include "zrt/Error.h"
#include "zrt/Launch.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sys/stat.h>

using namespace zrt;

namespace {

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
    "  --init CHECKPOINT      with --init MODEL.onnx: the parameters' values from a\n"
    "                         Hugging Face checkpoint instead, by PyTorch name: a\n"
    "                         save_pretrained folder, its model.safetensors.index.json\n"
    "                         or its safetensors files (bf16, f16 or f32; each rank\n"
    "                         reads its slices only)\n"
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
    "  --ranks-as threads|processes\n"
    "                         without a launcher, a plan's ranks run as threads of\n"
    "                         this process, or as processes of this machine that\n"
    "                         zero-run starts as torchrun would (default: processes\n"
    "                         on GPUs, one per GPU, as NCCL advises for collectives\n"
    "                         in CUDA graphs; threads otherwise)\n"
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
    "                         stops the job (default 600; 0 or inf: never)\n"
    "  --rendezvous-timeout S  launched without mpirun (torchrun's or Slurm's\n"
    "                         variables), ranks meet at MASTER_ADDR:MASTER_PORT\n"
    "                         within S seconds or name who is missing (default 300;\n"
    "                         inf: no limit)\n"
    "  --save-weights OUT     the model with its trained initializers, as ONNX, or\n"
    "                         (OUT.safetensors) the parameters by PyTorch name\n"
    "  --eval-data FILE       held-out tokens (--data-format): the mean loss and\n"
    "                         perplexity over --eval-batches K global batches (default\n"
    "                         8), from the step's forward part, after every\n"
    "  --eval-every N         N steps (default: at the end only)\n"
    "  --save-pretrained DIR  the trained model as save_pretrained writes it, for\n"
    "                         from_pretrained: the --init checkpoint's config.json,\n"
    "                         safetensors shards and their index, each rank writing\n"
    "                         the slices it owns (the ranks must share DIR)\n"
    "  --save-dtype T         its dtype: bf16, fp16 or fp32 (default: the checkpoint's)\n"
    "  --save-shard-mb N      its shards' size (default 5000)\n"
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

/// A timeout in seconds: a positive number up to kLongestTimeoutS, or "inf" for no
/// limit (and 0, where `zeroAllowed`, meaning the same); NaN, negatives, 1e400 and
/// anything past the longest are errors (a deadline that far overflowed the clock,
/// and the wait failed at once).
double parseSeconds(const std::string &flag, const std::string &v, bool zeroAllowed) {
  std::string lower;
  for (char c : v)
    lower += (char)std::tolower((unsigned char)c);
  if (lower == "inf" || lower == "infinity")
    return std::numeric_limits<double>::infinity();
  char *end = nullptr;
  errno = 0;
  double s = std::strtod(v.c_str(), &end);
  // Decimal only: strtod also reads hex ("0x10") and nan, which isfinite catches.
  bool number = !v.empty() && end && *end == 0 && std::isfinite(s) &&
                v.find_first_not_of("0123456789.eE+-") == std::string::npos;
  ZRT_CHECK(number && (s > 0 || (zeroAllowed && s == 0)),
            flag << " needs a " << (zeroAllowed ? "non-negative" : "positive")
                 << " number of seconds, or inf for no limit, not '" << v << "'");
  ZRT_CHECK(s <= kLongestTimeoutS,
            flag << "=" << v << " is more than " << kLongestTimeoutS
                 << " s (about 31 years); give inf for no limit");
  return s;
}

RankAtStep parseRankAtStep(const std::string &flag, const std::string &v) {
  size_t colon = v.find(':');
  ZRT_CHECK(colon != std::string::npos, flag << " needs RANK:STEP, not '" << v << "'");
  return {parseInt(flag, v.substr(0, colon)), parseInt(flag, v.substr(colon + 1))};
}

} // namespace

RunOptions zrt::parseRunOptions(int argc, char **argv) {
  RunOptions o;
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
      o.action = RunOptions::Action::Help;
      return o;
    } else if (a == "--list-devices") {
      o.action = RunOptions::Action::ListDevices;
      return o;
    } else if (a == "--check-cuda-libraries") {
      o.action = RunOptions::Action::CheckCudaLibraries;
      return o;
    } else if (is("--init")) {
      // An ONNX model, and optionally the checkpoint of its weights by PyTorch
      // name: a save_pretrained folder, its index, or safetensors files.
      std::string path = value("--init");
      struct stat st;
      bool folder = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      if (folder || pathEndsWith(path, ".safetensors") || pathEndsWith(path, ".json")) {
        o.initCheckpoint.push_back(path);
      } else {
        ZRT_CHECK(o.init.empty(), "--init takes one ONNX model; '" << path
                                                                   << "' is a second one");
        o.init = path;
      }
    } else if (is("--nvme-path")) {
      o.nvmePath = value("--nvme-path");
      ZRT_CHECK(!o.nvmePath.empty(), "--nvme-path needs a folder (on the NVMe drive), not an "
                                     "empty string");
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
      // 0 and inf: never.
      o.collectiveTimeoutS = parseSeconds("--collective-timeout", value("--collective-timeout"),
                                          /*zeroAllowed=*/true);
    } else if (is("--rendezvous-timeout")) {
      o.rendezvousTimeoutS = parseSeconds("--rendezvous-timeout", value("--rendezvous-timeout"),
                                          /*zeroAllowed=*/false);
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
    } else if (is("--eval-data")) {
      o.evalData = value("--eval-data");
    } else if (is("--eval-every")) {
      o.evalEvery = parseInt("--eval-every", value("--eval-every"));
      ZRT_CHECK(o.evalEvery >= 0, "--eval-every needs a count of steps (0: at the end)");
    } else if (is("--eval-batches")) {
      o.evalBatches = parseInt("--eval-batches", value("--eval-batches"));
      ZRT_CHECK(o.evalBatches >= 1, "--eval-batches needs a count of at least 1");
    } else if (is("--save-pretrained")) {
      o.savePretrained = value("--save-pretrained");
      ZRT_CHECK(!o.savePretrained.empty(), "--save-pretrained needs a folder");
    } else if (is("--save-dtype")) {
      o.saveDtype = value("--save-dtype");
      ZRT_CHECK(o.saveDtype == "bf16" || o.saveDtype == "fp16" || o.saveDtype == "fp32",
                "--save-dtype=" << o.saveDtype << ": bf16, fp16 or fp32");
    } else if (is("--save-shard-mb")) {
      std::string v = value("--save-shard-mb");
      char *end = nullptr;
      double mb = std::strtod(v.c_str(), &end);
      ZRT_CHECK(!v.empty() && end && *end == 0 && std::isfinite(mb) && mb >= 0.001 && mb <= 1e9,
                "--save-shard-mb=" << v << ": a size in MB, 0.001 to 1e9");
      o.saveShardBytes = (int64_t)(mb * 1e6);
      o.saveShardGiven = true;
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
    } else if (is("--ranks-as")) {
      std::string v = value("--ranks-as");
      ZRT_CHECK(v == "threads" || v == "processes",
                "--ranks-as takes threads or processes, not '" << v << "'");
      o.ranksAs = v;
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

const char *zrt::runUsage() { return kUsage; }

std::string zrt::folderOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool zrt::pathEndsWith(const std::string &path, const std::string &suffix) {
  return path.size() >= suffix.size() &&
         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}
