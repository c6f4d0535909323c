//===- Streams.cpp - Emulated devices, streams and events ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Work waits in its stream's queue until the host waits for it; then items run one
// at a time, always from the runnable stream ZERO_CUDA_EMULATOR_ORDER prefers.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

using namespace zero_cuda_emulator::detail;

namespace zero_cuda_emulator::detail {

thread_local int currentDevice = 0;
thread_local cudaError_t lastError = cudaSuccess;

[[noreturn]] void fatal(const std::string &why) {
  std::fprintf(stderr, "cuda-emulator: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(70);
}

cudaError_t complain(cudaError_t error, const std::string &why) {
  std::fprintf(stderr, "cuda-emulator: %s\n", why.c_str());
  return error;
}

constexpr int kMaxDevices = 64;

int deviceCount() {
  static const int n = [] {
    const char *env = std::getenv("ZERO_CUDA_EMULATOR_DEVICES");
    int v = env ? std::atoi(env) : 8;
    return v < 0 ? 0 : v > kMaxDevices ? kMaxDevices : v;
  }();
  return n;
}

} // namespace zero_cuda_emulator::detail

struct CUevent_st {
  const CUstream_st *stream = nullptr; // null until first recorded
  uint64_t ticket = 0;
  /// Recorded in a capture: its ticket counts within the capture's work.
  std::weak_ptr<zero_cuda_emulator::detail::Capture> capture;
  /// With timing: a marker item queued at each record sets this (host
  /// milliseconds) when the stream reaches it; shared, as the item may outlive
  /// the event.
  bool timing = false;
  std::shared_ptr<double> at;
};

namespace {

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

} // namespace

namespace {
/// A synchronization while `s` captures: on a GPU an error that invalidates the
/// capture (the host would wait for work that is only being recorded).
void invalidateCapture(CUstream_st *s, const char *why) {
  if (s->capture && s->capture->invalid.empty())
    s->capture->invalid = why;
}
void invalidateCaptures(DeviceState &d, const char *why) {
  for (CUstream_st *s : d.streams)
    invalidateCapture(s, why);
}
} // namespace

namespace {
/// The calling thread's capture begun in thread-local or global mode, and the
/// process's captures in global mode (any thread's unsafe call invalidates them).
thread_local std::weak_ptr<Capture> threadCapture;
std::mutex globalCapturesMutex;
std::vector<std::weak_ptr<Capture>> globalCaptures;

bool live(const std::shared_ptr<Capture> &c) { return c && !c->ended; }
} // namespace

bool zero_cuda_emulator::detail::captureForbids(const char *call) {
  std::vector<std::shared_ptr<Capture>> hit;
  if (std::shared_ptr<Capture> own = threadCapture.lock(); live(own))
    hit.push_back(own);
  {
    std::lock_guard<std::mutex> lock(globalCapturesMutex);
    for (const std::weak_ptr<Capture> &w : globalCaptures)
      if (std::shared_ptr<Capture> c = w.lock();
          live(c) && std::find(hit.begin(), hit.end(), c) == hit.end())
        hit.push_back(c);
  }
  if (hit.empty())
    return false;
  for (const std::shared_ptr<Capture> &c : hit)
    if (c->invalid.empty())
      c->invalid = std::string(call) + " was called during the capture";
  complain(cudaErrorStreamCaptureUnsupported,
           std::string(call) + ": not permitted while a stream capture is in progress "
                               "(thread-local or global capture mode)");
  return true;
}

void zero_cuda_emulator::detail::drainDevice(int device) {
  DeviceState &d = deviceState(device);
  std::lock_guard<std::mutex> lock(d.mutex);
  invalidateCaptures(d, "the device was synchronized during the capture");
  runUntil(d, [&] { return idle(d); });
}

void zero_cuda_emulator::detail::enqueue(cudaStream_t s, std::function<void()> run) {
  if (!s) { // the legacy default stream waits for, and blocks, all others
    drainDevice(currentDevice);
    run();
    return;
  }
  DeviceState &d = deviceState(s->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (s->capture) { // recorded, not run
    s->capture->items[s].push_back(Item{std::move(run), nullptr, 0});
    return;
  }
  s->items.push_back(Item{std::move(run), nullptr, 0});
  ++s->enqueued;
}


void zero_cuda_emulator::setStreamOrder(bool firstCreatedFirst) {
  streamOrder = firstCreatedFirst;
}

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
  case cudaErrorNotReady:
    return "device not ready";
  case cudaErrorIllegalAddress:
    return "an illegal memory access was encountered";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  case cudaErrorStreamCaptureUnjoined:
    return "capture was not joined";
  }
  return "unknown error";
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
  if (captureForbids("cudaStreamSynchronize"))
    return cudaErrorStreamCaptureUnsupported;
  if (!stream) {
    drainDevice(currentDevice);
    return cudaSuccess;
  }
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (stream->capture) {
    invalidateCapture(stream, "a capturing stream was synchronized");
    return complain(cudaErrorStreamCaptureUnsupported,
                    "cudaStreamSynchronize: the stream is capturing");
  }
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

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  *event = new CUevent_st;
  (*event)->timing = !(flags & cudaEventDisableTiming);
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
  if (event->timing) { // a marker that takes the time when the stream reaches it
    auto at = std::make_shared<double>(-1);
    event->at = at;
    enqueue(stream, [at] {
      *at = std::chrono::duration<double, std::milli>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
    });
  }
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  event->stream = stream;
  event->capture = stream->capture;
  event->ticket = stream->capture ? stream->capture->items[stream].size() : stream->enqueued;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms || !start || !end || !start->timing || !end->timing || !start->at || !end->at)
    return complain(cudaErrorInvalidResourceHandle,
                    "cudaEventElapsedTime: a null or unrecorded event, or one without timing");
  if (*start->at < 0 || *end->at < 0)
    return cudaErrorNotReady; // the streams have not reached them yet
  *ms = (float)(*end->at - *start->at);
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
  std::shared_ptr<Capture> recordedIn = event->capture.lock();
  if (recordedIn && recordedIn->ended)
    return complain(cudaErrorInvalidValue, "cudaStreamWaitEvent: the event was recorded in "
                                           "a capture that has ended");
  if (recordedIn) { // a wait within the capture: the waiting stream joins it
    if (!stream->capture) {
      stream->capture = recordedIn;
      recordedIn->streams.push_back(stream);
    }
    if (stream->capture != recordedIn)
      return complain(cudaErrorStreamCaptureInvalidated,
                      "cudaStreamWaitEvent: an event of another capture");
    recordedIn->items[stream].push_back(Item{nullptr, event->stream, event->ticket});
    return cudaSuccess;
  }
  if (stream->capture) {
    invalidateCapture(stream, "a capturing stream waited for an event recorded outside it");
    return complain(cudaErrorStreamCaptureInvalidated,
                    "cudaStreamWaitEvent: a capturing stream waits for outside work");
  }
  stream->items.push_back(Item{nullptr, event->stream, event->ticket});
  ++stream->enqueued;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (captureForbids("cudaEventSynchronize"))
    return cudaErrorStreamCaptureUnsupported;
  if (!event)
    return complain(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: a null event");
  if (!event->stream) // never recorded: complete
    return cudaSuccess;
  if (!event->capture.expired())
    return complain(cudaErrorStreamCaptureUnsupported,
                    "cudaEventSynchronize: the event was recorded in a capture");
  const CUstream_st *stream = event->stream;
  uint64_t ticket = event->ticket;
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  runUntil(d, [&] { return stream->completed >= ticket; });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (captureForbids("cudaEventQuery"))
    return cudaErrorStreamCaptureUnsupported;
  if (!event)
    return complain(cudaErrorInvalidResourceHandle, "cudaEventQuery: a null event");
  if (!event->stream) // never recorded: complete
    return cudaSuccess;
  if (!event->capture.expired())
    return complain(cudaErrorStreamCaptureUnsupported,
                    "cudaEventQuery: the event was recorded in a capture");
  DeviceState &d = deviceState(event->stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  return event->stream->completed >= event->ticket ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaDeviceSynchronize() {
  if (captureForbids("cudaDeviceSynchronize"))
    return cudaErrorStreamCaptureUnsupported;
  drainDevice(currentDevice);
  return cudaSuccess;
}


struct CUgraph_st {
  std::shared_ptr<Capture> capture;
};
struct CUgraphExec_st {
  std::shared_ptr<const Capture> capture;
};

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (!stream)
    return complain(cudaErrorStreamCaptureUnsupported,
                    "cudaStreamBeginCapture: the legacy default stream");
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (stream->capture)
    return complain(cudaErrorStreamCaptureInvalidated,
                    "cudaStreamBeginCapture: the stream is capturing already");
  stream->capture = std::make_shared<Capture>();
  stream->capture->origin = stream;
  stream->capture->streams.push_back(stream);
  stream->capture->mode = mode;
  if (mode != cudaStreamCaptureModeRelaxed)
    threadCapture = stream->capture;
  if (mode == cudaStreamCaptureModeGlobal) {
    std::lock_guard<std::mutex> lock(globalCapturesMutex);
    globalCaptures.erase(std::remove_if(globalCaptures.begin(), globalCaptures.end(),
                                        [](const std::weak_ptr<Capture> &w) {
                                          return !live(w.lock());
                                        }),
                         globalCaptures.end());
    globalCaptures.push_back(stream->capture);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  if (!stream || !graph || !stream->capture || stream->capture->origin != stream)
    return complain(cudaErrorInvalidValue,
                    "cudaStreamEndCapture: not the stream that began a capture");
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  std::shared_ptr<Capture> c = stream->capture;
  for (CUstream_st *s : c->streams)
    s->capture = nullptr;
  c->ended = true;
  *graph = nullptr;
  // A test's hook: ZERO_CUDA_EMULATOR_FAIL_CAPTURE=N fails every capture on device
  // N, as a capture-unsafe call in a library would.
  if (const char *failOn = std::getenv("ZERO_CUDA_EMULATOR_FAIL_CAPTURE");
      failOn && *failOn && std::atoi(failOn) == stream->device && c->invalid.empty())
    c->invalid = "ZERO_CUDA_EMULATOR_FAIL_CAPTURE names this device";
  if (!c->invalid.empty())
    return complain(cudaErrorStreamCaptureInvalidated,
                    "cudaStreamEndCapture: the capture was invalidated: " + c->invalid);
  // Every stream that joined is joined back: the origin waits for all its work.
  const std::vector<Item> &origin = c->items[stream];
  for (CUstream_st *s : c->streams) {
    if (s == stream)
      continue;
    uint64_t last = c->items[s].size();
    bool joined = std::any_of(origin.begin(), origin.end(), [&](const Item &i) {
      return i.waitStream == s && i.waitTicket >= last;
    });
    if (!joined)
      return complain(cudaErrorStreamCaptureUnjoined,
                      "cudaStreamEndCapture: a stream's captured work is not waited for by "
                      "the capturing stream");
  }
  *graph = new CUgraph_st{c};
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  if (!exec || !graph)
    return complain(cudaErrorInvalidValue, "cudaGraphInstantiate: no graph");
  *exec = new CUgraphExec_st{graph->capture};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec || !stream)
    return complain(cudaErrorInvalidValue,
                    "cudaGraphLaunch: no graph, or the legacy default stream");
  const Capture &c = *exec->capture;
  DeviceState &d = deviceState(stream->device);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (stream->capture)
    return complain(cudaErrorStreamCaptureUnsupported,
                    "cudaGraphLaunch: into a capturing stream (not emulated)");
  // Where each stream's recorded work goes: the origin's on the launch stream.
  auto target = [&](const CUstream_st *s) {
    return s == c.origin ? stream : const_cast<CUstream_st *>(s);
  };
  // The other streams start after the launch stream's earlier work.
  uint64_t launchTicket = stream->enqueued;
  std::map<const CUstream_st *, uint64_t> base;
  for (CUstream_st *s : c.streams) {
    CUstream_st *t = target(s);
    if (t != stream) {
      t->items.push_back(Item{nullptr, stream, launchTicket});
      ++t->enqueued;
    }
    base[s] = t->enqueued;
  }
  for (CUstream_st *s : c.streams) {
    CUstream_st *t = target(s);
    auto it = c.items.find(s);
    if (it == c.items.end())
      continue;
    for (const Item &i : it->second) {
      Item copy = i;
      if (i.waitStream) { // a ticket within the capture, made absolute
        copy.waitStream = target(i.waitStream);
        copy.waitTicket = base.at(i.waitStream) + i.waitTicket;
      }
      t->items.push_back(std::move(copy));
      ++t->enqueued;
    }
  }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
