//===- cuda_runtime.h - The CUDA runtime API, emulated on the host -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only (zero-run-cuda-emulated): the subset of the CUDA runtime that
// runtime/lib/cuda uses, run on the host, so CI checks the CUDA backend's kernels,
// binders and stream/event ordering without a GPU. Work is queued per stream and
// runs only when the host must wait for it, one item at a time from the stream
// ZERO_CUDA_EMULATOR_ORDER prefers ("first" or "last" created), so a missing
// event between streams shows up as wrong numbers. See ../Emulator.h.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_CUDA_RUNTIME_H
#define ZERO_CUDA_EMULATOR_CUDA_RUNTIME_H

#include <cstddef>
#include <cstdint>
#include <functional>

#define ZERO_CUDA_EMULATOR 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Shared by a block's threads: they are fibers of one host thread, blocks run one
// after another, and each rank (host thread) has its own.
#define __shared__ static thread_local

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
/// Float arithmetic rounded to nearest, never fused (the host's IEEE operations).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }

/// The emulated thread's coordinates (set before each emulated thread runs).
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureUnjoined = 904,
};
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};
constexpr unsigned cudaEventDefault = 0;
constexpr unsigned cudaEventDisableTiming = 2;

struct CUstream_st;
struct CUevent_st;
using cudaStream_t = CUstream_st *;
using cudaEvent_t = CUevent_st *;
struct CUgraph_st;
struct CUgraphExec_st;
using cudaGraph_t = CUgraph_st *;
using cudaGraphExec_t = CUgraphExec_st *;

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetLastError();
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaMalloc(void **ptr, size_t bytes);
template <typename T> cudaError_t cudaMalloc(T **ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(ptr), bytes);
}
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocHost(void **ptr, size_t bytes);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void *ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream);
cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
/// Milliseconds between two recorded timing events, once the stream work before
/// each has run (cudaErrorNotReady before): on the emulator, the host's clock when
/// the emulated streams reached them.
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
/// cudaSuccess once the stream has reached the event, else cudaErrorNotReady.
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaDeviceSynchronize();
/// Stream capture: work queued on the stream, and on every stream that waits for
/// an event recorded in the capture (which joins it), is recorded instead of
/// queued. End capture needs every joined stream waited for by the origin; a
/// synchronization of a capturing stream or device invalidates the capture, and so
/// does, in thread-local or global mode, any capture-unsafe call (allocation,
/// freeing, blocking copies, synchronization, event queries: Emulator.h's
/// captureForbids), which fails with cudaErrorStreamCaptureUnsupported. A
/// launch queues the recorded work again on the same streams (the origin's on the
/// launch stream), after the launch stream's earlier work, with its waits.
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

/// Only in kernels launched with launchWithBarriers.
void __syncthreads();

/// Sequential stand-in: emulated threads never run concurrently.
inline float atomicAdd(float *address, float value) {
  float old = *address;
  *address = old + value;
  return old;
}
inline double atomicAdd(double *address, double value) {
  double old = *address;
  *address = old + value;
  return old;
}
inline int atomicAdd(int *address, int value) {
  int old = *address;
  *address = old + value;
  return old;
}
inline unsigned short atomicCAS(unsigned short *address, unsigned short compare,
                                unsigned short value) {
  unsigned short old = *address;
  if (old == compare)
    *address = value;
  return old;
}

namespace zero_cuda_emulator {
/// Queues `thread` on `stream`, to run for every thread of a grid of `grid`
/// blocks of `block` threads; a bad configuration is the launch's error
/// (cudaGetLastError), as on a GPU.
void launch(cudaStream_t stream, int64_t grid, int block, std::function<void()> thread);
/// The same for kernels that call __syncthreads: each emulated thread of a block
/// runs on its own fiber, and all of them must reach the same barriers.
void launchWithBarriers(cudaStream_t stream, int64_t grid, int block,
                        std::function<void()> thread);
/// Whether [ptr, ptr + bytes) lies in one live device allocation.
bool isDeviceMemory(const void *ptr, size_t bytes);
/// Which runnable stream runs first (tests; else ZERO_CUDA_EMULATOR_ORDER).
void setStreamOrder(bool firstCreatedFirst);
/// Fails the next cudaGetLastError with `error`, after printing `why`.
void setLaunchError(cudaError_t error, const char *why);
} // namespace zero_cuda_emulator

#endif // ZERO_CUDA_EMULATOR_CUDA_RUNTIME_H
