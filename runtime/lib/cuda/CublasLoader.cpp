//===- CublasLoader.cpp - cuBLASLt, loaded when a GPU is used -------------===//
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
CublasLtApi load() {
  return {&cublasLtCreate,
          &cublasLtDestroy,
          &cublasLtMatmulDescCreate,
          &cublasLtMatmulDescDestroy,
          &cublasLtMatmulDescSetAttribute,
          &cublasLtMatrixLayoutCreate,
          &cublasLtMatrixLayoutDestroy,
          &cublasLtMatrixLayoutSetAttribute,
          &cublasLtMatmulPreferenceCreate,
          &cublasLtMatmulPreferenceDestroy,
          &cublasLtMatmulPreferenceSetAttribute,
          &cublasLtMatmulAlgoGetHeuristic,
          &cublasLtMatmul,
          "linked (emulated)"};
}
#else
/// The soname of the CUDA 13 cuBLASLt the backend was built against.
constexpr const char *kLibrary = "libcublasLt.so.13";

template <typename F> void resolve(void *handle, const char *name, F &out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  ZRT_CHECK(out, "cuBLASLt (" << kLibrary << ") has no function " << name);
}

CublasLtApi load() {
  // The library search path: LD_LIBRARY_PATH, zero-run's run path (the toolkit it
  // was built with), the system's.
  void *handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  ZRT_CHECK(handle, "cannot load cuBLASLt: " << ::dlerror()
                                             << " (put CUDA 13's libraries on "
                                                "LD_LIBRARY_PATH)");
  CublasLtApi api;
  resolve(handle, "cublasLtCreate", api.create);
  resolve(handle, "cublasLtDestroy", api.destroy);
  resolve(handle, "cublasLtMatmulDescCreate", api.descCreate);
  resolve(handle, "cublasLtMatmulDescDestroy", api.descDestroy);
  resolve(handle, "cublasLtMatmulDescSetAttribute", api.descSetAttribute);
  resolve(handle, "cublasLtMatrixLayoutCreate", api.layoutCreate);
  resolve(handle, "cublasLtMatrixLayoutDestroy", api.layoutDestroy);
  resolve(handle, "cublasLtMatrixLayoutSetAttribute", api.layoutSetAttribute);
  resolve(handle, "cublasLtMatmulPreferenceCreate", api.preferenceCreate);
  resolve(handle, "cublasLtMatmulPreferenceDestroy", api.preferenceDestroy);
  resolve(handle, "cublasLtMatmulPreferenceSetAttribute", api.preferenceSetAttribute);
  resolve(handle, "cublasLtMatmulAlgoGetHeuristic", api.algoGetHeuristic);
  resolve(handle, "cublasLtMatmul", api.matmul);
  Dl_info info;
  api.library = ::dladdr(reinterpret_cast<void *>(api.create), &info) && info.dli_fname
                    ? info.dli_fname
                    : kLibrary;
  return api; // the handle stays open for the life of the process
}
#endif

} // namespace

const CublasLtApi &zrt::cuda::cublasLt() {
  static std::once_flag once;
  static CublasLtApi api;
  std::call_once(once, [] { api = load(); });
  return api;
}
