//===- Executor.cpp - Runs a loaded plan on the CPU -----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Executor.h"
#include "zrt/PretrainedWeights.h"
#include "zrt/ParameterInputs.h"
#include "zrt/RankGroups.h"
#include "zrt/AsyncCollectives.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/HostWorker.h"
#include "zrt/NvmeFile.h"
#include "zrt/OnnxTensors.h"
#include "zrt/PlanFile.h"
#include "zrt/PlanVerifier.h"
#include "zrt/RandomInit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>

using namespace zrt;

Executor::Executor(zero::zplan::Plan plan, Device &device, Communicator &comm,
                   ExecutorOptions options)
    : plan_(std::move(plan)), device_(device), comm_(comm), options_(options) {
  ZRT_CHECK(plan_.world_size() == comm_.size(),
            "the plan was compiled for " << plan_.world_size() << " ranks; this run has "
                                         << comm_.size() << " (" << comm_.name() << ")");
  ZRT_CHECK(plan_.nvme_arena_bytes() == 0 || !options_.nvmePath.empty(),
            "the plan keeps model states in NVMe files (" << plan_.nvme_arena_bytes()
                << " bytes per rank; zero-opt --offload-param=nvme or "
                   "--offload-optimizer=nvme): give their folder with --nvme-path DIR");
  // Groups of ranks (hybrid sharding, hpZ), split by every rank in the same order,
  // on the host and on the device (NCCL: ncclCommSplit).
  int64_t shardGroup = planShardGroupSize(plan_, "the plan");
  int64_t nodeGroup = planNodeGroupSize(plan_, "the plan");
  int r = comm_.rank();
  auto split = [&](int color) {
    std::unique_ptr<Communicator> group = comm_.split(color, r);
    device_.addCollectiveGroup(group.get(), color, r);
    return group;
  };
  if (shardGroup) {
    shardComm_ = split((int)(r / shardGroup));
    replicaComm_ = split((int)(r % shardGroup));
  }
  if (nodeGroup)
    nodeComm_ = split((int)(r / nodeGroup));
  // One allocation for the whole plan, zeroed (optimizer state starts at zero).
  arena_ = static_cast<char *>(device_.allocate(plan_.arena_bytes()));
  try {
    // Any host buffer (even an empty one, in a plan that has no host bytes) gets
    // the host arena and the worker that runs host kernels.
    bool anyHost = false;
    for (const auto &b : plan_.buffers())
      anyHost |= b.host();
    if (anyHost)
      hostArena_ = static_cast<char *>(
          device_.allocateHost(std::max<int64_t>(plan_.host_arena_bytes(), 64)));
    bindKernels();
  } catch (...) {
    // No destructor runs for a failed constructor.
    hostWorker_.reset();
    nvmeWorker_.reset();
    if (hostArena_)
      device_.releaseHost(hostArena_);
    device_.release(arena_);
    throw;
  }
}

BoundKernel Executor::bindKernel(const KernelTable &table, int k) {
  int64_t groupSize = 0;
  RankGroup group = kernelRankGroup(plan_, k, groupSize, "the plan");
  Communicator *comm = group == RankGroup::Shard     ? shardComm_.get()
                       : group == RankGroup::Replica ? replicaComm_.get()
                       : group == RankGroup::Node    ? nodeComm_.get()
                                                     : &comm_;
  KernelCall call =
      planKernelCall(plan_, k, arena_, hostArena_, comm, async_.get(), nvme_.get());
  KernelKind kind = plan_.kernels(k).kind();
  HostWaits waits = hostWaits_[k];
  if (kind == Kernel::TO_HOST || kind == Kernel::TO_DEVICE) {
    // A copy is issued once the host tasks it needs are done: those that make
    // its source, or still use the bytes it overwrites (a GPU copies when it gets
    // to it, not when it is issued).
    BoundKernel copy = bindKernelCall(table, call);
    int64_t bytes = call.ins[0].bytes();
    int64_t &copied = kind == Kernel::TO_HOST ? copiedToHost_ : copiedToDevice_;
    return [this, waits, copy, bytes, &copied] {
      try {
        if (waits.host)
          hostWorker_->waitFor(hostBase_ + waits.host);
        if (waits.nvme)
          nvmeWorker_->waitFor(nvmeBase_ + waits.nvme);
      } catch (const SkippedAfterFailure &) {
        drainWorkers(); // throws the failure itself
        throw;
      }
      copy();
      copied += bytes;
    };
  }
  if (!runsOnHost(plan_, k))
    return bindKernelCall(table, call);
  // A host kernel: the CPU's, split across the host worker's threads (an NVMe
  // transfer: whole, on the NVMe worker, which keeps its requests in flight), run
  // once the copies issued before it are done and the other worker's tasks it
  // needs (bytes it reads or overwrites) have run.
  std::vector<BoundKernel> chunks;
  bool nvme = kind == Kernel::NVME_READ || kind == Kernel::NVME_WRITE;
  HostWorker *worker = nvme ? nvmeWorker_.get() : hostWorker_.get();
  HostWorker *other = nvme ? hostWorker_.get() : nvmeWorker_.get();
  for (const KernelCall &part : nvme ? std::vector<KernelCall>{call}
                                     : splitElementwise(call, worker->threads()))
    chunks.push_back(bindKernelCall(cpuKernels(), part));
  Device::TransferFence fence = device_.makeTransferFence();
  int64_t otherTask = nvme ? waits.host : waits.nvme;
  const int64_t *otherBase = nvme ? &hostBase_ : &nvmeBase_;
  return [worker, other, otherTask, otherBase, fence, chunks] {
    fence.mark();
    worker->enqueue(
        [fence, other, otherTask, otherBase] {
          fence.wait();
          if (otherTask)
            other->waitFor(*otherBase + otherTask);
        },
        chunks);
  };
}

void Executor::findHostWaits() {
  // Each worker runs its tasks in plan order, and copies wait for the host tasks
  // before them through the transfer fence; what remains is a task of one worker
  // (or a copy) that touches host bytes a task of the other touched earlier: it
  // waits for the latest such task (a read after a write, a write after a read or
  // a write). Waits point backward in plan order, so they cannot form a cycle.
  enum Queue { kMain, kHost, kNvme };
  struct Touch {
    int64_t begin, end, task;
    Queue queue;
    bool write;
  };
  std::vector<Touch> touched;
  int64_t given[3] = {0, 0, 0};
  hostWaits_.assign(plan_.kernels_size(), HostWaits{});
  for (int k = 0; k < plan_.kernels_size(); ++k) {
    const auto &pk = plan_.kernels(k);
    Queue q;
    if (pk.kind() == Kernel::TO_HOST || pk.kind() == Kernel::TO_DEVICE)
      q = kMain;
    else if (!runsOnHost(plan_, k))
      continue;
    else
      q = pk.kind() == Kernel::NVME_READ || pk.kind() == Kernel::NVME_WRITE ? kNvme : kHost;
    auto hostRanges = [&](const auto &ids) {
      std::vector<std::pair<int64_t, int64_t>> r;
      for (int i : ids)
        if (plan_.buffers(i).host() && plan_.buffers(i).bytes() > 0)
          r.push_back({plan_.buffers(i).offset(),
                       plan_.buffers(i).offset() + plan_.buffers(i).bytes()});
      return r;
    };
    auto reads = hostRanges(pk.inputs()), writes = hostRanges(pk.outputs());
    auto overlaps = [](const Touch &t, const std::vector<std::pair<int64_t, int64_t>> &rs) {
      for (auto [b, e] : rs)
        if (b < t.end && t.begin < e)
          return true;
      return false;
    };
    HostWaits &w = hostWaits_[k];
    for (const Touch &t : touched) {
      if (t.queue == q || !(overlaps(t, writes) || (t.write && overlaps(t, reads))))
        continue;
      int64_t &slot = t.queue == kHost ? w.host : w.nvme;
      slot = std::max(slot, t.task);
    }
    if (q == kMain)
      continue; // later host tasks wait for copies through the fence
    int64_t task = ++given[q];
    for (auto [b, e] : reads)
      touched.push_back({b, e, task, q, false});
    for (auto [b, e] : writes)
      touched.push_back({b, e, task, q, true});
  }
}

void Executor::drainWorkers() {
  std::exception_ptr failure, skipped;
  for (HostWorker *w : {nvmeWorker_.get(), hostWorker_.get()}) {
    if (!w)
      continue;
    try {
      w->drain();
    } catch (const SkippedAfterFailure &) {
      if (!skipped)
        skipped = std::current_exception();
    } catch (...) {
      if (!failure)
        failure = std::current_exception();
    }
  }
  if (failure)
    std::rethrow_exception(failure);
  if (skipped)
    std::rethrow_exception(skipped);
}

void Executor::bindKernels() {
  const KernelTable &table = device_.kernels();
  for (int i = 0; i < plan_.buffers_size(); ++i) {
    const auto &b = plan_.buffers(i);
    if (b.role() == zero::zplan::CONSTANT)
      device_.upload(arena_ + b.offset(), b.data().data(), b.bytes());
  }
  // Started collectives run on their own thread; a request id pairs start and wait.
  int64_t requests = 0;
  for (const auto &pk : plan_.kernels())
    if (pk.attrs().count("request"))
      requests = std::max<int64_t>(requests, pk.attrs().at("request").i() + 1);
  ZRT_CHECK(requests <= plan_.kernels_size(), "the plan's collective request ids are "
                                              "out of range");
  if (requests)
    async_ = std::make_unique<AsyncCollectives>(requests, comm_.rank(),
                                                options_.commDelayNsPerByte);

  if (hostArena_) {
    int threads = options_.hostThreads > 0 ? options_.hostThreads
                                           : (int)std::thread::hardware_concurrency();
    hostWorker_ = std::make_unique<HostWorker>(threads);
    // NVMe transfers: one thread that keeps the file's requests in flight.
    if (plan_.nvme_arena_bytes() > 0) {
      ZRT_CHECK(options_.nvmeQueueDepth >= 1 && options_.nvmeQueueDepth <= 1024,
                "the NVMe queue depth must be 1 to 1024, not " << options_.nvmeQueueDepth);
      nvmeWorker_ = std::make_unique<HostWorker>(1);
      nvme_ = std::make_unique<NvmeFile>(options_.nvmePath, comm_.rank(),
                                         plan_.nvme_arena_bytes(), options_.nvmeQueueDepth);
    }
  }
  findHostWaits();
  for (int k = 0; k < plan_.kernels_size(); ++k) {
    kernels_.push_back(bindKernel(table, k));
    kernelNames_.push_back(zero::zplan::kernelKindName(plan_.kernels(k).kind()));
  }
  device_.kernelsBound();

  // Gathered buckets: alive from the gather to the last kernel reading its result
  // (after binding, which checked each gather's one output).
  int n = plan_.kernels_size();
  gatheredFrom_.assign(n, 0);
  gatheredUntil_.assign(n, 0);
  for (int k = 0; k < n; ++k) {
    const auto &pk = plan_.kernels(k);
    if (pk.kind() != Kernel::ALL_GATHER && pk.kind() != Kernel::ALL_GATHER_START)
      continue;
    // Kernels read the bucket itself or views of it (the parameters in place).
    int out = pk.outputs(0), last = k;
    for (int j = k + 1; j < n; ++j)
      for (int in : plan_.kernels(j).inputs())
        if (in == out || (plan_.buffers(in).has_view_of() && plan_.buffers(in).view_of() == out))
          last = j;
    int64_t bytes = plan_.buffers(out).bytes();
    gatheredFrom_[k] += bytes;
    gatheredUntil_[last] += bytes;
  }
}

Executor::~Executor() {
  async_.reset(); // join the communication thread before the arena goes
  try {
    drainWorkers(); // both workers finish what they have (each may wait for the other)
  } catch (const std::exception &) {
    // Unwinding from a failed step: that failure is the one reported.
  }
  hostWorker_.reset(); // then their threads go
  nvmeWorker_.reset();
  nvme_.reset(); // then the NVMe file goes (removed from the disk)
  try {
    device_.synchronize();
  } catch (const std::exception &) {
    // Unwinding from a failed run (an aborted NCCL communicator, say): that
    // failure is the one reported; the arena still goes.
  }
  if (hostArena_)
    device_.releaseHost(hostArena_);
  if (nonfiniteCounts_)
    device_.release(nonfiniteCounts_);
  device_.release(arena_);
}

void Executor::write(int i, const void *host, size_t bytes) {
  ZRT_CHECK((int64_t)bytes == plan_.buffers(i).bytes(),
            "writing " << bytes << " bytes into buffer " << i << " of "
                       << plan_.buffers(i).bytes());
  if (plan_.buffers(i).nvme()) {
    drainWorkers(); // the step's transfers are done
    int64_t offset = plan_.buffers(i).offset();
    nvme_->clearNonFinite(offset);
    nvme_->write(offset, host, (int64_t)bytes, plan_.buffers(i).dtype());
    return;
  }
  if (plan_.buffers(i).host()) {
    drainWorkers();
    std::memcpy(buffer(i).data, host, bytes);
    return;
  }
  device_.upload(buffer(i).data, host, bytes);
}

HostTensor Executor::read(int i) {
  TensorView v = buffer(i);
  HostTensor h;
  h.bytes.resize(v.bytes());
  h.dtype = v.dtype;
  h.shape = v.shape;
  if (plan_.buffers(i).nvme()) {
    drainWorkers();
    nvme_->read(plan_.buffers(i).offset(), h.bytes.data(), v.bytes());
    return h;
  }
  if (plan_.buffers(i).host()) {
    drainWorkers();
    std::memcpy(h.bytes.data(), v.data, v.bytes());
    return h;
  }
  device_.synchronize();
  device_.download(h.bytes.data(), v.data, v.bytes());
  return h;
}

int Executor::inputBuffer(int index) const {
  for (int i = 0; i < plan_.buffers_size(); ++i)
    if (plan_.buffers(i).role() == zero::zplan::INPUT && plan_.buffers(i).index() == index)
      return i;
  ZRT_FAIL("the plan has no input " << index);
}

TensorView Executor::buffer(int i) const {
  const auto &b = plan_.buffers(i);
  char *data = b.nvme() ? nullptr // in the NVMe file: no address
                        : (b.host() ? hostArena_ : arena_) + b.offset();
  return TensorView{data, b.dtype(),
                    std::vector<int64_t>(b.shape().begin(), b.shape().end())};
}

void Executor::run() { runKernels(nullptr); }

void Executor::runForward() {
  using zero::zplan::Kernel;
  ZRT_CHECK(plan_.grad_accum_steps() <= 1,
            "evaluation runs the step's forward part, which gradient accumulation "
            "repeats per micro-batch; it is not supported with --grad-accum-steps "
            << plan_.grad_accum_steps() << " yet");
  ZRT_CHECK(!hostWorker_ && !nvme_,
            "evaluation does not run plans with host or NVMe kernels (offload) yet");
  ZRT_CHECK(plan_.outputs_size() > 0, "the plan has no loss output to evaluate");
  int lossBuffer = plan_.outputs(0).buffer(), end = -1;
  for (int k = 0; k < plan_.kernels_size() && end < 0; ++k)
    for (int b : plan_.kernels(k).outputs())
      if (b == lossBuffer)
        end = k;
  ZRT_CHECK(end >= 0, "no kernel of the plan writes its loss");
  // Collectives started before the loss and waited after it belong to the
  // backward pass (ZeRO-3 starts its gathers early).
  std::map<int64_t, int> startOf;
  std::set<int> skip;
  for (int k = 0; k < plan_.kernels_size(); ++k) {
    const Kernel &kern = plan_.kernels(k);
    auto request = kern.attrs().find("request");
    if (request == kern.attrs().end())
      continue;
    if (kern.kind() == Kernel::WAIT) {
      auto start = startOf.find(request->second.i());
      if (start != startOf.end() && start->second <= end && k > end)
        skip.insert(start->second);
    } else {
      startOf[request->second.i()] = k;
    }
  }
  for (int k = 0; k <= end; ++k)
    if (!skip.count(k))
      kernels_[k]();
  device_.synchronize();
}

NvmeTraffic Executor::takeNvmeTraffic() {
  return nvme_ ? nvme_->takeTraffic() : NvmeTraffic{};
}

std::string Executor::nvmeFilePath() const { return nvme_ ? nvme_->path() : ""; }

void Executor::runProfiled(std::map<std::string, double> &msByKernel) {
  runKernels(&msByKernel);
}

void Executor::runKernels(std::map<std::string, double> *msByKernel) {
  if (nvme_) {
    nvme_->check(); // still there, whole: the step reads the model states from it
    nvme_->resetNonFinite();
  }
  // The step's tasks count from here (both workers are idle between steps).
  hostBase_ = hostWorker_ ? hostWorker_->given() : 0;
  nvmeBase_ = nvmeWorker_ ? nvmeWorker_->given() : 0;
  int64_t live = 0;
  auto us = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - epoch_).count();
  };
  // Gathered parameter buckets live from their gather to their last reader.
  auto gatheredBefore = [&](size_t k) {
    live += gatheredFrom_[k];
    gatheredPeak_ = std::max(gatheredPeak_, live);
  };
  auto gatheredAfter = [&](size_t k) { live -= gatheredUntil_[k]; };
  // A profile or trace, on a device with a clock of its own (a GPU's events), runs
  // the kernels as without one: each kernel's span is the time between the marks
  // before and after it on the compute stream, read once the step is done; the
  // trace's compute track is then the GPU's timeline, placed at the host time the
  // step was queued (its communication track stays on the host's clock). On the
  // CPU, or with host kernels (an offloaded optimizer, run by a worker thread that
  // the stream does not see), each kernel is timed on the host, waiting for the
  // device after each.
  if ((msByKernel || options_.trace) && !hostWorker_) {
    if (!clock_)
      clock_ = device_.makeKernelClock(kernels_.size());
    if (clock_) {
      double queued = us(std::chrono::steady_clock::now());
      clock_->begin();
      for (size_t k = 0; k < kernels_.size(); ++k) {
        gatheredBefore(k);
        kernels_[k]();
        clock_->mark(k);
        gatheredAfter(k);
      }
      device_.synchronize();
      for (size_t k = 0; k < kernels_.size(); ++k) {
        double ms = clock_->spanMs(k);
        if (msByKernel)
          (*msByKernel)[kernelNames_[k]] += ms;
        if (options_.trace) { // from one origin, so spans meet exactly
          double start = clock_->startMs(k), end = clock_->startMs(k + 1);
          trace_.push_back({kernelNames_[k], 0, queued + 1e3 * start, 1e3 * (end - start)});
        }
      }
      if (options_.trace && async_)
        for (auto &e : async_->takeEvents())
          trace_.push_back({e.name, 1, us(e.begin), us(e.end) - us(e.begin)});
      return;
    }
  }
  // Unprofiled on a GPU: the step is one CUDA graph, captured at the second run
  // (the first runs directly, so that nothing lazy, a library loading its
  // kernels, NCCL connecting its ranks, happens inside the capture), then
  // replayed as every later one, when nothing needs the host between kernels.
  // Every rank captures or none does: NCCL's ranks run each collective the same
  // way. Host kernels (offload: the optimizer, copies into host buffers) keep the
  // whole step kernel by kernel, said once.
  if (hostWorker_ && options_.graph && device_.hasGraphs() &&
      graphState_ == GraphState::untried) {
    graphState_ = GraphState::direct;
    std::fprintf(stderr, "zero-run: %s: the step runs kernel by kernel, not as one CUDA "
                         "graph: it has host kernels (offload)\n",
                 device_.name().c_str());
  }
  // A run the graph may take: unprofiled, untraced, no host kernels, graphs at hand.
  bool graphRun = !msByKernel && !options_.trace && !hostWorker_ && options_.graph &&
                  device_.hasGraphs();
  if (graphRun && graphState_ == GraphState::untried) {
    graphState_ = GraphState::warmed; // this run is the direct one before the capture
  } else if (graphRun && graphState_ != GraphState::direct) {
    if (graphState_ == GraphState::warmed) {
      std::string why;
      // The collectives count their traffic when queued: what the capture queued
      // is what every replay moves.
      int64_t gathered = comm_.allGatherElements, scattered = comm_.reduceScatterElements,
              reduced = comm_.allReduceElements;
      QuantizationError quantized = comm_.quantization;
      bool captured = device_.captureGraph(
          [&] {
            for (const BoundKernel &k : kernels_)
              k();
          },
          why);
      // The verdict of every rank: one failed capture makes every rank run directly.
      std::vector<int64_t> verdicts = comm_.allGatherInts(captured ? 1 : 0);
      std::string failed;
      for (size_t r = 0; r < verdicts.size(); ++r)
        if (!verdicts[r])
          failed += (failed.empty() ? "" : ", ") + std::to_string(r);
      bool failedHere = !captured;
      if (captured && !failed.empty()) {
        device_.discardGraph();
        captured = false;
        why = "the capture failed on rank " + failed + " (every rank runs the step the "
              "same way)";
      }
      graphState_ = captured ? GraphState::captured : GraphState::direct;
      countGroupTraffic(); // what the groups' collectives queued (hybrid, hpZ)
      graphTraffic_ = {comm_.allGatherElements - gathered,
                       comm_.reduceScatterElements - scattered,
                       comm_.allReduceElements - reduced};
      graphQuantizedBytes_ = {comm_.quantization.wireBytes - quantized.wireBytes,
                              comm_.quantization.fullBytes - quantized.fullBytes};
      comm_.allGatherElements = gathered; // counted again below, as each replay's
      comm_.reduceScatterElements = scattered;
      comm_.allReduceElements = reduced;
      comm_.quantization = quantized;
      // Said once: by rank 0, and by a rank whose own capture failed where rank
      // 0's did not (its reason, which rank 0's line does not give).
      bool say = comm_.rank() == 0 || (failedHere && verdicts[0]);
      if (!captured && !why.empty() && say)
        std::fprintf(stderr, "zero-run: %s: the step runs kernel by kernel, not as one "
                             "CUDA graph: %s\n", device_.name().c_str(), why.c_str());
    }
    if (graphState_ == GraphState::captured) {
      for (size_t k = 0; k < kernels_.size(); ++k) {
        gatheredBefore(k);
        gatheredAfter(k);
      }
      device_.replayGraph();
      comm_.allGatherElements += graphTraffic_[0];
      comm_.reduceScatterElements += graphTraffic_[1];
      comm_.allReduceElements += graphTraffic_[2];
      comm_.quantization.wireBytes += graphQuantizedBytes_[0];
      comm_.quantization.fullBytes += graphQuantizedBytes_[1];
      device_.synchronize();
      return;
    }
  }
  bool timed = options_.trace || msByKernel;
  for (size_t k = 0; k < kernels_.size(); ++k) {
    gatheredBefore(k);
    if (timed) {
      auto begin = std::chrono::steady_clock::now();
      kernels_[k]();
      drainWorkers(); // a host kernel's span ends when its worker ran it
      device_.synchronize(); // a kernel's span ends when the device is done with it
      auto end = std::chrono::steady_clock::now();
      const std::string &name = kernelNames_[k];
      if (options_.trace)
        trace_.push_back({name, 0, us(begin), us(end) - us(begin)});
      if (msByKernel)
        (*msByKernel)[name] +=
            std::chrono::duration<double, std::milli>(end - begin).count();
    } else {
      kernels_[k]();
    }
    gatheredAfter(k);
  }
  drainWorkers();
  device_.synchronize();
  countGroupTraffic();
  if (options_.trace && async_)
    for (auto &e : async_->takeEvents())
      trace_.push_back({e.name, 1, us(e.begin), us(e.end) - us(e.begin)});
}

void Executor::countGroupTraffic() {
  for (Communicator *g : {shardComm_.get(), replicaComm_.get(), nodeComm_.get()}) {
    if (!g)
      continue;
    comm_.allGatherElements += g->allGatherElements;
    comm_.reduceScatterElements += g->reduceScatterElements;
    comm_.allReduceElements += g->allReduceElements;
    g->allGatherElements = g->reduceScatterElements = g->allReduceElements = 0;
    comm_.quantization.add(g->quantization);
    g->quantization = {};
  }
}

std::vector<TraceEvent> Executor::takeTrace() { return std::move(trace_); }

Executor::NonFinite Executor::findNonFinite() {
  if (!nonfiniteCounts_) {
    // What the step updates: persistent buffers some kernel writes (directly or
    // through a view). A frozen initializer (an attention mask of -inf) is loaded
    // and never written, so it is not a weight to check.
    std::set<int> written;
    for (const auto &k : plan_.kernels())
      for (int out : k.outputs()) {
        written.insert(out);
        if (plan_.buffers(out).has_view_of())
          written.insert(plan_.buffers(out).view_of());
      }
    std::vector<int> checked;
    for (int i = 0; i < plan_.buffers_size(); ++i) {
      const auto &b = plan_.buffers(i);
      if ((b.role() == zero::zplan::PARAM || b.role() == zero::zplan::MASTER ||
           b.role() == zero::zplan::STATE) &&
          isFloatDtype(b.dtype()) && b.bytes() > 0 && written.count(i))
        // NVMe-held weights are counted as they are written (NvmeFile::write).
        (b.nvme() ? nvmeChecked_ : checked).push_back(i);
    }
    nonfiniteCounts_ = static_cast<float *>(device_.allocate((checked.size() + 1) * 4));
    hostCounts_.assign(checked.size(), 0.0f);
    KernelCall deviceAll, hostAll;
    for (KernelCall *all : {&deviceAll, &hostAll}) {
      all->kind = Kernel::NONFINITE_COUNT;
      all->loc = "the check of the weights";
    }
    deviceAll.outs = {TensorView{nonfiniteCounts_ + checked.size(), zero::zplan::F32, {1}}};
    hostAll.outs = {TensorView{&hostTotalCount_, zero::zplan::F32, {1}}};
    for (size_t j = 0; j < checked.size(); ++j) {
      int i = checked[j];
      bool host = plan_.buffers(i).host();
      KernelCall call;
      call.kind = Kernel::NONFINITE_COUNT;
      call.loc = "the check of '" + plan_.buffers(i).name() + "'";
      call.ins = {buffer(i)};
      (host ? hostAll : deviceAll).ins.push_back(buffer(i));
      call.outs = {TensorView{host ? &hostCounts_[j] : nonfiniteCounts_ + j,
                              zero::zplan::F32, {1}}};
      finiteChecks_.push_back({i, call, host, nullptr});
    }
    if (!deviceAll.ins.empty())
      deviceTotal_ = bindKernelCall(device_.kernels(), deviceAll);
    if (!hostAll.ins.empty())
      hostTotal_ = bindKernelCall(cpuKernels(), hostAll);
  }
  drainWorkers(); // the offloaded optimizer's last writes
  NonFinite found;
  float deviceTotal = 0;
  hostTotalCount_ = 0;
  if (deviceTotal_) {
    deviceTotal_();
    device_.synchronize();
    device_.download(&deviceTotal, nonfiniteCounts_ + finiteChecks_.size(), sizeof(float));
  }
  if (hostTotal_)
    hostTotal_();
  // Rare (the run stops): which element, on the host.
  auto firstNonFinite = [&](int i) {
    HostTensor h = read(i);
    int64_t size = dtypeSize(h.dtype), numel = (int64_t)h.bytes.size() / size;
    for (int64_t e = 0; e < numel; ++e)
      if (!std::isfinite(floatValue(h.bytes.data() + e * size, h.dtype)))
        return e;
    return (int64_t)-1;
  };
  for (int i : nvmeChecked_) {
    int64_t n = nvme_->nonFinite(plan_.buffers(i).offset());
    if (n == 0)
      continue;
    found.buffer = i;
    found.count = n;
    found.element = firstNonFinite(i);
    return found;
  }
  if (deviceTotal == 0 && hostTotalCount_ == 0)
    return found; // every value finite: one launch (the usual case, every step)
  for (FiniteCheck &c : finiteChecks_) {
    if (!c.count)
      c.count = bindKernelCall(c.host ? cpuKernels() : device_.kernels(), c.call);
    c.count();
  }
  device_.synchronize();
  std::vector<float> counts(finiteChecks_.size());
  if (!counts.empty())
    device_.download(counts.data(), nonfiniteCounts_, counts.size() * sizeof(float));
  for (size_t j = 0; j < finiteChecks_.size(); ++j) {
    float n = finiteChecks_[j].host ? hostCounts_[j] : counts[j];
    if (n == 0)
      continue;
    found.buffer = finiteChecks_[j].buffer;
    found.count = (int64_t)n;
    found.element = firstNonFinite(found.buffer);
    break;
  }
  return found;
}

