//===- CudnnLoader.cpp - cuDNN's graph API, loaded when attention uses it ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "CudnnLoader.h"

#ifndef ZERO_CUDA_EMULATOR
#include <dlfcn.h>
#endif

#include <memory>
#include <mutex>

using namespace zrt::cuda;

namespace {

#ifdef ZERO_CUDA_EMULATOR
std::unique_ptr<CudnnApi> load(std::string &) {
  return std::make_unique<CudnnApi>(CudnnApi{
      &cudnnGetVersion, &cudnnGetErrorString, &cudnnGetLastErrorString, &cudnnCreate,
      &cudnnDestroy, &cudnnSetStream, &cudnnBackendCreateDescriptor,
      &cudnnBackendDestroyDescriptor, &cudnnBackendSetAttribute, &cudnnBackendGetAttribute,
      &cudnnBackendFinalize, &cudnnBackendExecute, "linked (emulated)"});
}
#else
/// cuDNN 9's soname (its graph API is stable across 9.x).
constexpr const char *kLibrary = "libcudnn.so.9";

template <typename F> bool resolve(void *handle, const char *name, F &out, std::string &why) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  if (!out)
    why = std::string(kLibrary) + " has no function " + name;
  return out != nullptr;
}

std::unique_ptr<CudnnApi> load(std::string &why) {
  // The library search path: LD_LIBRARY_PATH (utils/gpu-checks.sh adds PyTorch's
  // nvidia/cudnn/lib), the run path, the system's.
  void *handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    why = std::string("cannot load ") + kLibrary + ": " + ::dlerror();
    return nullptr;
  }
  auto api = std::make_unique<CudnnApi>();
  if (!resolve(handle, "cudnnGetVersion", api->getVersion, why) ||
      !resolve(handle, "cudnnGetErrorString", api->getErrorString, why) ||
      !resolve(handle, "cudnnGetLastErrorString", api->getLastErrorString, why) ||
      !resolve(handle, "cudnnCreate", api->create, why) ||
      !resolve(handle, "cudnnDestroy", api->destroy, why) ||
      !resolve(handle, "cudnnSetStream", api->setStream, why) ||
      !resolve(handle, "cudnnBackendCreateDescriptor", api->createDescriptor, why) ||
      !resolve(handle, "cudnnBackendDestroyDescriptor", api->destroyDescriptor, why) ||
      !resolve(handle, "cudnnBackendSetAttribute", api->setAttribute, why) ||
      !resolve(handle, "cudnnBackendGetAttribute", api->getAttribute, why) ||
      !resolve(handle, "cudnnBackendFinalize", api->finalize, why) ||
      !resolve(handle, "cudnnBackendExecute", api->execute, why))
    return nullptr;
  Dl_info info;
  api->library = ::dladdr(reinterpret_cast<void *>(api->create), &info) && info.dli_fname
                     ? info.dli_fname
                     : kLibrary;
  return api; // the handle stays open for the life of the process
}
#endif

} // namespace

const CudnnApi *zrt::cuda::cudnn(std::string &why) {
  static std::once_flag once;
  static std::unique_ptr<CudnnApi> api;
  static std::string reason;
  std::call_once(once, [] { api = load(reason); });
  why = reason;
  return api.get();
}
