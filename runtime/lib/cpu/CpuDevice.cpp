//===- CpuDevice.cpp - The host as a device -------------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Device.h"
#include "zrt/Error.h"
#include "zrt/ResidentMemory.h"

#include <cstdlib>
#include <cstring>

using namespace zrt;

namespace {

class CpuDevice final : public Device {
public:
  std::string name() const override { return "cpu"; }
  void *allocate(size_t bytes) override {
    // Rounded up so aligned_alloc accepts it; zeroed so no kernel reads garbage.
    size_t rounded = (bytes + 63) / 64 * 64 + 64;
    void *p = std::aligned_alloc(64, rounded);
    ZRT_CHECK(p, "cannot allocate " << bytes << " bytes of host memory");
    std::memset(p, 0, rounded);
    return p;
  }
  void release(void *memory) override { std::free(memory); }
  void upload(void *device, const void *host, size_t bytes) override {
    std::memcpy(device, host, bytes);
  }
  void download(void *host, const void *device, size_t bytes) override {
    std::memcpy(host, device, bytes);
  }
  void synchronize() override {}
  const KernelTable &kernels() const override { return cpuKernels(); }
  int64_t memoryInUse() const override { return residentBytes(); }
  int64_t peakMemoryInUse() const override { return peakResidentBytes(); }
};

} // namespace

std::unique_ptr<Device> zrt::makeCpuDevice() { return std::make_unique<CpuDevice>(); }
