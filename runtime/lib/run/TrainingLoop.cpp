//===- TrainingLoop.cpp - zero-run's training steps -----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/TrainingLoop.h"
#include "zrt/AtomicFile.h"
#include "zrt/BlasCore.h"
#include "zrt/Checkpoint.h"
#include "zrt/CheckpointLayout.h"
#include "zrt/Communicator.h"
#include "zrt/Device.h"
#include "zrt/Error.h"
#include "zrt/Executor.h"
#include "zrt/Kernels.h"
#include "zrt/Launch.h"
#include "zrt/LossScaler.h"
#include "zrt/LrSchedule.h"
#include "zrt/NvmeFile.h"
#include "zrt/OnnxTensors.h"
#include "zrt/ResidentMemory.h"
#include "zrt/SaveWeights.h"
#include "zrt/PretrainedWeights.h"
#include "zrt/SavePretrained.h"
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
#include <optional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

using namespace zrt;

namespace {

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

} // namespace

/// The trace file of `rank`: FILE for rank 0, FILE.rankN for the others.
std::string zrt::traceFile(const std::string &path, int rank) {
  return rank == 0 ? path : path + ".rank" + std::to_string(rank);
}

int zrt::runTraining(const RunOptions &o, Executor &exec, const onnx::ModelProto *model,
                     const PretrainedWeights *pretrained, int64_t memoryBefore) {
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
  QuantizationError quantized; // this rank's, over the run (qwZ, qgZ)
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
    if (!quiet) {
      std::printf("resuming from %s ...\n", o.resume.c_str());
      std::fflush(stdout);
    }
    auto resumeStart = std::chrono::steady_clock::now();
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
      std::printf("resumed from %s at step %lld, sample %lld (%s), in %.1f s\n",
                  o.resume.c_str(), (long long)firstStep, (long long)samples, summary.c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - resumeStart)
                      .count());
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
    auto start = std::chrono::steady_clock::now();
    if (tty)
      std::printf("\r\033[K");
    // Whole lines: an error on stderr after a line left open would join it.
    if (!quiet) {
      std::printf("writing the checkpoint of step %lld to %s\n", (long long)stepsDone,
                  o.saveCheckpoint.c_str());
      std::fflush(stdout);
    }
    saveCheckpoint(exec, o.saveCheckpoint, st, (int)o.keepCheckpoints);
    if (!quiet)
      std::printf("wrote the checkpoint of step %lld in %.1f s\n", (long long)stepsDone,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                      .count());
  };
  // Evaluation (--eval-data): the mean loss over K held-out global batches, each
  // rank its B samples of each (docs/Design.md's order, unshuffled, from the
  // file's start), from the step's forward part (Executor::runForward).
  std::optional<TokenData> evalSet;
  if (!o.evalData.empty()) {
    ZRT_CHECK(exec.device().name() == "cpu",
              "--eval-data runs on the CPU backend only so far (the GPU's step is one "
              "captured graph)");
    evalSet = TokenData::load(o.evalData, o.dataFormat);
    ZRT_CHECK(accum == 1, "--eval-data is not supported with gradient accumulation yet");
    if (!quiet && evalSet->size() < o.evalBatches * ranks * batch * seqLen + 1)
      std::printf("note: %s holds %lld tokens, fewer than %lld evaluation batches of %lld "
                  "x %lld: samples repeat\n",
                  o.evalData.c_str(), (long long)evalSet->size(), (long long)o.evalBatches,
                  (long long)(ranks * batch), (long long)seqLen);
  }
  auto evaluate = [&](int64_t stepsDone) {
    auto start = std::chrono::steady_clock::now();
    double sum = 0;
    for (int64_t k = 0; k < o.evalBatches; ++k) {
      evalSet->fillBatch((k * ranks + comm.rank()) * batch, batch, seqLen, false, 0,
                         hostTokens.data(), hostTargets.data());
      if (labelsAreTokens)
        hostTargets = hostTokens;
      exec.write(tokenBuffers[0], hostTokens.data(), hostTokens.size() * sizeof(int64_t));
      exec.write(targetBuffers[0], hostTargets.data(), hostTargets.size() * sizeof(int64_t));
      exec.runForward();
      sum += comm.meanOf(scalarOf(exec.readOutput(0).view()));
    }
    double loss = sum / o.evalBatches;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          start)
                    .count();
    if (tty)
      std::printf("\r\033[K");
    if (!quiet)
      std::printf("eval after step %lld: loss %.6f  perplexity %.4f  (%lld batches of "
                  "%lld x %lld tokens, %.0f ms)\n",
                  (long long)stepsDone, loss, std::exp(loss), (long long)o.evalBatches,
                  (long long)(ranks * batch), (long long)seqLen, ms);
    if (log)
      log->printf("{\"step\": %lld, \"eval_loss\": %s, \"eval_perplexity\": %s, "
                  "\"eval_batches\": %lld}\n",
                  (long long)stepsDone, jsonNumber(loss).c_str(),
                  jsonNumber(std::exp(loss)).c_str(), (long long)o.evalBatches);
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
      comm.quantization = {};
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
      QuantizationError stepQuantized = comm.quantization;
      quantized.add(stepQuantized);
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
        if (stepQuantized.fullBytes) {
          log->printf(", \"quantized\": {\"wire_bytes\": %lld, \"full_bytes\": %lld",
                      (long long)stepQuantized.wireBytes, (long long)stepQuantized.fullBytes);
          if (stepQuantized.values) // measured on the host only
            log->printf(", \"relative_error\": %s, \"worst_block_error\": %s",
                        jsonNumber(stepQuantized.relative()).c_str(),
                        jsonNumber(stepQuantized.worstBlock).c_str());
          log->printf("}");
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
      if (evalSet && ((o.evalEvery > 0 && (step + 1) % o.evalEvery == 0) ||
                      step + 1 == o.steps))
        evaluate(step + 1);
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
  if (!quiet && quantized.fullBytes) {
    std::printf("quantized collectives (rank %d): sent %.3f MB instead of %.3f MB (x%.3f)",
                comm.rank(), quantized.wireBytes / 1e6, quantized.fullBytes / 1e6,
                (double)quantized.wireBytes / quantized.fullBytes);
    if (quantized.values) // measured on the host; a GPU's kernels do not report it
      std::printf("; relative error %.3f%%, worst block %.3f%% of its largest value (bound "
                  "%.3f%%)",
                  100 * quantized.relative(), 100 * quantized.worstBlock,
                  100 * kQuantizationErrorBound);
    std::printf("\n");
  }
  if (!quiet && skippedSteps)
    std::printf("%lld of %lld steps skipped (gradient overflow)\n",
                (long long)skippedSteps, (long long)ran);
  if (profile && root && ran)
    printProfile(msByKernel, exec.kernelNames(), ran);
  if (!o.trace.empty())
    writeTrace(o.trace, comm.rank(), exec.takeTrace());
  if (!o.saveWeights.empty()) {
    if (pathEndsWith(o.saveWeights, ".safetensors"))
      saveSafetensorsByName(*model, exec, o.saveWeights);
    else
      saveWeights(*model, folderOf(o.init), exec, o.saveWeights);
    if (!quiet)
      std::printf("wrote the trained model to %s\n", o.saveWeights.c_str());
  }
  if (!o.savePretrained.empty()) {
    SavePretrainedOptions so;
    so.dir = o.savePretrained;
    so.configFolder = pretrained->folder();
    so.dtype = o.saveDtype.empty()   ? pretrained->dtype()
               : o.saveDtype == "bf16" ? zero::zplan::BF16
               : o.saveDtype == "fp16" ? zero::zplan::F16
                                       : zero::zplan::F32;
    so.maxShardBytes = o.saveShardBytes;
    so.quiet = quiet || !root;
    SavePretrainedResult r = savePretrained(*model, exec, so);
    if (!quiet)
      std::printf("wrote %s: %lld tensors (%.1f MB of %s) in %lld file(s), in %.2f s; rank %d "
                  "wrote %.1f MB of them, staging at most %.1f MB beyond its arena\n",
                  o.savePretrained.c_str(), (long long)r.tensors, r.totalBytes / 1e6,
                  dtypeName(so.dtype), (long long)r.shards, r.seconds, exec.comm().rank(),
                  r.bytes / 1e6, r.stagingBytes / 1e6);
  }
  // The whole run's peak, measured: loading, the steps, checkpoints and saving,
  // each rank's resident memory over what it held before its plan's arena (with
  // ranks as threads, the process's, for all of them), against the arena the
  // report predicts (total_peak).
  std::vector<int64_t> runPeak =
      comm.gatherInts(exec.device().peakMemoryInUse() - memoryBefore);
  if (root && !o.quiet) {
    std::string list;
    for (size_t r = 0; r < runPeak.size(); ++r) {
      char part[64];
      std::snprintf(part, sizeof part, "%srank %zu %.1f MiB", r ? ", " : "", r,
                    runPeak[r] / 1048576.0);
      list += part;
    }
    std::printf("peak memory over the run (loading, steps, checkpoints, saving): %s; the "
                "plan's arena %.1f MiB per rank\n",
                list.c_str(), peakBytes.empty() ? 0.0 : peakBytes[0] / 1048576.0);
  }
  return 0;
}

int zrt::runOnInputs(const RunOptions &o, Executor &exec) {
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

