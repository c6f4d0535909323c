//===- Device.h - Where a plan's arena lives and its kernels run -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_DEVICE_H
#define ZRT_DEVICE_H

#include "zrt/Communicator.h"
#include "zrt/Kernels.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zrt {

/// Timestamps taken on a device's compute stream as it runs (a GPU's events), for
/// a profile or trace that does not stop the device between kernels: begin(), then
/// mark(i) after queuing kernel i; once the device is synchronized, spanMs(i) is
/// the time from mark i - 1 (or begin) to mark i, and startMs(i) the time from
/// begin to mark i - 1 (where kernel i's span starts; i may be the kernel count:
/// where the last one's ends).
class KernelClock {
public:
  virtual ~KernelClock() = default;
  virtual void begin() = 0;
  virtual void mark(size_t kernel) = 0;
  virtual double spanMs(size_t kernel) = 0;
  virtual double startMs(size_t kernel) = 0;
};

/// A device owns memory the host cannot touch directly (in general) and a kernel
/// table that works on it. The host reaches device memory only through
/// upload/download.
class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  /// Zeroed memory of `bytes`, 64-byte aligned at least.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *memory) = 0;
  /// Host memory for a plan's host arena (an offloaded optimizer's), zeroed,
  /// 64-byte aligned: page-locked for a GPU, so that copies to and from it run
  /// asynchronously. The host's own memory for the CPU.
  virtual void *allocateHost(size_t bytes) { return allocate(bytes); }
  virtual void releaseHost(void *memory) { release(memory); }
  /// `mark` (called in kernel order) and `wait` (called from any thread; returns
  /// once every transfer issued before `mark` is done). For host kernels, which
  /// read what the transfers wrote. No-ops where transfers finish when issued.
  struct TransferFence {
    std::function<void()> mark = [] {}, wait = [] {};
  };
  virtual TransferFence makeTransferFence() { return {}; }
  virtual void upload(void *device, const void *host, size_t bytes) = 0;
  virtual void download(void *host, const void *device, size_t bytes) = 0;
  /// Waits until every kernel launched so far is done.
  virtual void synchronize() = 0;
  virtual const KernelTable &kernels() const = 0;
  /// Makes this device the calling thread's (a GPU's kernels find their streams
  /// through it); the thread of each rank calls it before using the device.
  virtual void bindToCallingThread() {}
  /// Called (from any thread) when a rank of this process has failed: work that
  /// waits for the other ranks (NCCL collectives) is stopped, so the thread that
  /// waits for it returns and fails too instead of hanging.
  virtual void abort() {}
  /// A group of this device's ranks (hybrid sharding's shard and replica groups,
  /// hpZ's): `group`, the host's communicator that `split(color, key)` made, will
  /// bind collectives that the device must run among the same ranks (NCCL:
  /// ncclCommSplit). Every rank calls it, in the same order, before binding.
  virtual void addCollectiveGroup(const Communicator *group, int color, int key) {}
  /// Memory in use, measured: the host's resident set (the process's, shared by
  /// the ranks that are its threads), a GPU's memory in use (cudaMemGetInfo). And
  /// the peak so far where the system keeps one (the host's VmHWM; a GPU's arena
  /// is allocated once, so its use now is its peak).
  virtual int64_t memoryInUse() const { return 0; }
  virtual int64_t peakMemoryInUse() const { return memoryInUse(); }
  /// A clock for `kernels` kernels per run; null where a kernel is done when the
  /// call that runs it returns (the CPU: the host's clock times it).
  virtual std::unique_ptr<KernelClock> makeKernelClock(size_t kernels) { return nullptr; }
  /// Records what `enqueue` queues as one graph to replay (a GPU's CUDA graph):
  /// true when captured (nothing has run: replay() runs it); false, with why in
  /// `why` (empty where the device has no graphs, the CPU), when it was not: then
  /// nothing it queued ran or will run, and the caller runs the work directly.
  virtual bool captureGraph(const std::function<void()> &enqueue, std::string &why) {
    why.clear();
    return false;
  }
  /// Called once every kernel of the plan is bound, before the first step: a GPU
  /// compiles the kernels it generated for the plan here.
  virtual void kernelsBound() {}
  /// Queues one run of the captured graph.
  virtual void replayGraph() {}
  /// Drops the captured graph (another rank's capture failed: every rank of a
  /// collective must run it the same way), so the step runs directly.
  virtual void discardGraph() {}
  /// Whether captureGraph can capture at all (a GPU).
  virtual bool hasGraphs() const { return false; }
};

/// The host: OpenBLAS GEMM and plain loops.
std::unique_ptr<Device> makeCpuDevice();

/// Whether this build has the CUDA backend, and how many GPUs it sees (0 when the
/// backend is absent or no driver/GPU is present).
bool cudaBackendBuilt();
int cudaDeviceCount();
/// Whether ranks in separate processes can meet through this build's NCCL: the
/// real one can; the emulated one joins only ranks that are threads of a process.
bool cudaRanksMayBeProcesses();
/// Loads the CUDA libraries the backend opens at run time (cuBLASLt; cuDNN, which
/// is optional) and says where each was found, or why cuDNN was not; throws
/// zrt::Error naming what is missing when cuBLASLt is. No GPU needed.
std::string loadCudaLibraries();
/// How a GPU runs what the plan leaves open.
struct CudaOptions {
  /// fp32 GEMMs may round their operands to TF32 on the tensor cores (PyTorch's
  /// torch.backends.cuda.matmul.allow_tf32); off: they stay fp32.
  bool allowTf32 = false;
  /// Whether the devices get NCCL communicators. Off only for one rank whose plan
  /// has no collective: NCCL's start costs a small run more than the rest of it.
  bool communicator = true;
  /// bf16/fp16 fused attention on cuDNN's fused kernels where cuDNN is found and
  /// takes it (the rest, and everything when off, on the project's kernels).
  bool cudnnAttention = true;
  /// Each fused elementwise program as a kernel of its own, compiled by NVRTC when
  /// the plan is bound (off: one interpreter kernel runs every program).
  bool generatedKernels = true;
  /// No progress lines on stderr (zero-run --quiet): compiling the kernels.
  bool quiet = false;
};
/// GPU `ordinal` (cuBLASLt GEMM, the project's kernels, a compute and a
/// communication stream), with an NCCL communicator over the ranks of `host` for the
/// plan's collectives (its unique id broadcast through `host`). Throws zrt::Error
/// when the build has no CUDA backend or the GPU is missing.
std::unique_ptr<Device> makeCudaDevice(int ordinal, Communicator &host,
                                       const CudaOptions &options = {});
/// GPUs 0 .. ranks-1 for ranks that are threads of one process, their NCCL
/// communicators made together by ncclCommInitAll (no launcher). Rank r's thread
/// binds devices[r] (bindToCallingThread) and releases it.
std::vector<std::unique_ptr<Device>> makeCudaDevicesForThreads(int ranks,
                                                               const CudaOptions &options = {});

} // namespace zrt

#endif // ZRT_DEVICE_H
