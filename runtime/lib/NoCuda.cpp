//===- NoCuda.cpp - The device entry points of a build without CUDA -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Device.h"
#include "zrt/Error.h"

using namespace zrt;

bool zrt::cudaBackendBuilt() { return false; }
bool zrt::cudaRanksMayBeProcesses() { return false; }
int zrt::cudaDeviceCount() { return 0; }
std::unique_ptr<Device> zrt::makeCudaDevice(int, Communicator &, const CudaOptions &) {
  ZRT_FAIL("this zero-run was built without the CUDA backend");
}
std::vector<std::unique_ptr<Device>> zrt::makeCudaDevicesForThreads(int, const CudaOptions &) {
  ZRT_FAIL("this zero-run was built without the CUDA backend");
}
std::string zrt::loadCudaLibraries() {
  ZRT_FAIL("this zero-run was built without the CUDA backend");
}
