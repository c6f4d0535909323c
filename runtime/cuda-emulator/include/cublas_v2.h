//===- cublas_v2.h - cuBLAS's types, for the emulated cuBLASLt -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: the status, operation, data and compute types cuBLASLt shares
// with cuBLAS (the backend runs every GEMM on cuBLASLt; see cublasLt.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_CUBLAS_V2_H
#define ZERO_CUDA_EMULATOR_CUBLAS_V2_H

#include "cuda_runtime.h"

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_INVALID_VALUE = 7,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
// library_types.h and cublas_api.h values.
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
};

#endif // ZERO_CUDA_EMULATOR_CUBLAS_V2_H
