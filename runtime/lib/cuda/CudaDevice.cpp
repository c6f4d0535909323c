//===- CudaDevice.cpp - A GPU as the plan's device ------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "CublasLoader.h"
#include "CudaContext.h"
#include "CudaLaunch.h"
#include "CudnnLoader.h"
#include "GeneratedKernels.h"

#include "zrt/Communicator.h"
#include "zrt/Device.h"
#include "zrt/Watchdog.h"

#include <atomic>
#include <cstdio>
#include <cstring>

using namespace zrt;
using namespace zrt::cuda;

namespace {

/// The device the calling thread drives: each rank's thread binds its own.
thread_local Context *current = nullptr;

class CudaDevice final : public Device {
public:
  /// GPU `ordinal` for rank `rank` with the NCCL communicator `nccl` of `ranks`
  /// ranks (owned).
  /// threadRanks: how many ranks (GPUs) this process drives, one per thread.
  CudaDevice(int ordinal, ncclComm_t nccl, int rank, int ranks, const CudaOptions &options,
             int threadRanks = 1)
      : rank_(rank), threadRanks_(threadRanks) {
    ctx_.ordinal = ordinal;
    ctx_.nccl = nccl;
    ctx_.ranks = ranks;
    ZERO_CUDA_CHECK(cudaSetDevice(ordinal));
    ZERO_CUDA_CHECK(cudaStreamCreate(&ctx_.compute));
    ZERO_CUDA_CHECK(cudaStreamCreate(&ctx_.comm));
    ZERO_CUDA_CHECK(cudaStreamCreate(&ctx_.copy));
    ZERO_CUBLAS_CHECK(cublasLt().create(&ctx_.blasLt));
    // 32 MiB: what cuBLASLt's heuristic may ask for on Hopper (llm.c's figure).
    ctx_.gemmWorkspaceBytes = 32u << 20;
    ZERO_CUDA_CHECK(cudaMalloc(&ctx_.gemmWorkspace, ctx_.gemmWorkspaceBytes));
    // 1 MiB: the column sums' chunks for 16K columns of 8 chunks (more columns
    // take fewer chunks).
    ctx_.scratch.bytes = 1u << 20;
    ZERO_CUDA_CHECK(cudaMalloc(&ctx_.scratch.data, ctx_.scratch.bytes));
    // fp32 GEMMs stay fp32 (parity with the CPU backend comes first) unless TF32
    // is allowed (CUBLAS_COMPUTE_32F_FAST_TF32).
    ctx_.allowTf32 = options.allowTf32;
    ctx_.cudnnAttention = options.cudnnAttention;
    if (options.generatedKernels)
      ctx_.generated = std::make_shared<GeneratedKernels>(options.quiet);
    ZERO_CUDA_CHECK(cudaMalloc(&ctx_.errorFlag, sizeof(int)));
    ZERO_CUDA_CHECK(cudaMemset(ctx_.errorFlag, 0, sizeof(int)));
    ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&ctx_.ready, cudaEventDisableTiming));
    ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&ctx_.doneSync, cudaEventDisableTiming));
    name_ = "cuda:" + std::to_string(ordinal);
#ifdef ZERO_CUDA_EMULATOR
    name_ += " (emulated)";
#endif
  }
  ~CudaDevice() override {
    cudaSetDevice(ctx_.ordinal);
    cudaStreamSynchronize(ctx_.compute);
    cudaStreamSynchronize(ctx_.comm);
    cudaStreamSynchronize(ctx_.copy);
    for (cudaEvent_t e : ctx_.done)
      cudaEventDestroy(e);
    for (cudaEvent_t e : ctx_.copyEvents)
      cudaEventDestroy(e);
    if (graph_)
      cudaGraphExecDestroy(graph_);
    cudaEventDestroy(ctx_.ready);
    cudaEventDestroy(ctx_.doneSync);
    if (!ctx_.ncclAborted)
      for (auto &[group, nccl] : ctx_.groupNccl)
        ncclCommDestroy(nccl);
    if (ctx_.nccl && !ctx_.ncclAborted)
      ncclCommDestroy(ctx_.nccl);
    cublasLt().destroy(ctx_.blasLt);
    std::string noCudnn;
    if (ctx_.dnn && cudnn(noCudnn))
      cudnn(noCudnn)->destroy(ctx_.dnn);
    cudaFree(ctx_.attentionWorkspace);
    for (void *p : ctx_.retiredWorkspaces)
      cudaFree(p);
    cudaFree(ctx_.gemmWorkspace);
    cudaFree(ctx_.scratch.data);
    cudaFree(ctx_.errorFlag);
    cudaStreamDestroy(ctx_.copy);
    cudaStreamDestroy(ctx_.comm);
    cudaStreamDestroy(ctx_.compute);
    if (current == &ctx_)
      current = nullptr;
  }
  std::string name() const override { return name_; }
  void bindToCallingThread() override {
    ZRT_CHECK(!current || current == &ctx_,
              "one thread drives one GPU; this one has cuda:" << current->ordinal);
    ZERO_CUDA_CHECK(cudaSetDevice(ctx_.ordinal));
    current = &ctx_;
  }
  void *allocate(size_t bytes) override {
    void *p = nullptr;
    ZERO_CUDA_CHECK(cudaSetDevice(ctx_.ordinal));
    ZERO_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    ZERO_CUDA_CHECK(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
  }
  void release(void *memory) override { cudaFree(memory); }
  void *allocateHost(size_t bytes) override {
    void *p = nullptr;
    ZERO_CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
    std::memset(p, 0, bytes ? bytes : 1);
    return p;
  }
  void releaseHost(void *memory) override { cudaFreeHost(memory); }
  TransferFence makeTransferFence() override {
    cudaEvent_t e = ownedEvent(ctx_);
    Context *ctx = &ctx_;
    return {[=] { ZERO_CUDA_CHECK(cudaEventRecord(e, ctx->copy)); },
            [=] { ZERO_CUDA_CHECK(cudaEventSynchronize(e)); }};
  }
  void upload(void *device, const void *host, size_t bytes) override {
    ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.compute));
    ZERO_CUDA_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void *host, const void *device, size_t bytes) override {
    synchronize();
    ZERO_CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  void synchronize() override {
    {
      // The GPU's work includes NCCL collectives that wait for the other ranks.
      WatchedWait watched(rank_, "the GPU's kernels and NCCL collectives");
      ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.compute));
      ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.comm));
      ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.copy));
    }
    ZRT_CHECK(!ctx_.ncclAborted, "stopped on " << name_ << ": another rank of this process "
                                       << "failed and its NCCL communicator was aborted");
    int flag = 0;
    ZERO_CUDA_CHECK(cudaMemcpy(&flag, ctx_.errorFlag, sizeof(int), cudaMemcpyDeviceToHost));
    if (flag) {
      ZERO_CUDA_CHECK(cudaMemset(ctx_.errorFlag, 0, sizeof(int)));
      ZRT_CHECK(flag != kIntegerDivisionByZero,
                "a kernel on " << name_ << " found an integer division by zero");
      ZRT_FAIL("a kernel on " << name_
                              << " found an index or label out of range (a token "
                                 "id beyond the vocabulary?)");
    }
  }
  const KernelTable &kernels() const override { return cudaKernels(); }
  /// Events with timing on the compute stream, one per mark and one to begin.
  class EventClock final : public KernelClock {
  public:
    EventClock(Context &ctx, size_t kernels) : ctx_(ctx), events_(kernels + 1) {
      for (cudaEvent_t &e : events_)
        ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
    }
    ~EventClock() override {
      for (cudaEvent_t e : events_)
        cudaEventDestroy(e);
    }
    void begin() override { ZERO_CUDA_CHECK(cudaEventRecord(events_[0], ctx_.compute)); }
    void mark(size_t kernel) override {
      ZERO_CUDA_CHECK(cudaEventRecord(events_[kernel + 1], ctx_.compute));
    }
    double spanMs(size_t kernel) override {
      float ms = 0;
      ZERO_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[kernel], events_[kernel + 1]));
      return ms;
    }
    double startMs(size_t kernel) override {
      float ms = 0;
      if (kernel)
        ZERO_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[kernel]));
      return ms;
    }

  private:
    Context &ctx_;
    std::vector<cudaEvent_t> events_;
  };
  std::unique_ptr<KernelClock> makeKernelClock(size_t kernels) override {
    return std::make_unique<EventClock>(ctx_, kernels);
  }
  bool captureGraph(const std::function<void()> &enqueue, std::string &why) override {
    // NCCL user guide, "Using NCCL with CUDA Graphs": several GPUs per process with
    // captured collectives may deadlock (cudaGraphLaunch may block); it recommends
    // one GPU per process. A step of several ranks always holds collectives.
    if (threadRanks_ > 1) {
      why = "this process drives " + std::to_string(threadRanks_) +
            " GPUs (ranks as threads), and NCCL's guidance for collectives in CUDA "
            "graphs is one GPU per process: without --ranks-as threads zero-run "
            "starts one process per GPU (so do torchrun, mpirun or Slurm) and runs "
            "the step as a graph";
      return false;
    }
    // Thread-local: ranks that are threads of one process capture their own GPUs.
    cudaError_t rc = cudaStreamBeginCapture(ctx_.compute, cudaStreamCaptureModeThreadLocal);
    if (rc == cudaSuccess) {
      try {
        enqueue();
      } catch (...) {
        cudaGraph_t partial = nullptr;
        if (cudaStreamEndCapture(ctx_.compute, &partial) == cudaSuccess && partial)
          cudaGraphDestroy(partial);
        cudaGetLastError();
        throw;
      }
      cudaGraph_t graph = nullptr;
      rc = cudaStreamEndCapture(ctx_.compute, &graph);
      if (rc == cudaSuccess) {
        rc = cudaGraphInstantiate(&graph_, graph, 0);
        cudaGraphDestroy(graph);
      }
    }
    if (rc != cudaSuccess) {
      why = std::string("capture failed: ") + cudaGetErrorString(rc);
      cudaGetLastError(); // not an error of the step's: it runs directly
      graph_ = nullptr;
    }
    return rc == cudaSuccess;
  }
  void kernelsBound() override {
    if (ctx_.generated)
      ctx_.generated->compile();
    // One line counting every kernel off its fast path (utils/gpu-checks.sh reads it).
    if (!ctx_.fallbacks.empty()) {
      std::string line;
      for (const auto &[what, count] : ctx_.fallbacks)
        line += (line.empty() ? "" : "; ") + std::to_string(count) + " " + what;
      std::fprintf(stderr, "zero-run: %s: fallbacks: %s\n", name_.c_str(), line.c_str());
    }
  }
  void replayGraph() override { ZERO_CUDA_CHECK(cudaGraphLaunch(graph_, ctx_.compute)); }
  void discardGraph() override {
    if (graph_)
      ZERO_CUDA_CHECK(cudaGraphExecDestroy(graph_));
    graph_ = nullptr;
  }
  bool hasGraphs() const override { return true; }
  int64_t memoryInUse() const override {
    size_t free = 0, total = 0;
    ZERO_CUDA_CHECK(cudaSetDevice(ctx_.ordinal));
    ZERO_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return (int64_t)(total - free);
  }
  void abort() override {
    std::lock_guard<std::mutex> lock(ctx_.ncclMutex); // not while a collective enqueues
    if (ctx_.nccl && !ctx_.ncclAborted.exchange(true)) {
      for (auto &[group, nccl] : ctx_.groupNccl) // a rank may wait in a group's
        ncclCommAbort(nccl);
      ncclCommAbort(ctx_.nccl);
    }
  }
  void addCollectiveGroup(const Communicator *group, int color, int key) override {
    std::lock_guard<std::mutex> lock(ctx_.ncclMutex);
    ZRT_CHECK(ctx_.nccl && !ctx_.ncclAborted,
              name_ << ": no NCCL communicator to split into groups of ranks");
    ncclComm_t split = nullptr;
    ZERO_CUDA_CHECK(cudaSetDevice(ctx_.ordinal));
    ZERO_NCCL_CHECK(ncclCommSplit(ctx_.nccl, color, key, &split, nullptr));
    ZRT_CHECK(split, name_ << ": ncclCommSplit gave this rank no group (color " << color
                           << ")");
    ctx_.groupNccl[group] = split;
  }

private:
  Context ctx_;
  std::string name_;
  int rank_;
  int threadRanks_;
  cudaGraphExec_t graph_ = nullptr; // the step, once captured
};

void checkGpus(int needed) {
  int n = cudaDeviceCount();
  ZRT_CHECK(needed <= n, "GPU " << needed - 1 << " is not present (" << n << " visible)");
}

} // namespace

Context &zrt::cuda::context() {
  ZRT_CHECK(current, "no CUDA device is active");
  return *current;
}

bool zrt::cudaBackendBuilt() { return true; }

bool zrt::cudaRanksMayBeProcesses() {
#ifdef ZERO_CUDA_EMULATOR
  return false;
#else
  return true;
#endif
}

std::string zrt::loadCudaLibraries() {
  std::string report = "cuBLASLt: " + cublasLt().library, why;
  const CudnnApi *dnn = cudnn(why);
  return report + "\ncuDNN: " +
         (dnn ? std::to_string(dnn->getVersion()) + " " + dnn->library
              : why + " (16-bit attention runs on zero-opt's kernels)") +
         "\nNVRTC: " + GeneratedKernels::nvrtcLibrary();
}

int zrt::cudaDeviceCount() {
  int n = 0;
  // No driver or no GPU is not an error here: the caller falls back to the CPU.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Device> zrt::makeCudaDevice(int ordinal, Communicator &host,
                                            const CudaOptions &options) {
  ZRT_CHECK(ordinal >= 0, "GPU " << ordinal << " does not exist");
  checkGpus(ordinal + 1);
  // NCCL over the host communicator's ranks: rank 0 makes the unique id and the
  // host communicator (MPI under mpirun) hands it to the others.
  ncclUniqueId id;
  if (host.rank() == 0)
    ZERO_NCCL_CHECK(ncclGetUniqueId(&id));
  host.broadcast(&id, sizeof(id));
  ZERO_CUDA_CHECK(cudaSetDevice(ordinal));
  ncclComm_t nccl = nullptr;
  ZERO_NCCL_CHECK(ncclCommInitRank(&nccl, host.size(), id, host.rank()));
  auto device =
      std::make_unique<CudaDevice>(ordinal, nccl, host.rank(), host.size(), options);
  device->bindToCallingThread();
  return device;
}

std::vector<std::unique_ptr<Device>> zrt::makeCudaDevicesForThreads(int ranks,
                                                                    const CudaOptions &options) {
  ZRT_CHECK(ranks >= 1, "a process needs at least one rank, not " << ranks);
  checkGpus(ranks);
  // One call makes the communicators of GPUs 0 .. ranks-1 (no unique id to share).
  std::vector<ncclComm_t> comms(ranks, nullptr);
  ZRT_CHECK(options.communicator || ranks == 1,
            "ranks " << ranks << " without NCCL communicators: only one rank runs alone");
  if (options.communicator)
    ZERO_NCCL_CHECK(ncclCommInitAll(comms.data(), ranks, nullptr));
  std::vector<std::unique_ptr<Device>> devices;
  for (int r = 0; r < ranks; ++r)
    devices.push_back(std::make_unique<CudaDevice>(r, comms[r], r, ranks, options, ranks));
  return devices;
}
