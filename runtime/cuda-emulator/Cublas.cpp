//===- Cublas.cpp - Emulated cuBLAS GEMMs ----------------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Column-major S/DGEMM (plain and strided-batched), operands checked against the
// device allocations, queued on the handle's stream and run by OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"
#include "cublas_v2.h"
#include "zrt/Float16.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace zero_cuda_emulator::detail;

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {

/// Whether a column-major `rows` x `cols` operand with leading dimension `ld`,
/// `batch` of them `stride` elements apart, is valid and inside device memory.
bool operandOk(const char *which, const void *p, int rows, int cols, int ld,
               long long stride, int batch, size_t size) {
  if (ld < std::max(1, rows)) {
    complain(cudaErrorInvalidValue, std::string("GEMM: ") + which + "'s leading dimension " +
                                        std::to_string(ld) + " < its rows " +
                                        std::to_string(rows));
    return false;
  }
  if (!rows || !cols)
    return true;
  size_t extent = ((size_t)(cols - 1) * ld + rows) * size;
  std::string what = std::string("GEMM operand ") + which;
  return deviceOf(what.c_str(), p, extent) >= 0 &&
         deviceOf(what.c_str(), (const char *)p + (size_t)(batch - 1) * stride * size,
                  extent) >= 0;
}

/// A column-major `rows` x `cols` operand (leading dimension ld) with every
/// element rounded to TF32 (10 mantissa bits, to nearest, ties away from zero, as
/// cvt.rna.tf32.f32), into `buffer`; a non-float T is returned as it is.
template <typename T>
const T *roundedToTf32(const T *x, int rows, int cols, int ld, std::vector<T> &buffer) {
  if constexpr (!std::is_same_v<T, float>) {
    return x;
  } else {
    // What the operand spans: the last column ends at its last row.
    buffer.assign(x, x + (rows && cols ? (size_t)(cols - 1) * ld + rows : 0));
    for (float &v : buffer) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if ((bits & 0x7f800000u) != 0x7f800000u) // inf and NaN stay
        bits = (bits + 0x1000u) & ~0x1fffu;
      std::memcpy(&v, &bits, 4);
    }
    return buffer.data();
  }
}

template <typename T, typename Blas>
cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                    int n, int k, const T *alpha, const T *a, int lda, long long strideA,
                    const T *b, int ldb, long long strideB, const T *beta, T *c, int ldc,
                    long long strideC, int batch, Blas blas) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || strideA < 0 || strideB < 0 || strideC < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!m || !n || !batch)
    return CUBLAS_STATUS_SUCCESS;
  bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  if (!operandOk("A", a, na ? m : k, na ? k : m, lda, strideA, batch, sizeof(T)) ||
      !operandOk("B", b, nb ? k : n, nb ? n : k, ldb, strideB, batch, sizeof(T)) ||
      !operandOk("C", c, m, n, ldc, strideC, batch, sizeof(T)))
    return CUBLAS_STATUS_INVALID_VALUE;
  T al = *alpha, be = *beta; // host pointer mode: read at the call
  bool tf32 = std::is_same_v<T, float> && handle->math == CUBLAS_TF32_TENSOR_OP_MATH;
  enqueue(handle->stream, [=] {
    std::vector<T> ra, rb;
    for (int i = 0; i < batch; ++i) {
      const T *ai = a + i * strideA, *bi = b + i * strideB;
      if (tf32) { // the tensor cores read the operands rounded to TF32
        ai = roundedToTf32(ai, na ? m : k, na ? k : m, lda, ra);
        bi = roundedToTf32(bi, nb ? k : n, nb ? n : k, ldb, rb);
      }
      blas(CblasColMajor, na ? CblasNoTrans : CblasTrans, nb ? CblasNoTrans : CblasTrans, m,
           n, k, al, ai, lda, bi, ldb, be, c + i * strideC, ldc);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const float *alpha, const float *a, int lda, const float *b,
                           int ldb, const float *beta, float *c, int ldc) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
              1, cblas_sgemm);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const double *alpha, const double *a, int lda, const double *b,
                           int ldb, const double *beta, double *c, int ldc) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
              1, cblas_dgemm);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         long long strideA, const float *b, int ldb,
                                         long long strideB, const float *beta, float *c,
                                         int ldc, long long strideC, int batch) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta,
              c, ldc, strideC, batch, cblas_sgemm);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const double *alpha, const double *a, int lda,
                                         long long strideA, const double *b, int ldb,
                                         long long strideB, const double *beta, double *c,
                                         int ldc, long long strideC, int batch) {
  return gemm(handle, transa, transb, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta,
              c, ldc, strideC, batch, cblas_dgemm);
}

namespace {

/// Column-major [rows x cols] with leading dimension ld, widened to f32.
template <typename H>
std::vector<float> widen(const void *p, int rows, int cols, int ld) {
  std::vector<float> out((size_t)ld * cols);
  const H *h = static_cast<const H *>(p);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = (float)h[i];
  (void)rows;
  return out;
}

template <typename H>
cublasStatus_t gemm16(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                      int m, int n, int k, float al, float be, const void *a, int lda,
                      long long strideA, const void *b, int ldb, long long strideB, void *c,
                      int ldc, long long strideC, int batch) {
  bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  if (!operandOk("A", a, na ? m : k, na ? k : m, lda, strideA, batch, sizeof(H)) ||
      !operandOk("B", b, nb ? k : n, nb ? n : k, ldb, strideB, batch, sizeof(H)) ||
      !operandOk("C", c, m, n, ldc, strideC, batch, sizeof(H)))
    return CUBLAS_STATUS_INVALID_VALUE;
  enqueue(handle->stream, [=] {
    for (int i = 0; i < batch; ++i) {
      const H *ai = static_cast<const H *>(a) + i * strideA;
      const H *bi = static_cast<const H *>(b) + i * strideB;
      H *ci = static_cast<H *>(c) + i * strideC;
      std::vector<float> af = widen<H>(ai, na ? m : k, na ? k : m, lda);
      std::vector<float> bf = widen<H>(bi, nb ? k : n, nb ? n : k, ldb);
      std::vector<float> cf = widen<H>(ci, m, n, ldc);
      cblas_sgemm(CblasColMajor, na ? CblasNoTrans : CblasTrans, nb ? CblasNoTrans : CblasTrans,
                  m, n, k, al, af.data(), lda, bf.data(), ldb, be, cf.data(), ldc);
      for (int col = 0; col < n; ++col) // only the matrix, not the gaps between columns
        for (int row = 0; row < m; ++row)
          ci[(size_t)col * ldc + row] = H(cf[(size_t)col * ldc + row]);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *a,
                                          cudaDataType aType, int lda, long long strideA,
                                          const void *b, cudaDataType bType, int ldb,
                                          long long strideB, const void *beta, void *c,
                                          cudaDataType cType, int ldc, long long strideC,
                                          int batch, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 ||
      aType != bType || aType != cType || computeType != CUBLAS_COMPUTE_32F ||
      (aType != CUDA_R_16BF && aType != CUDA_R_16F))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!m || !n || !batch)
    return CUBLAS_STATUS_SUCCESS;
  float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
  if (aType == CUDA_R_16BF)
    return gemm16<zrt::bf16>(handle, transa, transb, m, n, k, al, be, a, lda, strideA, b,
                             ldb, strideB, c, ldc, strideC, batch);
  return gemm16<zrt::f16>(handle, transa, transb, m, n, k, al, be, a, lda, strideA, b, ldb,
                          strideB, c, ldc, strideC, batch);
}
