//===- CublasLoader.h - cuBLAS, loaded when a GPU is used -------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Linking cuBLAS costs every process start about 0.4 s of its static
// initialization, GPU or not (most zero-run runs in the test suite are short and
// on the CPU). So zero-run does not link it: the first GPU device loads it with
// dlopen and the backend calls it through this table. The emulated build calls
// the emulator's functions directly.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CUBLASLOADER_H
#define ZRT_LIB_CUDA_CUBLASLOADER_H

#include <cublas_v2.h>

#include <string>

namespace zrt::cuda {

/// cublasGemmStridedBatchedEx's C signature (cublas_api.h overloads the name in
/// C++, so decltype cannot name it).
using GemmStridedBatchedExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
    const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
    const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t,
    cublasGemmAlgo_t);

/// The cuBLAS entry points the backend uses.
struct CublasApi {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) setStream;
  decltype(&cublasSetMathMode) setMathMode;
  decltype(&cublasSgemmStridedBatched) sgemmStridedBatched;
  decltype(&cublasDgemmStridedBatched) dgemmStridedBatched;
  GemmStridedBatchedExFn gemmStridedBatchedEx; // 16-bit operands
  /// Where they were found, for messages ("linked" in the emulated build).
  std::string library;
};

/// Loads cuBLAS on first use; throws zrt::Error naming the library and the
/// loader's reason when it or one of its functions cannot be found.
const CublasApi &cublas();

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CUBLASLOADER_H
