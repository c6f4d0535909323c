//===- CublasLoader.h - cuBLASLt, loaded when a GPU is used -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Linking cuBLAS costs every process start about 0.4 s of its static
// initialization, GPU or not (most zero-run runs in the test suite are short and
// on the CPU). So zero-run does not link it: the first GPU device loads cuBLASLt
// (every GEMM is a cublasLtMatmul) with dlopen and the backend calls it through
// this table. The emulated build calls the emulator's functions directly.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CUBLASLOADER_H
#define ZRT_LIB_CUDA_CUBLASLOADER_H

#include <cublasLt.h>

#include <string>

namespace zrt::cuda {

/// The cuBLASLt entry points the backend uses.
struct CublasLtApi {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmulDescCreate) descCreate;
  decltype(&cublasLtMatmulDescDestroy) descDestroy;
  decltype(&cublasLtMatmulDescSetAttribute) descSetAttribute;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layoutSetAttribute;
  decltype(&cublasLtMatmulPreferenceCreate) preferenceCreate;
  decltype(&cublasLtMatmulPreferenceDestroy) preferenceDestroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algoGetHeuristic;
  decltype(&cublasLtMatmul) matmul;
  /// Where they were found, for messages ("linked" in the emulated build).
  std::string library;
};

/// Loads cuBLASLt on first use; throws zrt::Error naming the library and the
/// loader's reason when it or one of its functions cannot be found.
const CublasLtApi &cublasLt();

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CUBLASLOADER_H
