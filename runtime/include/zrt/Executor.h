//===- Executor.h - Runs a loaded plan on the CPU --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_EXECUTOR_H
#define ZRT_EXECUTOR_H

#include "zrt/Communicator.h"
#include "zrt/Device.h"
#include "zrt/Kernels.h"
#include "zrt/NvmeFile.h"
#include "zrt/Tensor.h"
#include "zplan.pb.h"

#include <onnx/onnx_pb.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zrt {

class ParameterSource;

class AsyncCollectives;
class HostWorker;

struct ExecutorOptions {
  /// Test-only: sleep this long per byte after each started collective.
  double commDelayNsPerByte = 0;
  /// Record every kernel and collective, for --trace.
  bool trace = false;
  /// Threads that share each host kernel of an offloaded optimizer (0: the
  /// machine's hardware threads).
  int hostThreads = 0;
  /// On a GPU, capture the step's kernels as one CUDA graph at the first run and
  /// replay it (not with a profile, a trace or host kernels).
  bool graph = true;
  /// NVMe offload: the folder of each rank's NVMe file (NvmeFile.h).
  std::string nvmePath;
  /// NVMe offload: requests in flight, each through a staging buffer of its own.
  int nvmeQueueDepth = kDefaultNvmeQueueDepth;
};

/// One span of a traced run: `track` 0 is compute, 1 communication.
struct TraceEvent {
  std::string name;
  int track;
  double beginUs, durationUs;
};

/// A tensor copied to the host.
struct HostTensor {
  std::vector<char> bytes;
  DType dtype = zero::zplan::DTYPE_INVALID;
  std::vector<int64_t> shape;
  TensorView view() { return TensorView{bytes.data(), dtype, shape}; }
};

/// Owns the arena of one validated plan on a device, and its bound kernels.
class Executor {
public:
  /// Allocates the arena, writes the constants and binds every kernel (checking its
  /// shapes and attributes). Throws zrt::Error on the first problem.
  Executor(zero::zplan::Plan plan, Device &device, Communicator &comm,
           ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const zero::zplan::Plan &plan() const { return plan_; }
  /// The device view of buffer `i` (host code must not dereference it).
  TensorView buffer(int i) const;
  /// Copies host bytes into buffer `i` (all of it), or the buffer to the host.
  void write(int i, const void *host, size_t bytes);
  HostTensor read(int i);
  /// The buffer index of graph input `index` (throws if the plan has none).
  int inputBuffer(int index) const;

  /// Fills every parameter buffer from the model's initializers of the same name;
  /// a ZeRO-3 bucket buffer gets this rank's slice of its members, reading only
  /// that slice of their external data. With `randomSeed` (--random-init) the
  /// values are generated instead (RandomInit.h), the initializers only checked
  /// for shape. A `source` (--init CHECKPOINT) fills the parameters it holds, the
  /// same slices only.
  void loadParameters(const onnx::ModelProto &model, const std::string &modelDir,
                      std::optional<uint64_t> randomSeed = std::nullopt,
                      const ParameterSource *source = nullptr);
  /// The full value of parameter `name` after training, on rank 0 (gathered from
  /// the shards where it is one; the f32 master copy where the plan keeps one);
  /// every rank must call it, in the same order.
  std::vector<char> gatherParameter(const std::string &name, DType &dtype,
                                    std::vector<int64_t> &shape);
  /// What this rank holds of parameter `name`'s trained value (the f32 master copy
  /// where the plan keeps one): elements [first, first + count) of it, flattened,
  /// and whether this rank writes them out. Every element has one writer: a
  /// bucket slice's rank in the first shard group, rank 0 for a parameter every
  /// rank holds whole. No communication: each rank writes its own part
  /// (--save-pretrained) instead of gathering the model on one.
  struct OwnedPart {
    DType dtype = zero::zplan::DTYPE_INVALID;
    std::vector<int64_t> shape;
    int64_t first = 0, count = 0;
    std::vector<char> bytes;
    bool writer = false;
  };
  OwnedPart ownedPart(const std::string &name);
  /// The scalars the runtime sets before each step (`RUNTIME` buffers): whether the
  /// plan has the one named `name` ("loss_scale", "lr"), and setting it (a plan
  /// without it ignores it).
  bool hasRuntimeValue(const std::string &name) const;
  void setRuntimeValue(const std::string &name, double value);
  /// Every parameter name, in plan order (bucket members expanded).
  std::vector<std::string> parameterNames() const;
  Communicator &comm() { return comm_; }
  /// Hybrid sharding: the group of ranks this rank's bucket slices are shared
  /// with (the world, without it); slice i of a bucket is its rank i's.
  Communicator &shardComm() { return shardComm_ ? *shardComm_ : comm_; }
  /// Positions of the graph inputs the plan reads, ascending (an input bound as a
  /// constant at compile time leaves a gap).
  std::vector<int> inputIndices() const;
  /// Fills graph input `index`.
  void setInput(int index, const onnx::TensorProto &t);

  /// Runs every kernel once, in plan order.
  void run();
  /// Runs the step's forward part alone (an evaluation): the kernels up to the
  /// one that writes the loss (output 0), without the collectives started there
  /// for the backward pass (a start whose wait comes after the loss, skipped on
  /// every rank alike). readOutput(0) then holds this rank's loss on the batch in
  /// its input buffers; parameters and optimizer state are not touched (what the
  /// prefix writes, activations and the loss kernel's gradient of the scores, the
  /// next step writes again). Refused, naming why, for plans whose forward is not
  /// one prefix or that need workers (gradient accumulation, host or NVMe kernels).
  void runForward();
  /// Same, adding each kernel's time in milliseconds to `msByKernel` under its
  /// name: on a GPU between events on its compute stream, without waiting between
  /// kernels; on the CPU (and with a trace or host kernels) the host's clock
  /// around each kernel, the device synchronized after it.
  void runProfiled(std::map<std::string, double> &msByKernel);
  /// Each kernel's name (its kind; runProfiled's keys), in plan order.
  const std::vector<std::string> &kernelNames() const { return kernelNames_; }

  /// Where this rank's persistent state that the step updates (trained
  /// parameters, master copies, optimizer state; not frozen initializers) holds
  /// inf or NaN: the first such buffer, the first such element of it and how
  /// many there are; buffer -1 when every value is finite. Counted by
  /// the device's own nonfinite_count kernel where the values live: one launch
  /// over every buffer, and one per buffer only when that finds any (the element
  /// is looked for on the host then).
  struct NonFinite {
    int buffer = -1;
    int64_t element = -1, count = 0;
  };
  NonFinite findNonFinite();

  /// The events recorded since the last call (with `trace` on).
  std::vector<TraceEvent> takeTrace();
  /// The most bytes of gathered parameter buckets alive at once, over all runs so
  /// far: from an all-gather's start to the last kernel that reads its result.
  int64_t gatheredPeakBytes() const { return gatheredPeak_; }
  /// Bytes the to_host and to_device kernels have copied so far (counted as they
  /// run): an offloaded optimizer's traffic between device and host.
  int64_t copiedToHostBytes() const { return copiedToHost_; }
  int64_t copiedToDeviceBytes() const { return copiedToDevice_; }
  /// NVMe offload: bytes read from and written to this rank's NVMe file since the
  /// last call (counted as the transfers run); its path ("" without).
  NvmeTraffic takeNvmeTraffic();
  std::string nvmeFilePath() const;

  int numOutputs() const { return plan_.outputs_size(); }
  HostTensor readOutput(int i) { return read(plan_.outputs(i).buffer()); }
  Device &device() { return device_; }
  std::string outputName(int i) const { return plan_.outputs(i).name(); }

private:
  /// Writes the constants, binds every kernel and sets up the collectives (the
  /// constructor's work once the arena exists).
  void bindKernels();
  /// Kernel `k`: from `table`, or the CPU's on the host worker (an offloaded
  /// optimizer's), or a copy between the arenas.
  BoundKernel bindKernel(const KernelTable &table, int k);
  /// Fills hostWaits_ (before binding).
  void findHostWaits();
  /// run() and runProfiled(): with `msByKernel` or a trace, each kernel is timed
  /// to the end of its device work.
  void runKernels(std::map<std::string, double> *msByKernel);

  zero::zplan::Plan plan_;
  Device &device_;
  Communicator &comm_;
  /// Hybrid sharding's groups of comm_ (zero-opt --zero-shard-group-size): the
  /// shard group (consecutive ranks) and the replica group (ranks at the same
  /// place of every shard group); none without it.
  /// The buffer holding parameter `name`'s trained value (its MASTER copy where
  /// there is one) and, in a bucket, its member; throws for an unknown name.
  struct TrainedValue {
    int buffer;
    const zero::zplan::BucketMember *member;
  };
  TrainedValue findTrainedValue(const std::string &name) const;
  std::unique_ptr<Communicator> shardComm_, replicaComm_;
  /// hpZ's group (zero-opt --zero-hpz-partition-size): consecutive ranks that
  /// gather the secondary partitions among themselves.
  std::unique_ptr<Communicator> nodeComm_;
  /// Adds the groups' traffic to comm_'s counters (what the log reports).
  void countGroupTraffic();
  char *arena_ = nullptr;
  /// An offloaded optimizer's memory, and the thread that runs its kernels.
  char *hostArena_ = nullptr;
  std::unique_ptr<HostWorker> hostWorker_;
  /// NVMe offload: the worker that runs the transfers, beside hostWorker_.
  std::unique_ptr<HostWorker> nvmeWorker_;
  /// Per kernel: the tasks of this step it waits for on hostWorker_ and on
  /// nvmeWorker_ (1-based, in the order the step gives them; 0: none), found at
  /// bind time from the host bytes each reads and writes (see bindKernels).
  struct HostWaits {
    int64_t host = 0, nvme = 0;
  };
  std::vector<HostWaits> hostWaits_;
  /// Tickets each worker had given before this step began.
  int64_t hostBase_ = 0, nvmeBase_ = 0;
  /// Waits for both workers; throws the first failure (a task's own, rather than
  /// one that was skipped because the other worker failed).
  void drainWorkers();
  std::vector<BoundKernel> kernels_;
  /// Kernel k's kind as profiles and traces name it, spelled once at bind time.
  std::vector<std::string> kernelNames_;
  std::unique_ptr<AsyncCollectives> async_;
  ExecutorOptions options_;
  std::vector<TraceEvent> trace_;
  /// findNonFinite's per-buffer counts, each into one f32 of `nonfiniteCounts_`
  /// (device memory) or of `hostCounts_` (host buffers'): bound only when the
  /// one-launch total finds something (the run then stops), not every run.
  struct FiniteCheck {
    int buffer;
    KernelCall call;
    bool host;
    BoundKernel count; // bound at first use
  };
  std::vector<FiniteCheck> finiteChecks_;
  /// The step as a device graph: not tried yet (the first step runs directly:
  /// libraries load their kernels and NCCL connects outside any capture), warmed
  /// (the next step is captured, on every rank or on none), captured (replayed
  /// from then on), or not possible (run directly).
  enum class GraphState { untried, warmed, captured, direct } graphState_ = GraphState::untried;
  /// What one replay moves (all-gather, reduce-scatter, all-reduce elements): the
  /// collectives the capture queued.
  std::array<int64_t, 3> graphTraffic_{};
  /// And the quantized collectives' bytes one replay sends (wire, full precision).
  std::array<int64_t, 2> graphQuantizedBytes_{};
  /// The device's clock for profiles (made at the first profiled run; null on the
  /// CPU, whose kernels the host's clock times).
  std::unique_ptr<KernelClock> clock_;
  /// The same over all device buffers at once (one launch, into the f32 after
  /// the per-buffer counts) and over all host buffers: each step runs these, and
  /// the per-buffer counts only when one finds something, to name it.
  BoundKernel deviceTotal_, hostTotal_;
  float *nonfiniteCounts_ = nullptr;
  std::vector<float> hostCounts_;
  float hostTotalCount_ = 0;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  // Gathered bytes that become alive at kernel k, and die after it.
  std::vector<int64_t> gatheredFrom_, gatheredUntil_;
  int64_t gatheredPeak_ = 0;
  int64_t copiedToHost_ = 0, copiedToDevice_ = 0;
  std::unique_ptr<NvmeFile> nvme_;
  std::vector<int> nvmeChecked_; // NVMe-held weights findNonFinite checks
};

} // namespace zrt

#endif // ZRT_EXECUTOR_H
