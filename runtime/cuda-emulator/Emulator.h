//===- Emulator.h - What the emulated CUDA runtime's parts share -*- C++ -*-===//
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
//  - launches: an empty or oversized grid or block fails like on a GPU; threads of
//    a block that uses __syncthreads must all reach the same barriers.
//  - collectives: every rank (a thread driving its own emulated GPU) must issue the
//    same collectives in the same order, with the same count and type.
// Problems the CUDA API would report come back as its error codes (after a line on
// stderr saying why); problems a GPU would only hang or corrupt memory on end the
// process with a message.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_EMULATOR_H
#define ZERO_CUDA_EMULATOR_EMULATOR_H

#include "cuda_runtime.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zero_cuda_emulator::detail {

/// Ends the process (status 70) after `why`: what a GPU would hang or crash on.
[[noreturn]] void fatal(const std::string &why);
/// Says `why` on stderr and returns `error`: what CUDA reports as an error code.
cudaError_t complain(cudaError_t error, const std::string &why);

/// Counts the blocks this host thread has run (a new value for every block).
extern thread_local uint64_t blockSerial;

/// ZERO_CUDA_EMULATOR_DEVICES (default 8, at most 64).
int deviceCount();
/// The calling thread's device (cudaSetDevice) and its last launch error.
extern thread_local int currentDevice;
extern thread_local cudaError_t lastError;

/// Queues `run` on `stream` (the legacy default stream: runs it now, after all
/// queued work of the current device).
void enqueue(cudaStream_t stream, std::function<void()> run);
/// Runs every queued item of `device`.
void drainDevice(int device);

/// The device owning [ptr, ptr + bytes), or -1 (after saying why, naming `call`)
/// if that is not inside one device allocation.
int deviceOf(const char *call, const void *ptr, size_t bytes);

/// Whether the calling thread may not make `call` now: it has a capture in
/// progress begun in thread-local or global mode, or another thread has one in
/// global mode. Then the call fails as CUDA fails it (the caller returns
/// cudaErrorStreamCaptureUnsupported) and the capture is invalidated: its end
/// reports cudaErrorStreamCaptureInvalidated. CUDA runtime API,
/// cudaThreadExchangeStreamCaptureMode: "some actions, such as a call to
/// cudaMalloc, may be unsafe ... stream capture places restrictions on API calls
/// that can be made within or concurrently to a cudaStreamBeginCapture-
/// cudaStreamEndCapture sequence"; CUDA programming guide, "Prohibited and
/// Unhandled Operations": synchronizing or querying a capturing stream, or a
/// device or context with one, is invalid. Unsafe here: allocation and freeing
/// (device and pinned host), blocking copies and memsets, device, stream and
/// event synchronization, event queries.
bool captureForbids(const char *call);

/// One queued operation: work to run, or a wait until `waitStream` has completed
/// `waitTicket` items.
struct Item {
  std::function<void()> run;
  const CUstream_st *waitStream = nullptr;
  uint64_t waitTicket = 0;
};

} // namespace zero_cuda_emulator::detail

namespace zero_cuda_emulator::detail {
/// A capture in progress (cudaStreamBeginCapture), then a graph: per stream, the
/// work recorded; a wait names its stream and a ticket counted within the capture.
struct Capture {
  CUstream_st *origin = nullptr;
  std::vector<CUstream_st *> streams; // the origin, then the streams that joined
  std::map<const CUstream_st *, std::vector<Item>> items;
  std::string invalid; // why the capture can no longer end (empty: it can)
  bool ended = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
};
} // namespace zero_cuda_emulator::detail

struct CUstream_st {
  int device = 0;
  std::deque<zero_cuda_emulator::detail::Item> items;
  uint64_t enqueued = 0, completed = 0;
  std::shared_ptr<zero_cuda_emulator::detail::Capture> capture; // while capturing
};

#endif // ZERO_CUDA_EMULATOR_EMULATOR_H
