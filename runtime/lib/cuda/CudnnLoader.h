//===- CudnnLoader.h - cuDNN's graph API, loaded when attention uses it -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// cuDNN is optional: 16-bit fused attention runs on cuDNN's fused kernels where
// the library is found and its engines take the graph (CudnnAttention.h), and on
// the project's tensor-core kernels otherwise. So zero-run does not link it: the
// first attention that could use it loads libcudnn.so.9 with dlopen, and the
// backend calls it through this table. The emulated build calls the emulator's
// functions (cuda-emulator/Cudnn.cpp) directly.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CUDNNLOADER_H
#define ZRT_LIB_CUDA_CUDNNLOADER_H

#include <cudnn.h>

#include <string>

namespace zrt::cuda {

/// The cuDNN entry points the backend uses.
struct CudnnApi {
  decltype(&cudnnGetVersion) getVersion;
  decltype(&cudnnGetErrorString) getErrorString;
  decltype(&cudnnGetLastErrorString) getLastErrorString;
  decltype(&cudnnCreate) create;
  decltype(&cudnnDestroy) destroy;
  decltype(&cudnnSetStream) setStream;
  decltype(&cudnnBackendCreateDescriptor) createDescriptor;
  decltype(&cudnnBackendDestroyDescriptor) destroyDescriptor;
  decltype(&cudnnBackendSetAttribute) setAttribute;
  decltype(&cudnnBackendGetAttribute) getAttribute;
  decltype(&cudnnBackendFinalize) finalize;
  decltype(&cudnnBackendExecute) execute;
  /// Where it was found ("linked (emulated)" in the emulated build).
  std::string library;
};

/// cuDNN, loaded on first use; null when it cannot be loaded, with the loader's
/// reason in `why` (every call gives the same answer).
const CudnnApi *cudnn(std::string &why);

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CUDNNLOADER_H
