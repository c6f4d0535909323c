//===- GeneratedKernels.h - Kernels compiled when a plan is bound -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The plan's generated kernels (FusedKernelSource.h), compiled together as one
// translation unit by NVRTC for the GPU's architecture, kept in an on-disk cache
// keyed by the whole source, the architecture and NVRTC's version, and loaded as
// a module of the device's context. NVRTC and the driver's module API are loaded
// with the first compilation (libnvrtc.so.13, libcuda.so.1), not linked; the
// emulated build links the emulator's (cuda-emulator/Nvrtc.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_GENERATEDKERNELS_H
#define ZRT_LIB_CUDA_GENERATEDKERNELS_H

#include "FusedKernelSource.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zrt::cuda {

class GeneratedKernels {
public:
  struct Kernel;
  /// `quiet`: no line on stderr when kernels are compiled.
  explicit GeneratedKernels(bool quiet = false);
  ~GeneratedKernels();
  /// Adds `k` to what the next compile() builds; the handle launches it.
  std::shared_ptr<Kernel> add(const FusedKernelSource &k);
  /// Compiles (or finds in the cache) and loads every kernel added since the last
  /// call. The executor calls it once the plan is bound, before a CUDA graph
  /// captures the step; a launch of a kernel not yet compiled calls it too.
  void compile();
  /// Launches `k` as its source says (threads, 256 per block) on `s`, with
  /// `params` as its parameters (each 8 bytes: addresses, then n).
  void launch(const Kernel &k, cudaStream_t s, const uint64_t *params);
  /// How many kernels are compiled and loaded.
  size_t loaded() const;
  /// Where compiled kernels are cached: ZERO_KERNEL_CACHE, else the user's cache
  /// folder's zero-opt/kernels ("" when there is no home).
  static std::string cacheFolder();
  /// One translation unit of `kernels`, each distinct one once (how many in
  /// `distinct`).
  static std::string translationUnit(const std::vector<FusedKernelSource> &kernels,
                                     size_t *distinct = nullptr);
  /// Loads NVRTC (an error naming what is missing when it cannot) and says which
  /// one: its version and file.
  static std::string nvrtcLibrary();
  /// NVRTC's CUBIN of `source` for `arch` (sm_90; "host" on the emulator), or a
  /// zrt::Error with NVRTC's log. Needs no GPU.
  static std::string compileSource(const std::string &source, const std::string &arch);

private:
  struct Module;
  std::vector<std::shared_ptr<Kernel>> pending_;
  std::vector<std::unique_ptr<Module>> modules_;
  size_t loaded_ = 0;
  bool quiet_;
};

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_GENERATEDKERNELS_H
