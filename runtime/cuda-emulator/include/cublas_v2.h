//===- cublas_v2.h - cuBLAS GEMM, emulated on the host ------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: cuBLAS's column-major S/DGEMM and the 16-bit GemmEx, queued on
// the handle's stream and run by OpenBLAS. See cuda_runtime.h.
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
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
// library_types.h and cublas_api.h values, for GemmEx.
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
};
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

struct cublasContext;
using cublasHandle_t = cublasContext *;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const float *alpha, const float *a, int lda, const float *b,
                           int ldb, const float *beta, float *c, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const double *alpha, const double *a, int lda, const double *b,
                           int ldb, const double *beta, double *c, int ldc);

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         long long strideA, const float *b, int ldb,
                                         long long strideB, const float *beta, float *c,
                                         int ldc, long long strideC, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const double *alpha, const double *a, int lda,
                                         long long strideA, const double *b, int ldb,
                                         long long strideB, const double *beta, double *c,
                                         int ldc, long long strideC, int batch);

/// 16-bit (bf16, f16) operands and result with f32 accumulation: the types must
/// match, the compute type is CUBLAS_COMPUTE_32F and alpha, beta are floats.
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *a,
                                          cudaDataType aType, int lda, long long strideA,
                                          const void *b, cudaDataType bType, int ldb,
                                          long long strideB, const void *beta, void *c,
                                          cudaDataType cType, int ldc, long long strideC,
                                          int batch, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo);

#endif // ZERO_CUDA_EMULATOR_CUBLAS_V2_H
