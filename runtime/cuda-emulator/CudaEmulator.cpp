//===- CudaEmulator.cpp - CUDA, cuBLAS and NCCL run on the host -----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only. What it checks that a plain host build of the kernels would
// not:
//  - ordering: work is queued per stream and runs only when the host waits, one
//    item at a time from the runnable stream that ZERO_CUDA_EMULATOR_ORDER prefers
//    ("first": the first-created, so the compute stream runs ahead; "last": the
//    communication stream runs ahead). A collective that does not wait for the
//    kernels that fill its input, or a kernel that reads a collective's output
//    without waiting, then reads stale data in one of the two orders.
//  - memory: fresh allocations are filled with NaN bytes (0xff), as a GPU's are
//    uninitialized; copies, memsets, GEMMs and collectives must stay inside live
//    device allocations, and copy kinds must match the pointers.
//  - launches: an empty or oversized grid or block fails like on a GPU.
//  - collectives: every rank (a thread driving its own emulated GPU) must issue the
//    same collectives in the same order, with the same count and type.
// Problems the CUDA API would report come back as its error codes (after a line on
// stderr saying why); problems a GPU would only hang or corrupt memory on end the
// process with a message.
//
//===----------------------------------------------------------------------===//

#include "cublas_v2.h"
#include "nccl.h"

#include <cblas.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

//===----------------------------------------------------------------------===//
// Devices, streams and events
//===----------------------------------------------------------------------===//

namespace {

constexpr int kMaxDevices = 64;

[[noreturn]] void fatal(const std::string &why) {
  std::fprintf(stderr, "cuda-emulator: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(70);
}

cudaError_t complain(cudaError_t error, const std::string &why) {
  std::fprintf(stderr, "cuda-emulator: %s\n", why.c_str());
  return error;
}

int deviceCount() {
  static const int n = [] {
    const char *env = std::getenv("ZERO_CUDA_EMULATOR_DEVICES");
    int v = env ? std::atoi(env) : 8;
    return v < 0 ? 0 : v > kMaxDevices ? kMaxDevices : v;
  }();
  return n;
}

/// True: prefer the first-created runnable stream; false: the last-created.
std::atomic<int> streamOrder{-1}; // -1: not yet read from the environment
bool preferFirstStream() {
  if (streamOrder.load() < 0) {
    const char *env = std::getenv("ZERO_CUDA_EMULATOR_ORDER");
    std::string v = env ? env : "first";
    if (v != "first" && v != "last")
      fatal("ZERO_CUDA_EMULATOR_ORDER must be 'first' or 'last', not '" + v + "'");
    streamOrder = v == "first";
  }
  return streamOrder.load() == 1;
}

thread_local int currentDevice = 0;
thread_local cudaError_t lastError = cudaSuccess;

/// One queued operation: work to run, or a wait until `waitStream` has completed
/// `waitTicket` items.
struct Item {
  std::function<void()> run;
  const CUstream_st *waitStream = nullptr;
  uint64_t waitTicket = 0;
};

} // namespace

struct CUstream_st {
  int device = 0;
  std::deque<Item> items;
  uint64_t enqueued = 0, completed = 0;
};

struct CUevent_st {
  const CUstream_st *stream = nullptr; // null until first recorded
  uint64_t ticket = 0;
};

namespace {

struct DeviceState {
  std::mutex mutex;
  std::vector<CUstream_st *> streams; // in creation order
};

DeviceState &deviceState(int device) {
  static DeviceState states[kMaxDevices];
  return states[device];
}

bool runnable(const CUstream_st *s) {
  if (s->items.empty())
    return false;
  const Item &item = s->items.front();
  return !item.waitStream || item.waitStream->completed >= item.waitTicket;
}

/// Runs one item of `device` (its mutex held), from the preferred runnable stream.
void step(DeviceState &d) {
  CUstream_st *pick = nullptr;
  for (CUstream_st *s : d.streams)
    if (runnable(s) && (!pick || !preferFirstStream()))
      pick = s;
  if (!pick)
    fatal("every stream with queued work waits for an event that cannot complete");
  Item item = std::move(pick->items.front());
  pick->items.pop_front();
  if (item.run)
    item.run();
  ++pick->completed;
}

bool idle(const DeviceState &d) {
  for (const CUstream_st *s : d.streams)
    if (!s->items.empty())
      return false;
  return true;
}

/// Runs the device's queued work until `done` holds (its mutex held).
template <typename Done> void runUntil(DeviceState &d, Done done) {
  while (!done())
    step(d);
}

void drainDevice(int device) {
  DeviceState &d = deviceState(device);
  std::lock_guard<std::mutex> lock(d.mutex);
  runUntil(d, [&] { return idle(d); });
}

void enqueue(cudaStream_t s, std::function<void()> run) {
  if (!s) { // the legacy default stream waits for, and blocks, all others
    drainDevice(currentDevice);
    run();
    return;
  }
  DeviceState &d = deviceState(s->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  s->items.push_back(Item{std::move(run), nullptr, 0});
  ++s->enqueued;
}

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

struct Allocation {
  size_t bytes;
  int device;
};
std::mutex memoryMutex;
std::map<uintptr_t, Allocation> allocations;

/// The allocation holding [ptr, ptr + bytes), or null.
const Allocation *findAllocation(const void *ptr, size_t bytes, uintptr_t *start = nullptr) {
  std::lock_guard<std::mutex> lock(memoryMutex);
  uintptr_t p = (uintptr_t)ptr;
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin())
    return nullptr;
  --it;
  if (p < it->first || p + bytes > it->first + it->second.bytes)
    return nullptr;
  if (start)
    *start = it->first;
  return &it->second;
}

std::string describe(const void *ptr, size_t bytes) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%p, +%zu bytes)", ptr, bytes);
  return buf;
}

/// The device owning [ptr, ptr + bytes), or -1 (after saying why) if it is not
/// device memory.
int deviceOf(const char *call, const void *ptr, size_t bytes) {
  const Allocation *a = findAllocation(ptr, bytes ? bytes : 1);
  if (!a) {
    complain(cudaErrorInvalidValue, std::string(call) + ": " + describe(ptr, bytes) +
                                        " is not inside one device allocation");
    return -1;
  }
  return a->device;
}

bool isHostMemory(const char *call, const void *ptr) {
  if (!findAllocation(ptr, 1))
    return true;
  complain(cudaErrorInvalidValue,
           std::string(call) + ": " + describe(ptr, 0) + " is device memory, not host");
  return false;
}

} // namespace

bool zero_cuda_emulator::isDeviceMemory(const void *ptr, size_t bytes) {
  return findAllocation(ptr, bytes ? bytes : 1) != nullptr;
}

void zero_cuda_emulator::setStreamOrder(bool firstCreatedFirst) {
  streamOrder = firstCreatedFirst;
}

void zero_cuda_emulator::setLaunchError(cudaError_t error, const char *why) {
  complain(error, why);
  lastError = error;
}

namespace {

bool validLaunch(int64_t grid, int block) {
  if (grid >= 1 && grid <= 0x7fffffff && block >= 1 && block <= 1024)
    return true;
  zero_cuda_emulator::setLaunchError(cudaErrorInvalidConfiguration,
                                     ("invalid launch: " + std::to_string(grid) +
                                      " blocks of " + std::to_string(block) + " threads")
                                         .c_str());
  return false;
}

//===----------------------------------------------------------------------===//
// Fibers: a block's threads, switched at __syncthreads
//===----------------------------------------------------------------------===//

#if defined(__x86_64__)
// A switch saves the callee-saved registers on the current stack and resumes the
// other stack: tens of nanoseconds, where swapcontext makes a system call (blocks
// of 256 threads meet at many barriers).
extern "C" void zeroEmulatorSwitch(void **save, void *resume);
asm(R"(
  .text
  .globl zeroEmulatorSwitch
  .type zeroEmulatorSwitch, @function
zeroEmulatorSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size zeroEmulatorSwitch, .-zeroEmulatorSwitch
)");

/// A suspended stack: where zeroEmulatorSwitch left it.
struct Context {
  void *sp = nullptr;
  /// A fresh context on `stack` that starts in `entry` (which never returns).
  void start(std::vector<char> &stack, void (*entry)()) {
    uintptr_t top = ((uintptr_t)stack.data() + stack.size()) & ~(uintptr_t)15;
    void **frame = (void **)(top - 64); // six registers, the return address, padding
    for (int i = 0; i < 6; ++i)
      frame[i] = nullptr;
    frame[6] = (void *)entry; // at entry the stack is 8 past 16-aligned, as after a call
    sp = frame;
  }
};
void switchContext(Context &from, Context &to) { zeroEmulatorSwitch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
  void start(std::vector<char> &stack, void (*entry)()) {
    getcontext(&uc);
    uc.uc_stack.ss_sp = stack.data();
    uc.uc_stack.ss_size = stack.size();
    uc.uc_link = nullptr;
    makecontext(&uc, entry, 0);
  }
};
void switchContext(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }
#endif

/// The threads of one block as fibers; __syncthreads switches back to run().
class FiberBlock {
public:
  /// Runs `thread` for each of `block` threads until all have returned.
  void run(int block, const std::function<void()> &thread) {
    if ((int)fibers_.size() < block)
      fibers_.resize(block);
    body_ = &thread;
    for (int t = 0; t < block; ++t) {
      Fiber &f = fibers_[t];
      if (f.stack.empty())
        f.stack.resize(kStackBytes);
      f.context.start(f.stack, &FiberBlock::entry);
      f.done = false;
      f.barriers = 0;
    }
    FiberBlock *outer = active;
    active = this;
    for (int live = block; live > 0;) {
      live = 0;
      for (int t = 0; t < block; ++t) {
        if (fibers_[t].done)
          continue;
        current_ = t;
        threadIdx = uint3{(unsigned)t, 0, 0};
        switchContext(scheduler_, fibers_[t].context);
        live += !fibers_[t].done;
      }
      for (int t = 1; t < block; ++t)
        if (fibers_[t].barriers != fibers_[0].barriers)
          fatal("threads 0 and " + std::to_string(t) + " of block " +
                std::to_string(blockIdx.x) + " reached " +
                std::to_string(fibers_[0].barriers) + " and " +
                std::to_string(fibers_[t].barriers) +
                " __syncthreads (a barrier some threads skip)");
    }
    active = outer;
  }

  void barrier() {
    Fiber &f = fibers_[current_];
    ++f.barriers;
    switchContext(f.context, scheduler_);
  }

  static thread_local FiberBlock *active;

private:
  static constexpr size_t kStackBytes = 64 * 1024;
  struct Fiber {
    Context context;
    std::vector<char> stack;
    bool done = false;
    int barriers = 0;
  };

  [[noreturn]] static void entry() {
    FiberBlock &b = *active;
    (*b.body_)();
    Fiber &f = b.fibers_[b.current_];
    f.done = true;
    switchContext(f.context, b.scheduler_); // never resumed
    __builtin_unreachable();
  }

  std::vector<Fiber> fibers_;
  Context scheduler_;
  const std::function<void()> *body_ = nullptr;
  int current_ = 0;
};
thread_local FiberBlock *FiberBlock::active = nullptr;

} // namespace

void __syncthreads() {
  if (!FiberBlock::active)
    fatal("__syncthreads in a kernel launched without barriers (launchWithBarriers)");
  FiberBlock::active->barrier();
}

void zero_cuda_emulator::launch(cudaStream_t stream, int64_t grid, int block,
                                std::function<void()> thread) {
  if (!validLaunch(grid, block))
    return;
  enqueue(stream, [grid, block, thread = std::move(thread)] {
    gridDim = dim3{(unsigned)grid, 1, 1};
    blockDim = dim3{(unsigned)block, 1, 1};
    for (int64_t b = 0; b < grid; ++b)
      for (int t = 0; t < block; ++t) {
        blockIdx = uint3{(unsigned)b, 0, 0};
        threadIdx = uint3{(unsigned)t, 0, 0};
        thread();
      }
  });
}

void zero_cuda_emulator::launchWithBarriers(cudaStream_t stream, int64_t grid, int block,
                                            std::function<void()> thread) {
  if (!validLaunch(grid, block))
    return;
  enqueue(stream, [grid, block, thread = std::move(thread)] {
    static thread_local FiberBlock fibers;
    gridDim = dim3{(unsigned)grid, 1, 1};
    blockDim = dim3{(unsigned)block, 1, 1};
    for (int64_t b = 0; b < grid; ++b) {
      blockIdx = uint3{(unsigned)b, 0, 0};
      fibers.run(block, thread);
    }
  });
}

//===----------------------------------------------------------------------===//
// The CUDA runtime API
//===----------------------------------------------------------------------===//

cudaError_t cudaGetDeviceCount(int *count) {
  *count = deviceCount();
  return *count ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= deviceCount())
    return cudaErrorInvalidDevice;
  currentDevice = device;
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  cudaError_t e = lastError;
  lastError = cudaSuccess;
  return e;
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorIllegalAddress:
    return "an illegal memory access was encountered";
  }
  return "unknown error";
}

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  if (!ptr)
    return cudaErrorInvalidValue;
  size_t rounded = (bytes + 255) / 256 * 256;
  void *p = std::aligned_alloc(256, rounded ? rounded : 256);
  if (!p)
    return cudaErrorMemoryAllocation;
  std::memset(p, 0xff, rounded ? rounded : 256); // uninitialized reads become NaN
  std::lock_guard<std::mutex> lock(memoryMutex);
  allocations[(uintptr_t)p] = Allocation{bytes, currentDevice};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
  if (!ptr)
    return cudaSuccess;
  int device;
  {
    std::lock_guard<std::mutex> lock(memoryMutex);
    auto it = allocations.find((uintptr_t)ptr);
    if (it == allocations.end())
      return complain(cudaErrorInvalidValue,
                      "cudaFree: " + describe(ptr, 0) + " is not an allocation's start");
    device = it->second.device;
  }
  drainDevice(device); // cudaFree waits for the device's work
  std::lock_guard<std::mutex> lock(memoryMutex);
  allocations.erase((uintptr_t)ptr);
  std::free(ptr);
  return cudaSuccess;
}

namespace {

/// Checks that a copy's pointers are what `kind` says; returns the device whose
/// work the copy is ordered after, or -1.
int checkCopy(const char *call, void *dst, const void *src, size_t bytes,
              cudaMemcpyKind kind) {
  switch (kind) {
  case cudaMemcpyHostToDevice:
    return isHostMemory(call, src) ? deviceOf(call, dst, bytes) : -1;
  case cudaMemcpyDeviceToHost:
    return isHostMemory(call, dst) ? deviceOf(call, src, bytes) : -1;
  case cudaMemcpyDeviceToDevice: {
    int a = deviceOf(call, dst, bytes), b = deviceOf(call, src, bytes);
    return a < 0 || b < 0 ? -1 : a;
  }
  default:
    complain(cudaErrorInvalidValue, std::string(call) + ": unsupported copy kind");
    return -1;
  }
}

} // namespace

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  if (!bytes)
    return cudaSuccess;
  int device = checkCopy("cudaMemcpy", dst, src, bytes, kind);
  if (device < 0)
    return cudaErrorInvalidValue;
  drainDevice(device);
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (!bytes)
    return cudaSuccess;
  if (kind != cudaMemcpyDeviceToDevice)
    return complain(cudaErrorInvalidValue,
                    "cudaMemcpyAsync: only device-to-device copies are emulated");
  if (checkCopy("cudaMemcpyAsync", dst, src, bytes, kind) < 0)
    return cudaErrorInvalidValue;
  enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}

cudaError_t cudaMemset(void *ptr, int value, size_t bytes) {
  if (!bytes)
    return cudaSuccess;
  int device = deviceOf("cudaMemset", ptr, bytes);
  if (device < 0)
    return cudaErrorInvalidValue;
  drainDevice(device);
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream) {
  if (!bytes)
    return cudaSuccess;
  if (deviceOf("cudaMemsetAsync", ptr, bytes) < 0)
    return cudaErrorInvalidValue;
  enqueue(stream, [=] { std::memset(ptr, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  auto *s = new CUstream_st;
  s->device = currentDevice;
  DeviceState &d = deviceState(s->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  d.streams.push_back(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!stream) {
    drainDevice(currentDevice);
    return cudaSuccess;
  }
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  runUntil(d, [&] { return stream->items.empty(); });
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream)
    return cudaErrorInvalidResourceHandle;
  // Queued work still completes (as on a GPU), here before the stream goes.
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  runUntil(d, [&] { return stream->items.empty(); });
  for (CUstream_st *s : d.streams)
    for (const Item &item : s->items)
      if (item.waitStream == stream)
        fatal("a stream was destroyed while another still waits for it");
  d.streams.erase(std::find(d.streams.begin(), d.streams.end(), stream));
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  *event = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event; // waits already queued hold the stream and ticket, not the event
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event || !stream)
    return complain(cudaErrorInvalidResourceHandle,
                    "cudaEventRecord: a null event, or the legacy default stream");
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  event->stream = stream;
  event->ticket = stream->enqueued;
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (!event || !stream)
    return complain(cudaErrorInvalidResourceHandle,
                    "cudaStreamWaitEvent: a null event, or the legacy default stream");
  if (!event->stream) // never recorded: nothing to wait for
    return cudaSuccess;
  if (event->stream->device != stream->device)
    fatal("cudaStreamWaitEvent across devices is not emulated");
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  stream->items.push_back(Item{nullptr, event->stream, event->ticket});
  ++stream->enqueued;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  drainDevice(currentDevice);
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// cuBLAS
//===----------------------------------------------------------------------===//

struct cublasContext {
  cudaStream_t stream = nullptr;
};

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t) {
  return handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

namespace {

/// Whether a column-major `rows` x `cols` operand with leading dimension `ld`,
/// `batch` of them `stride` elements apart, is valid and inside device memory.
bool operandOk(const char *which, const void *p, int rows, int cols, int ld,
               long long stride, int batch, size_t size) {
  if (ld < std::max(1, rows)) {
    complain(cudaErrorInvalidValue, std::string("GEMM: ") + which + "'s leading dimension " +
                                        std::to_string(ld) + " < its rows " +
                                        std::to_string(rows));
    return false;
  }
  if (!rows || !cols)
    return true;
  size_t extent = ((size_t)(cols - 1) * ld + rows) * size;
  std::string what = std::string("GEMM operand ") + which;
  return deviceOf(what.c_str(), p, extent) >= 0 &&
         deviceOf(what.c_str(), (const char *)p + (size_t)(batch - 1) * stride * size,
                  extent) >= 0;
}

template <typename T, typename Blas>
cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                    int n, int k, const T *alpha, const T *a, int lda, long long strideA,
                    const T *b, int ldb, long long strideB, const T *beta, T *c, int ldc,
                    long long strideC, int batch, Blas blas) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || strideA < 0 || strideB < 0 || strideC < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!m || !n || !batch)
    return CUBLAS_STATUS_SUCCESS;
  bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  if (!operandOk("A", a, na ? m : k, na ? k : m, lda, strideA, batch, sizeof(T)) ||
      !operandOk("B", b, nb ? k : n, nb ? n : k, ldb, strideB, batch, sizeof(T)) ||
      !operandOk("C", c, m, n, ldc, strideC, batch, sizeof(T)))
    return CUBLAS_STATUS_INVALID_VALUE;
  T al = *alpha, be = *beta; // host pointer mode: read at the call
  enqueue(handle->stream, [=] {
    for (int i = 0; i < batch; ++i)
      blas(CblasColMajor, na ? CblasNoTrans : CblasTrans, nb ? CblasNoTrans : CblasTrans, m,
           n, k, al, a + i * strideA, lda, b + i * strideB, ldb, be, c + i * strideC, ldc);
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const float *alpha, const float *a, int lda, const float *b,
                           int ldb, const float *beta, float *c, int ldc) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
              1, cblas_sgemm);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const double *alpha, const double *a, int lda, const double *b,
                           int ldb, const double *beta, double *c, int ldc) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
              1, cblas_dgemm);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         long long strideA, const float *b, int ldb,
                                         long long strideB, const float *beta, float *c,
                                         int ldc, long long strideC, int batch) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta,
              c, ldc, strideC, batch, cblas_sgemm);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const double *alpha, const double *a, int lda,
                                         long long strideA, const double *b, int ldb,
                                         long long strideB, const double *beta, double *c,
                                         int ldc, long long strideC, int batch) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta,
              c, ldc, strideC, batch, cblas_dgemm);
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

namespace {

enum class Kind { AllGather, ReduceScatter, AllReduce };

/// What one rank brings to a collective.
struct Post {
  Kind kind;
  const void *send;
  size_t count; // elements each rank sends (all-gather), receives (reduce-scatter),
                // or both (all-reduce)
  ncclDataType_t type;
};

/// The ranks of one communicator, meeting at each collective.
struct Clique {
  explicit Clique(int n) : ranks(n), posts(n) {}
  int ranks;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Post> posts;
  int arrived = 0, joined = 0;
  uint64_t generation = 0, collectives = 0;
};

/// Waits (mutex held) until every rank of `c` has arrived.
void meet(std::unique_lock<std::mutex> &lock, Clique &c, int rank) {
  uint64_t generation = c.generation;
  if (++c.arrived == c.ranks) {
    c.arrived = 0;
    ++c.generation;
    c.changed.notify_all();
    return;
  }
  if (!c.changed.wait_for(lock, std::chrono::seconds(60),
                          [&] { return c.generation != generation; }))
    fatal("NCCL rank " + std::to_string(rank) + " waited 60 s for the others at collective #" +
          std::to_string(c.collectives) +
          " (a rank stopped, or the ranks issue different collectives)");
}

size_t typeSize(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  default:
    return 8;
  }
}

template <typename T>
void sumInto(std::vector<char> &out, const std::vector<Post> &posts, size_t offset,
             size_t count) {
  T *o = reinterpret_cast<T *>(out.data());
  for (size_t i = 0; i < count; ++i) {
    T acc = static_cast<const T *>(posts[0].send)[offset + i];
    for (size_t r = 1; r < posts.size(); ++r)
      acc += static_cast<const T *>(posts[r].send)[offset + i];
    o[i] = acc;
  }
}

void sumInto(std::vector<char> &out, const std::vector<Post> &posts, size_t offset,
             size_t count, ncclDataType_t type) {
  switch (type) {
  case ncclFloat32:
    return sumInto<float>(out, posts, offset, count);
  case ncclFloat64:
    return sumInto<double>(out, posts, offset, count);
  case ncclInt32:
    return sumInto<int32_t>(out, posts, offset, count);
  case ncclInt64:
    return sumInto<int64_t>(out, posts, offset, count);
  default:
    fatal("NCCL sums of type " + std::to_string((int)type) + " are not emulated");
  }
}

} // namespace

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0, device = 0;
};

namespace {

/// Runs rank `comm`'s part of a collective (on its stream, in order).
void collective(ncclComm *comm, Post post, void *recv) {
  Clique &c = *comm->clique;
  size_t size = typeSize(post.type), n = (size_t)c.ranks;
  size_t outCount = post.kind == Kind::AllGather ? post.count * n : post.count;
  std::vector<char> out(outCount * size);
  std::unique_lock<std::mutex> lock(c.mutex);
  c.posts[comm->rank] = post;
  meet(lock, c, comm->rank);
  for (const Post &p : c.posts)
    if (p.kind != post.kind || p.count != post.count || p.type != post.type)
      fatal("NCCL ranks disagree at collective #" + std::to_string(c.collectives) +
            ": rank " + std::to_string(comm->rank) + " issued kind " +
            std::to_string((int)post.kind) + " of " + std::to_string(post.count) +
            " elements, another kind " + std::to_string((int)p.kind) + " of " +
            std::to_string(p.count));
  lock.unlock();
  // Every rank's send buffer stays put until all have read it (the second meeting).
  if (post.kind == Kind::AllGather) {
    for (size_t r = 0; r < n; ++r)
      std::memcpy(out.data() + r * post.count * size, c.posts[r].send, post.count * size);
  } else {
    size_t offset = post.kind == Kind::ReduceScatter ? comm->rank * post.count : 0;
    sumInto(out, c.posts, offset, post.count, post.type);
  }
  lock.lock();
  meet(lock, c, comm->rank);
  if (comm->rank == 0)
    ++c.collectives;
  lock.unlock();
  std::memcpy(recv, out.data(), out.size());
}

ncclResult_t enqueueCollective(const char *call, ncclComm_t comm, cudaStream_t stream,
                               Post post, void *recv) {
  if (!comm || !stream)
    return ncclInvalidArgument;
  if (stream->device != comm->device) {
    complain(cudaErrorInvalidValue, std::string(call) + ": the stream is on device " +
                                        std::to_string(stream->device) +
                                        ", the communicator's GPU is " +
                                        std::to_string(comm->device));
    return ncclInvalidUsage;
  }
  size_t size = typeSize(post.type), n = (size_t)comm->clique->ranks;
  size_t sendCount = post.kind == Kind::ReduceScatter ? post.count * n : post.count;
  size_t recvCount = post.kind == Kind::AllGather ? post.count * n : post.count;
  if (!post.count)
    return ncclSuccess;
  if (deviceOf(call, post.send, sendCount * size) < 0 ||
      deviceOf(call, recv, recvCount * size) < 0)
    return ncclInvalidArgument;
  enqueue(stream, [comm, post, recv] { collective(comm, post, recv); });
  return ncclSuccess;
}

std::mutex idMutex;
std::map<std::string, std::shared_ptr<Clique>> cliquesById;

} // namespace

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  default:
    return "internal error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static std::mutex m;
  static uint64_t next = 0;
  std::lock_guard<std::mutex> lock(m);
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "emulated-%llu",
                (unsigned long long)next++);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return ncclInvalidArgument;
  std::shared_ptr<Clique> clique;
  {
    std::lock_guard<std::mutex> lock(idMutex);
    std::shared_ptr<Clique> &slot = cliquesById[std::string(id.internal, sizeof id.internal)];
    if (!slot)
      slot = std::make_shared<Clique>(ranks);
    clique = slot;
  }
  std::unique_lock<std::mutex> lock(clique->mutex);
  if (clique->ranks != ranks)
    return ncclInvalidUsage;
  ++clique->joined;
  clique->changed.notify_all();
  // Like NCCL, wait for every rank; only ranks that are threads of this process
  // can arrive here.
  if (!clique->changed.wait_for(lock, std::chrono::seconds(10),
                                [&] { return clique->joined == ranks; })) {
    std::fprintf(stderr, "cuda-emulator: ncclCommInitRank: %d of %d ranks joined in 10 s "
                         "(ranks in other processes, as under mpirun, are not emulated)\n",
                 clique->joined, ranks);
    return ncclInvalidUsage;
  }
  *comm = new ncclComm{clique, rank, currentDevice};
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ranks, const int *devices) {
  if (ranks < 1)
    return ncclInvalidArgument;
  auto clique = std::make_shared<Clique>(ranks);
  clique->joined = ranks;
  for (int r = 0; r < ranks; ++r) {
    int device = devices ? devices[r] : r;
    if (device < 0 || device >= deviceCount())
      return ncclInvalidArgument;
    comms[r] = new ncclComm{clique, r, device};
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendCount,
                           ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  return enqueueCollective("ncclAllGather", comm, stream,
                           Post{Kind::AllGather, send, sendCount, type}, recv);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvCount,
                               ncclDataType_t type, ncclRedOp_t, ncclComm_t comm,
                               cudaStream_t stream) {
  return enqueueCollective("ncclReduceScatter", comm, stream,
                           Post{Kind::ReduceScatter, send, recvCount, type}, recv);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t, ncclComm_t comm, cudaStream_t stream) {
  return enqueueCollective("ncclAllReduce", comm, stream,
                           Post{Kind::AllReduce, send, count, type}, recv);
}
