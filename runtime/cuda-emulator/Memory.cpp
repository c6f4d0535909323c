//===- Memory.cpp - Emulated device memory and copies ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Allocations are host memory filled with NaN bytes, tracked so that every copy,
// memset, GEMM operand and collective buffer is checked to lie inside one.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

using namespace zero_cuda_emulator::detail;

namespace {

struct Allocation {
  size_t bytes;
  int device;
};
std::mutex memoryMutex;
std::map<uintptr_t, Allocation> allocations;
std::map<uintptr_t, size_t> pinnedAllocations; // cudaMallocHost: host memory

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

} // namespace

int zero_cuda_emulator::detail::deviceOf(const char *call, const void *ptr, size_t bytes) {
  const Allocation *a = findAllocation(ptr, bytes ? bytes : 1);
  if (!a) {
    complain(cudaErrorInvalidValue, std::string(call) + ": " + describe(ptr, bytes) +
                                        " is not inside one device allocation");
    return -1;
  }
  return a->device;
}

namespace {

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

namespace {

/// 256-byte aligned memory filled with NaN bytes (uninitialized reads become NaN),
/// recorded by `record` under the memory lock.
template <typename Record> cudaError_t allocateNaN(void **ptr, size_t bytes, Record record) {
  if (!ptr)
    return cudaErrorInvalidValue;
  size_t rounded = bytes ? (bytes + 255) / 256 * 256 : 256;
  void *p = std::aligned_alloc(256, rounded);
  if (!p)
    return cudaErrorMemoryAllocation;
  std::memset(p, 0xff, rounded);
  std::lock_guard<std::mutex> lock(memoryMutex);
  record((uintptr_t)p);
  *ptr = p;
  return cudaSuccess;
}

} // namespace

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  if (captureForbids("cudaMalloc"))
    return cudaErrorStreamCaptureUnsupported;
  int device = currentDevice;
  return allocateNaN(ptr, bytes, [&](uintptr_t p) {
    allocations[p] = Allocation{bytes, device};
  });
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes) {
  if (captureForbids("cudaMallocHost"))
    return cudaErrorStreamCaptureUnsupported;
  return allocateNaN(ptr, bytes, [&](uintptr_t p) { pinnedAllocations[p] = bytes; });
}

cudaError_t cudaFreeHost(void *ptr) {
  if (captureForbids("cudaFreeHost"))
    return cudaErrorStreamCaptureUnsupported;
  if (!ptr)
    return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(memoryMutex);
    if (!pinnedAllocations.erase((uintptr_t)ptr))
      return complain(cudaErrorInvalidValue, "cudaFreeHost: " + describe(ptr, 0) +
                                                 " is not a cudaMallocHost allocation");
  }
  // Copies still queued may read or write it: a GPU's cudaFreeHost waits too.
  for (int device = 0; device < deviceCount(); ++device)
    drainDevice(device);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  if (!free || !total)
    return cudaErrorInvalidValue;
  // An 80 GiB device; in use: the current device's allocations (a real GPU adds
  // its context and libraries' workspaces).
  const size_t capacity = size_t(80) << 30;
  size_t used = 0;
  std::lock_guard<std::mutex> lock(memoryMutex);
  for (const auto &[start, a] : allocations)
    if (a.device == currentDevice)
      used += (a.bytes + 255) / 256 * 256;
  *total = capacity;
  *free = used < capacity ? capacity - used : 0;
  return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
  if (captureForbids("cudaFree"))
    return cudaErrorStreamCaptureUnsupported;
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
  if (captureForbids("cudaMemcpy"))
    return cudaErrorStreamCaptureUnsupported;
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
  if (checkCopy("cudaMemcpyAsync", dst, src, bytes, kind) < 0)
    return cudaErrorInvalidValue;
  // A copy from or to pageable host memory is synchronous on a GPU: asynchronous
  // copies (the offloaded optimizer's) must use cudaMallocHost memory.
  if (kind != cudaMemcpyDeviceToDevice) {
    const void *host = kind == cudaMemcpyHostToDevice ? src : dst;
    std::lock_guard<std::mutex> lock(memoryMutex);
    uintptr_t p = (uintptr_t)host;
    auto it = pinnedAllocations.upper_bound(p);
    if (it == pinnedAllocations.begin() || p + bytes > std::prev(it)->first + std::prev(it)->second)
      return complain(cudaErrorInvalidValue, "cudaMemcpyAsync: host memory " +
                                                 describe(host, bytes) +
                                                 " is not inside one cudaMallocHost allocation");
  }
  enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}

cudaError_t cudaMemset(void *ptr, int value, size_t bytes) {
  if (captureForbids("cudaMemset"))
    return cudaErrorStreamCaptureUnsupported;
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

