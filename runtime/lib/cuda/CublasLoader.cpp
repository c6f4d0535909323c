//===- CublasLoader.cpp - cuBLAS, loaded when a GPU is used ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "CublasLoader.h"

#include "zrt/Error.h"

#ifndef ZERO_CUDA_EMULATOR
#include <dlfcn.h>
#endif

#include <mutex>

using namespace zrt;
using namespace zrt::cuda;

namespace {

#ifdef ZERO_CUDA_EMULATOR
CublasApi load() {
  return {&cublasCreate,      &cublasDestroy,
          &cublasSetStream,   &cublasSetMathMode,
          &cublasSgemmStridedBatched, &cublasDgemmStridedBatched,
          &cublasGemmStridedBatchedEx, "linked (emulated)"};
}
#else
/// The soname of the CUDA 13 cuBLAS the backend was built against.
constexpr const char *kLibrary = "libcublas.so.13";

template <typename F> void resolve(void *handle, const char *name, F &out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  ZRT_CHECK(out, "cuBLAS (" << kLibrary << ") has no function " << name);
}

CublasApi load() {
  // The library search path: LD_LIBRARY_PATH, zero-run's run path (the toolkit it
  // was built with), the system's.
  void *handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  ZRT_CHECK(handle, "cannot load cuBLAS: " << ::dlerror()
                                           << " (put CUDA 13's libraries on "
                                              "LD_LIBRARY_PATH)");
  CublasApi api;
  // cublas_v2.h maps the handle functions to their _v2 symbols.
  resolve(handle, "cublasCreate_v2", api.create);
  resolve(handle, "cublasDestroy_v2", api.destroy);
  resolve(handle, "cublasSetStream_v2", api.setStream);
  resolve(handle, "cublasSetMathMode", api.setMathMode);
  resolve(handle, "cublasSgemmStridedBatched", api.sgemmStridedBatched);
  resolve(handle, "cublasDgemmStridedBatched", api.dgemmStridedBatched);
  resolve(handle, "cublasGemmStridedBatchedEx", api.gemmStridedBatchedEx);
  Dl_info info;
  api.library = ::dladdr(reinterpret_cast<void *>(api.create), &info) && info.dli_fname
                    ? info.dli_fname
                    : kLibrary;
  return api; // the handle stays open for the life of the process
}
#endif

} // namespace

const CublasApi &zrt::cuda::cublas() {
  static std::once_flag once;
  static CublasApi api;
  std::call_once(once, [] { api = load(); });
  return api;
}
