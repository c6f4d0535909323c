//===- CublasLt.cpp - Emulated cuBLASLt matmul -----------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Descriptors are host structs; the heuristic checks that the descriptor and the
// layouts describe one product it can run and hands out its one algorithm and a
// small workspace; the matmul checks the algorithm, workspace, operands and bias
// against device memory, then queues the product on the stream: OpenBLAS in f32
// (16-bit data and TF32 operands widened or rounded into copies, the result
// rounded once, after the bias) or f64; f32 and f64 data in place.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"
#include "cublasLt.h"
#include "zrt/Float16.h"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace zero_cuda_emulator::detail;

struct cublasLtContext {};
struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cudaDataType scale;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  int32_t biasType = -1; // -1: D's
  void *aux = nullptr;   // the GELU epilogues' matrix
  int64_t auxLd = 0, auxStride = 0;
};
struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t maxWorkspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256}; // A, B, C, D
};

namespace {

/// The emulator's one algorithm, as the heuristic hands it out.
constexpr uint64_t kAlgorithm = 0x7a65726f4c74ull;
/// The workspace it asks for (when the preference allows it), so that the backend's
/// workspace argument is checked.
constexpr size_t kWorkspace = 4096;

size_t sizeOf(cudaDataType t) {
  return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

bool isGelu(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
         e == CUBLASLT_EPILOGUE_DGELU;
}
bool hasBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

/// GELU's tanh form and its derivative, in f32, as the epilogue computes them.
float geluOf(float x) {
  const float beta = 0.7978845608f, kappa = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(beta * (x + kappa * x * x * x)));
}
float geluSlope(float x) {
  const float beta = 0.7978845608f, kappa = 0.044715f;
  float t = std::tanh(beta * (x + kappa * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * beta * (1.0f + 3.0f * kappa * x * x);
}

/// Whether the descriptor and the layouts describe one product the emulator runs
/// (the reason on stderr when not).
bool describesProduct(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                      cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                      cublasLtMatrixLayout_t dd) {
  auto no = [](const std::string &why) {
    complain(cudaErrorInvalidValue, "cublasLtMatmul: " + why);
    return false;
  };
  if (!d || !a || !b || !c || !dd)
    return no("a null descriptor or layout");
  cudaDataType t = dd->type;
  if (a->type != t || b->type != t || c->type != t)
    return no("A, B, C and D differ in type");
  bool wide = t == CUDA_R_64F;
  bool computeOk = wide ? d->compute == CUBLAS_COMPUTE_64F
                        : d->compute == CUBLAS_COMPUTE_32F ||
                              (t == CUDA_R_32F && d->compute == CUBLAS_COMPUTE_32F_FAST_TF32);
  if (!computeOk || d->scale != (wide ? CUDA_R_64F : CUDA_R_32F))
    return no("the compute or scale type does not suit the data type");
  bool na = d->transA == CUBLAS_OP_N, nb = d->transB == CUBLAS_OP_N;
  uint64_t m = dd->rows, n = dd->cols, k = na ? a->cols : a->rows;
  if ((na ? a->rows : a->cols) != m || (nb ? b->rows : b->cols) != k ||
      (nb ? b->cols : b->rows) != n || c->rows != m || c->cols != n)
    return no("op(A) op(B) does not have D's shape, or C differs from D");
  for (cublasLtMatrixLayout_t l : {a, b, c, dd})
    if (l->ld < (int64_t)std::max<uint64_t>(1, l->rows) || l->batch < 1 || l->stride < 0)
      return no("a leading dimension below its rows, or a bad batch");
  if (a->batch != dd->batch || b->batch != dd->batch || c->batch != dd->batch)
    return no("the layouts differ in batch count");
  if (d->epilogue != CUBLASLT_EPILOGUE_DEFAULT && d->epilogue != CUBLASLT_EPILOGUE_BIAS &&
      d->epilogue != CUBLASLT_EPILOGUE_BGRADB && !isGelu(d->epilogue))
    return no("an epilogue the emulator does not have");
  if (isGelu(d->epilogue)) {
    if (wide)
      return no("a GELU epilogue on f64 data");
    if (!d->aux || d->auxLd % 8 != 0 || d->auxLd < (int64_t)std::max<uint64_t>(1, dd->rows))
      return no("a GELU epilogue without its aux matrix, or its leading dimension not a "
                "multiple of 8 at least D's rows");
    if (dd->batch > 1 && (d->auxStride % 8 != 0 || d->auxStride < d->auxLd * (int64_t)dd->cols))
      return no("a GELU epilogue's aux batch stride not a multiple of 8, or overlapping");
  }
  if (d->epilogue != CUBLASLT_EPILOGUE_DEFAULT && d->biasType != -1 && d->biasType != (int32_t)t)
    return no("a bias of another type than D");
  if (d->epilogue == CUBLASLT_EPILOGUE_BGRADB && (dd->batch != 1 || nb))
    return no("a bias gradient of B for more than one product, or of a B not transposed");
  return true;
}

/// Whether every batch of `l` at `p` lies inside device memory.
bool inDevice(const char *which, const void *p, cublasLtMatrixLayout_t l) {
  if (!l->rows || !l->cols)
    return true;
  size_t size = sizeOf(l->type), extent = ((l->cols - 1) * (size_t)l->ld + l->rows) * size;
  std::string what = std::string("cublasLtMatmul operand ") + which;
  return deviceOf(what.c_str(), p, extent) >= 0 &&
         deviceOf(what.c_str(), (const char *)p + (size_t)(l->batch - 1) * l->stride * size,
                  extent) >= 0;
}

/// Whether every batch of `l` at `p` lies at a multiple of `bytes`, the alignment
/// the algorithm was chosen for.
bool aligned(const char *which, const void *p, cublasLtMatrixLayout_t l, uint64_t bytes) {
  uint64_t first = reinterpret_cast<uintptr_t>(p), step = (uint64_t)l->stride * sizeOf(l->type);
  if (first % bytes == 0 && (l->batch == 1 || step % bytes == 0))
    return true;
  complain(cudaErrorInvalidValue, std::string("cublasLtMatmul: operand ") + which +
                                      " is less aligned than the " + std::to_string(bytes) +
                                      " bytes its algorithm was chosen for");
  return false;
}

/// The largest power of two up to 256 dividing `p` (256 for null: nothing to align).
uint64_t pointerAlignment(const void *p) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256;
  return bits & -bits;
}

/// Whether an epilogue pointer is as aligned as when the algorithm was chosen.
bool pointerAligned(const char *which, const void *p, uint64_t chosenFor) {
  if (pointerAlignment(p) >= chosenFor)
    return true;
  complain(cudaErrorInvalidValue, std::string("cublasLtMatmul: the ") + which +
                                      " pointer is less aligned than the " +
                                      std::to_string(chosenFor) +
                                      " bytes the heuristic saw when it chose the algorithm");
  return false;
}

/// Column-major rows x cols at `p` (leading dimension ld) as S, densely (ld = rows),
/// rounded to TF32 first when `tf32` (as cvt.rna.tf32.f32).
template <typename T, typename S>
std::vector<S> dense(const void *p, uint64_t rows, uint64_t cols, int64_t ld, bool tf32) {
  std::vector<S> out(rows * cols);
  const T *t = static_cast<const T *>(p);
  for (uint64_t j = 0; j < cols; ++j)
    for (uint64_t i = 0; i < rows; ++i) {
      S v = S(t[j * ld + i]);
      if constexpr (std::is_same_v<S, float>)
        if (tf32) {
          uint32_t bits;
          std::memcpy(&bits, &v, 4);
          if ((bits & 0x7f800000u) != 0x7f800000u) // inf and NaN stay
            bits = (bits + 0x1000u) & ~0x1fffu;
          std::memcpy(&v, &bits, 4);
        }
      out[j * rows + i] = v;
    }
  return out;
}

/// One batch: D = alpha op(A) op(B) + beta C (+ bias per row), in S, D rounded once.
template <typename T, typename S>
void product(cublasLtMatmulDescOpaque_t d, cublasLtMatrixLayoutOpaque_t la,
             cublasLtMatrixLayoutOpaque_t lb, cublasLtMatrixLayoutOpaque_t lc,
             cublasLtMatrixLayoutOpaque_t ld, S alpha, S beta, const void *a, const void *b,
             const void *c, void *dst) {
  bool tf32 = d.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  bool na = d.transA == CUBLAS_OP_N, nb = d.transB == CUBLAS_OP_N;
  uint64_t m = ld.rows, n = ld.cols, k = na ? la.cols : la.rows;
  auto ta = na ? CblasNoTrans : CblasTrans, tb = nb ? CblasNoTrans : CblasTrans;
  const T *bias = hasBias(d.epilogue) ? static_cast<const T *>(d.bias) : nullptr;
  T *out = static_cast<T *>(dst);
  bool gelu = isGelu(d.epilogue), dgelu = d.epilogue == CUBLASLT_EPILOGUE_DGELU;
  T *aux = static_cast<T *>(d.aux);
  if (d.epilogue == CUBLASLT_EPILOGUE_BGRADB) { // op(B) = B^T: B is n x k as stored
    T *grad = static_cast<T *>(const_cast<void *>(d.bias));
    const T *bt = static_cast<const T *>(b);
    for (uint64_t j = 0; j < n; ++j) {
      S sum = 0;
      for (uint64_t kk = 0; kk < k; ++kk)
        sum += S(bt[kk * lb.ld + j]);
      grad[j] = T(sum);
    }
  }
  if constexpr (std::is_same_v<T, S>) {
    if (!tf32 && !gelu) { // f32 and f64 in place: C into D, the product onto it, then the bias
      if (beta != S(0) && c != dst)
        for (uint64_t j = 0; j < n; ++j)
          std::memcpy(out + j * ld.ld, static_cast<const T *>(c) + j * lc.ld, m * sizeof(T));
      if constexpr (std::is_same_v<S, double>)
        cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, static_cast<const T *>(a), la.ld,
                    static_cast<const T *>(b), lb.ld, beta, out, ld.ld);
      else
        cblas_sgemm(CblasColMajor, ta, tb, m, n, k, alpha, static_cast<const T *>(a), la.ld,
                    static_cast<const T *>(b), lb.ld, beta, out, ld.ld);
      if (bias)
        for (uint64_t j = 0; j < n; ++j)
          for (uint64_t i = 0; i < m; ++i)
            out[j * ld.ld + i] += bias[i];
      return;
    }
  }
  std::vector<S> av = dense<T, S>(a, la.rows, la.cols, la.ld, tf32);
  std::vector<S> bv = dense<T, S>(b, lb.rows, lb.cols, lb.ld, tf32);
  std::vector<S> acc = beta != S(0) ? dense<T, S>(c, m, n, lc.ld, false) : std::vector<S>(m * n);
  if constexpr (std::is_same_v<S, double>)
    cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, av.data(), la.rows, bv.data(), lb.rows,
                beta, acc.data(), m);
  else
    cblas_sgemm(CblasColMajor, ta, tb, m, n, k, alpha, av.data(), la.rows, bv.data(), lb.rows,
                beta, acc.data(), m);
  for (uint64_t j = 0; j < n; ++j) // only the matrix, not the gaps between columns
    for (uint64_t i = 0; i < m; ++i) {
      S v = acc[j * m + i] + (bias ? S(bias[i]) : S(0));
      if (dgelu)
        v = S(float(v) * geluSlope(float(aux[j * d.auxLd + i])));
      else if (gelu) {
        aux[j * d.auxLd + i] = T(v);
        v = S(geluOf(float(v)));
      }
      out[j * ld.ld + i] = T(v);
    }
}

template <typename T, typename S>
void enqueueProducts(cudaStream_t stream, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                     cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                     cublasLtMatrixLayout_t dd, const void *alpha, const void *beta,
                     const void *A, const void *B, const void *C, void *D) {
  // Host pointer mode: alpha and beta, like the descriptors, are read at the call.
  S al = *static_cast<const S *>(alpha), be = *static_cast<const S *>(beta);
  cublasLtMatmulDescOpaque_t desc = *d;
  cublasLtMatrixLayoutOpaque_t la = *a, lb = *b, lc = *c, ld = *dd;
  enqueue(stream, [=] {
    size_t size = sizeof(T);
    cublasLtMatmulDescOpaque_t batch = desc;
    for (int32_t i = 0; i < ld.batch; ++i, batch.aux = (char *)batch.aux + desc.auxStride * size)
      product<T, S>(batch, la, lb, lc, ld, al, be, (const char *)A + i * la.stride * size,
                    (const char *)B + i * lb.stride * size,
                    (const char *)C + i * lc.stride * size, (char *)D + i * ld.stride * size);
  });
}

template <typename T>
bool setValue(T &field, const void *buf, size_t size) {
  if (!buf || size != sizeof(T))
    return false;
  std::memcpy(&field, buf, sizeof(T));
  return true;
}

} // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t computeType,
                                        cudaDataType scaleType) {
  *desc = new cublasLtMatmulDescOpaque_t{computeType, scaleType};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t sizeInBytes) {
  if (!desc)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  int32_t op = 0;
  uint32_t epilogue = 0;
  bool ok = false;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
  case CUBLASLT_MATMUL_DESC_TRANSB:
    ok = setValue(op, buf, sizeInBytes) && (op == CUBLAS_OP_N || op == CUBLAS_OP_T);
    if (ok)
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? desc->transA : desc->transB) = (cublasOperation_t)op;
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    ok = setValue(epilogue, buf, sizeInBytes);
    if (ok)
      desc->epilogue = (cublasLtEpilogue_t)epilogue;
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    ok = setValue(desc->bias, buf, sizeInBytes);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    ok = setValue(desc->biasType, buf, sizeInBytes);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    ok = setValue(desc->aux, buf, sizeInBytes);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    ok = setValue(desc->auxLd, buf, sizeInBytes);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
    ok = setValue(desc->auxStride, buf, sizeInBytes);
    break;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  *layout = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes) {
  if (!layout)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ok = attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
                ? setValue(layout->batch, buf, sizeInBytes)
                : attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET &&
                      setValue(layout->stride, buf, sizeInBytes);
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t sizeInBytes) {
  if (!pref)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  int operand = attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES;
  bool ok = attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
                ? setValue(pref->maxWorkspace, buf, sizeInBytes)
                : operand >= 0 && operand < 4 && setValue(pref->alignment[operand], buf, sizeInBytes);
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle,
                                              cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref,
                                              int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returnAlgoCount) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!pref || requestedAlgoCount < 1 || !results || !returnAlgoCount)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returnAlgoCount = 0;
  if (!describesProduct(desc, a, b, c, d))
    return CUBLAS_STATUS_SUCCESS; // no algorithm (cuBLASLt says so the same way)
  cublasLtMatmulHeuristicResult_t r = {};
  r.algo.data[0] = kAlgorithm;
  // Like cuBLASLt's, the algorithm works only at the alignments it was chosen for:
  // the preference's for A, B, C and D, and for the bias and the epilogue's aux
  // matrix the pointers' own (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER and
  // _EPILOGUE_AUX_POINTER: "Routines that don't dereference this pointer, like
  // cublasLtMatmulAlgoGetHeuristic() depend on its value to determine expected
  // pointer alignment").
  for (int i = 0; i < 4; ++i)
    r.algo.data[1 + i] = pref->alignment[i];
  r.algo.data[5] = pointerAlignment(desc->bias);
  r.algo.data[6] = pointerAlignment(desc->aux);
  r.workspaceSize = std::min<uint64_t>(pref->maxWorkspace, kWorkspace);
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1;
  results[0] = r;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t adesc,
                              const void *B, cublasLtMatrixLayout_t bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cdesc, void *D,
                              cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !describesProduct(desc, adesc, bdesc, cdesc, ddesc))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!algo || algo->data[0] != kAlgorithm) {
    complain(cudaErrorInvalidValue, "cublasLtMatmul: an algorithm not from the heuristic");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (workspaceSizeInBytes < kWorkspace ||
      deviceOf("cublasLtMatmul workspace", workspace, workspaceSizeInBytes) < 0) {
    complain(cudaErrorInvalidValue, "cublasLtMatmul: the workspace is smaller than the "
                                    "heuristic's or not device memory");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!ddesc->rows || !ddesc->cols)
    return CUBLAS_STATUS_SUCCESS;
  if (!inDevice("A", A, adesc) || !inDevice("B", B, bdesc) || !inDevice("C", C, cdesc) ||
      !inDevice("D", D, ddesc))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!aligned("A", A, adesc, algo->data[1]) || !aligned("B", B, bdesc, algo->data[2]) ||
      !aligned("C", C, cdesc, algo->data[3]) || !aligned("D", D, ddesc, algo->data[4]))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (hasBias(desc->epilogue) &&
      deviceOf("cublasLtMatmul bias", desc->bias, ddesc->rows * sizeOf(ddesc->type)) < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((desc->bias && !pointerAligned("bias", desc->bias, algo->data[5])) ||
      (desc->aux && !pointerAligned("epilogue aux", desc->aux, algo->data[6])))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (isGelu(desc->epilogue)) {
    size_t size = sizeOf(ddesc->type),
           extent = ((ddesc->cols - 1) * (size_t)desc->auxLd + ddesc->rows) * size;
    for (int32_t i : {0, ddesc->batch - 1})
      if (deviceOf("cublasLtMatmul GELU aux matrix",
                   (const char *)desc->aux + (size_t)i * desc->auxStride * size, extent) < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (desc->epilogue == CUBLASLT_EPILOGUE_BGRADB &&
      deviceOf("cublasLtMatmul bias gradient", desc->bias, ddesc->cols * sizeOf(ddesc->type)) < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (ddesc->type) {
  case CUDA_R_64F:
    enqueueProducts<double, double>(stream, desc, adesc, bdesc, cdesc, ddesc, alpha, beta, A, B,
                                    C, D);
    break;
  case CUDA_R_32F:
    enqueueProducts<float, float>(stream, desc, adesc, bdesc, cdesc, ddesc, alpha, beta, A, B,
                                  C, D);
    break;
  case CUDA_R_16BF:
    enqueueProducts<zrt::bf16, float>(stream, desc, adesc, bdesc, cdesc, ddesc, alpha, beta, A,
                                      B, C, D);
    break;
  case CUDA_R_16F:
    enqueueProducts<zrt::f16, float>(stream, desc, adesc, bdesc, cdesc, ddesc, alpha, beta, A, B,
                                     C, D);
    break;
  }
  return CUBLAS_STATUS_SUCCESS;
}
