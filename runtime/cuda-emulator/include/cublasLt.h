//===- cublasLt.h - cuBLASLt matmul, emulated on the host ---------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: the cuBLASLt calls the backend makes (a matmul descriptor with
// its transposes and epilogue, strided-batched column-major layouts, a workspace
// preference, the heuristic and the matmul itself), with cublasLt.h's names and
// values, queued on the given stream and run by OpenBLAS. See cuda_runtime.h.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_CUBLASLT_H
#define ZERO_CUDA_EMULATOR_CUBLASLT_H

#include "cublas_v2.h"

#include <cstddef>
#include <cstdint>

struct cublasLtContext;
struct cublasLtMatmulDescOpaque_t;
struct cublasLtMatrixLayoutOpaque_t;
struct cublasLtMatmulPreferenceOpaque_t;
using cublasLtHandle_t = cublasLtContext *;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t *;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t *;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t *;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,       // int32_t (cublasOperation_t)
  CUBLASLT_MATMUL_DESC_TRANSB = 4,       // int32_t
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,     // uint32_t (cublasLtEpilogue_t)
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8, // const void *: D's rows, packed
  // The GELU epilogues' auxiliary matrix: the GELU's input, D's shape, written
  // (GELU_AUX*) or read (DGELU); its leading dimension (a multiple of 8, at least
  // D's rows) and batch stride (a multiple of 8), in elements of D's type.
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11, // void *
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,      // int64_t
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13, // int64_t
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26, // int32_t (cudaDataType); default D's
};
enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_BIAS = 4, // adds the bias vector to every column of D
  // Writes to the bias vector op(B) summed over k, one value per column of D (a
  // weight gradient's bias gradient). The emulator takes it for one product
  // (batch count 1) with B transposed, as Transformer Engine's weight gradients
  // use it; other layouts are not known to have algorithms.
  CUBLASLT_EPILOGUE_BGRADB = 512,
  // D = GELU(alpha op(A) op(B) + beta C (+ bias)) in its tanh form, computed in
  // f32 before D is rounded; the aux matrix gets the GELU's input, rounded to D's
  // type. The emulator has no f64 algorithm for them.
  CUBLASLT_EPILOGUE_GELU_AUX = 32 | 128,
  CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 32 | 128 | 4,
  // D = (alpha op(A) op(B) + beta C) GELU'(aux), the aux matrix holding the
  // forward's GELU input.
  CUBLASLT_EPILOGUE_DGELU = 64 | 128,
};
enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,          // int32_t
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6, // int64_t, elements
};
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1, // uint64_t
  // uint32_t each, default 256: the algorithm must work at this alignment
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);
/// computeType CUBLAS_COMPUTE_32F (f32, bf16, f16 data), _32F_FAST_TF32 (f32 data,
/// its operands rounded to TF32) or _64F; scaleType CUDA_R_32F or CUDA_R_64F to
/// match.
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t computeType,
                                        cudaDataType scaleType);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t sizeInBytes);
/// A column-major rows x cols matrix with leading dimension ld, as stored.
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t sizeInBytes);
/// One algorithm (the emulator has one) when the descriptor and layouts describe a
/// product it can run; none (returnAlgoCount 0) otherwise.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle,
                                              cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref,
                                              int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returnAlgoCount);
/// D = alpha op(A) op(B) + beta C (+ the bias epilogue; or the bias gradient
/// written: op(B) summed over k, of the bias type), per batch, with host
/// alpha and beta of the scale type; the sum formed in the compute type and D
/// rounded once. C may be D; the algorithm must be the heuristic's and the
/// workspace at least what it asked for, inside device memory.
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t adesc,
                              const void *B, cublasLtMatrixLayout_t bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cdesc, void *D,
                              cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream);

#endif // ZERO_CUDA_EMULATOR_CUBLASLT_H
