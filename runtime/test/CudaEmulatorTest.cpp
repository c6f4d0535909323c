//===- CudaEmulatorTest.cpp - The emulated CUDA catches what a GPU would ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The emulator stands in for a GPU in CI, so it must fail where a GPU would: work
// runs only when the host waits, streams without an event between them run in
// either order, and bad copies, launches and collectives are errors.
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <nccl.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

namespace {

using zero_cuda_emulator::launch;

float *deviceFloats(size_t n) {
  float *p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(float)), cudaSuccess);
  return p;
}

/// Queues a one-thread kernel that writes `value` to `*p`.
void store(cudaStream_t s, float *p, float value) {
  launch(s, 1, 1, [=] { *p = value; });
}

float read(const float *p) {
  float v = 0;
  EXPECT_EQ(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(CudaEmulator, WorkRunsWhenTheHostWaits) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  float *p = deviceFloats(1);
  ASSERT_EQ(cudaMemset(p, 0, sizeof(float)), cudaSuccess);
  store(s, p, 3);
  EXPECT_EQ(*p, 0.0f); // queued, not run
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(*p, 3.0f);
  cudaFree(p);
  cudaStreamDestroy(s);
}

// Timing events: their times exist once the stream has reached them (work runs
// when the host waits), not before; events without timing have none.
TEST(CudaEmulator, TimingEventsMeasureQueuedWork) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEvent_t start, end, untimed;
  cudaEventCreateWithFlags(&start, cudaEventDefault);
  cudaEventCreateWithFlags(&end, cudaEventDefault);
  cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming);
  float *x = deviceFloats(1 << 16);
  cudaEventRecord(start, s);
  cudaMemsetAsync(x, 0, (1 << 16) * sizeof(float), s);
  cudaEventRecord(end, s);
  cudaEventRecord(untimed, s);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, end), cudaErrorNotReady);
  cudaStreamSynchronize(s);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  for (cudaEvent_t e : {start, end, untimed})
    cudaEventDestroy(e);
  cudaFree(x);
  cudaStreamDestroy(s);
}

TEST(CudaEmulator, FreshMemoryIsNaN) {
  float *p = deviceFloats(4);
  EXPECT_TRUE(std::isnan(read(p + 3)));
  cudaFree(p);
}

/// Stream a writes *p, stream b copies it to *q; returns *q. With `event`, b
/// waits for a's write.
float copyAcrossStreams(bool firstCreatedFirst, bool event) {
  zero_cuda_emulator::setStreamOrder(firstCreatedFirst);
  cudaStream_t a, b;
  cudaStreamCreate(&a);
  cudaStreamCreate(&b);
  cudaEvent_t written;
  cudaEventCreateWithFlags(&written, cudaEventDisableTiming);
  float *p = deviceFloats(1), *q = deviceFloats(1);
  cudaMemset(p, 0, sizeof(float));
  store(a, p, 7);
  if (event) {
    cudaEventRecord(written, a);
    cudaStreamWaitEvent(b, written, 0);
  }
  cudaMemcpyAsync(q, p, sizeof(float), cudaMemcpyDeviceToDevice, b);
  cudaDeviceSynchronize();
  float v = read(q);
  cudaFree(p);
  cudaFree(q);
  cudaEventDestroy(written);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  zero_cuda_emulator::setStreamOrder(true);
  return v;
}

TEST(CudaEmulator, AMissingEventShowsInOneOrder) {
  EXPECT_EQ(copyAcrossStreams(true, false), 7.0f);
  EXPECT_EQ(copyAcrossStreams(false, false), 0.0f); // the copy ran before the write
  EXPECT_EQ(copyAcrossStreams(true, true), 7.0f);
  EXPECT_EQ(copyAcrossStreams(false, true), 7.0f);
}

/// A block-wide tree sum in shared memory, as the CUDA kernels' blockReduce does.
void blockSum(const float *in, float *out) {
  __shared__ float partial[64];
  partial[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k)
      partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
}

TEST(CudaEmulator, BlocksMeetAtBarriers) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  std::vector<float> host(128), sums(2);
  for (int i = 0; i < 128; ++i)
    host[i] = float(i);
  float *in = deviceFloats(128), *out = deviceFloats(2);
  cudaMemcpy(in, host.data(), 128 * sizeof(float), cudaMemcpyHostToDevice);
  zero_cuda_emulator::launchWithBarriers(s, 2, 64, [=] { blockSum(in, out); });
  cudaMemcpy(sums.data(), out, 2 * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(sums[0], 63.0f * 64 / 2);
  EXPECT_EQ(sums[1], (64.0f + 127) * 64 / 2);
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
}

TEST(CudaEmulatorDeathTest, ABarrierSomeThreadsSkipIsFatal) {
  EXPECT_EXIT(
      {
        cudaStream_t s;
        cudaStreamCreate(&s);
        zero_cuda_emulator::launchWithBarriers(s, 1, 32, [] {
          if (threadIdx.x < 16)
            __syncthreads();
        });
        cudaStreamSynchronize(s);
      },
      testing::ExitedWithCode(70), "a barrier some threads skip");
}

namespace wmma = nvcuda::wmma;
using RowA = wmma::fragment<wmma::matrix_a, 16, 16, 16, float, wmma::row_major>;
using RowB = wmma::fragment<wmma::matrix_b, 16, 16, 16, float, wmma::row_major>;
using ColB = wmma::fragment<wmma::matrix_b, 16, 16, 16, float, wmma::col_major>;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// out (16 x 16) = a (16 x 16, row-major) b^T (b read column-major), plus 1; in a
/// block of two warps, each of which makes the product.
void tileProduct(const float *a, const float *b, float *out) {
  alignas(32) __shared__ float sa[256], sb[256];
  for (int e = threadIdx.x; e < 256; e += blockDim.x) {
    sa[e] = a[e];
    sb[e] = b[e];
  }
  __syncthreads();
  RowA fa;
  ColB fb;
  Acc acc;
  wmma::fill_fragment(acc, 1.0f);
  wmma::load_matrix_sync(fa, sa, 16);
  wmma::load_matrix_sync(fb, sb, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  __syncthreads();
  if (threadIdx.x / 32 == 1)
    wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}

TEST(CudaEmulator, WarpProductsAreMadeOnceAndChecked) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  std::vector<float> a(256), b(256), got(256);
  for (int e = 0; e < 256; ++e) {
    a[e] = float(e % 7) - 3;
    b[e] = float(e % 5) * 0.5f;
  }
  float *da = deviceFloats(256), *db = deviceFloats(256), *dout = deviceFloats(256);
  cudaMemcpy(da, a.data(), 256 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), 256 * sizeof(float), cudaMemcpyHostToDevice);
  zero_cuda_emulator::launchWithBarriers(s, 2, 64, [=] { tileProduct(da, db, dout); });
  cudaMemcpy(got.data(), dout, 256 * sizeof(float), cudaMemcpyDeviceToHost);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      float want = 1;
      for (int k = 0; k < 16; ++k)
        want += a[r * 16 + k] * b[c * 16 + k]; // column-major B: (k, c) at c * 16 + k
      EXPECT_EQ(got[r * 16 + c], want) << r << ", " << c;
    }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  cudaStreamDestroy(s);
}

TEST(CudaEmulatorDeathTest, FragmentMisuseIsFatal) {
  EXPECT_EXIT(
      {
        alignas(32) static float tile[512];
        RowA fa;
        wmma::load_matrix_sync(fa, tile + 4, 16);
      },
      testing::ExitedWithCode(70), "not 256-bit aligned");
  EXPECT_EXIT(
      {
        alignas(32) static float tile[512];
        RowA fa;
        wmma::load_matrix_sync(fa, tile, 18);
      },
      testing::ExitedWithCode(70), "ldm 18 is not a multiple of 16 bytes");
  EXPECT_EXIT(
      {
        cudaStream_t s;
        cudaStreamCreate(&s);
        zero_cuda_emulator::launchWithBarriers(s, 1, 32, [] {
          RowA fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, float, wmma::row_major> fb;
          wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
          wmma::fill_fragment(fa, float(threadIdx.x)); // not one fragment across the warp
          wmma::fill_fragment(fb, 1.0f);
          wmma::fill_fragment(acc, 0.0f);
          wmma::mma_sync(acc, fa, fb, acc);
        });
        cudaStreamSynchronize(s);
      },
      testing::ExitedWithCode(70), "passed different fragments");
}

TEST(CudaEmulator, BadLaunchesAndCopiesAreErrors) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  launch(s, 1, 2048, [] {});
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  float host[4] = {}, *p = deviceFloats(4);
  EXPECT_EQ(cudaMemcpy(p, host, 5 * sizeof(float), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue); // one element past the allocation
  EXPECT_EQ(cudaMemcpy(host, p, sizeof host, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpyAsync(p, host, sizeof host, cudaMemcpyDeviceToDevice, s),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(p + 1), cudaErrorInvalidValue);
  cudaFree(p);
  cudaStreamDestroy(s);
}

/// A preference for a 4 KiB workspace whose algorithms work at `alignment` bytes
/// for every operand.
cublasLtMatmulPreference_t preferenceFor(uint32_t alignment) {
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  uint64_t most = 4096;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &most,
                                       sizeof most);
  for (auto operand : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, operand, &alignment, sizeof alignment),
              CUBLAS_STATUS_SUCCESS);
  return pref;
}

TEST(CudaEmulator, LtMatmulBiasAddendAndChecks) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cublasLtHandle_t h;
  ASSERT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  // Two batches of column-major D (2x1) = A (2x3) B (3x1) + C + bias.
  std::vector<float> a = {1, 4, 2, 5, 3, 6, 0, 0, 0, 0, 0, 1}, b = {1, 1, 1, 1, 1, 1},
                     c = {10, 20, 30, 40}, bias = {100, 200}, d(4);
  float *da = deviceFloats(12), *db = deviceFloats(6), *dc = deviceFloats(4),
        *dd = deviceFloats(4), *dbias = deviceFloats(2), *work = deviceFloats(1024);
  cudaMemcpy(da, a.data(), 12 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), 6 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c.data(), 4 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, bias.data(), 2 * sizeof(float), cudaMemcpyHostToDevice);
  cublasLtMatmulDesc_t desc;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  const float *biasPtr = dbias;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr,
                                 sizeof biasPtr);
  cublasLtMatrixLayout_t la, lb, lc;
  auto batched = [](cublasLtMatrixLayout_t l, int64_t stride) {
    int32_t two = 2;
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &two, sizeof two);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof stride);
  };
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 2, 3, 2);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 1, 3);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 2, 1, 2);
  batched(la, 6);
  batched(lb, 3);
  batched(lc, 2);
  // The batches lie 24, 12 and 8 bytes apart: an algorithm for 4-byte alignment.
  cublasLtMatmulPreference_t pref = preferenceFor(4);
  uint64_t most = 4096;
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(found, 1);
  float one = 1;
  ASSERT_EQ(cublasLtMatmul(h, desc, &one, da, la, db, lb, &one, dc, lc, dd, lc, &r.algo, work,
                           4096, s),
            CUBLAS_STATUS_SUCCESS);
  cudaMemcpy(d.data(), dd, 4 * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(d, (std::vector<float>{6 + 10 + 100, 15 + 20 + 200, 0 + 30 + 100, 1 + 40 + 200}));
  // A smaller workspace than the heuristic asked for, or an algorithm it did not
  // give, is refused; so is a layout that reads past its allocation.
  EXPECT_EQ(cublasLtMatmul(h, desc, &one, da, la, db, lb, &one, dc, lc, dd, lc, &r.algo, work,
                           16, s),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulAlgo_t other = {};
  EXPECT_EQ(cublasLtMatmul(h, desc, &one, da, la, db, lb, &one, dc, lc, dd, lc, &other, work,
                           4096, s),
            CUBLAS_STATUS_INVALID_VALUE);
  // One chosen for the default 256 bytes refuses them, as cuBLASLt's may.
  cublasLtMatmulPreference_t strict;
  cublasLtMatmulPreferenceCreate(&strict);
  cublasLtMatmulPreferenceSetAttribute(strict, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &most,
                                       sizeof most);
  cublasLtMatmulHeuristicResult_t forAligned;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, strict, 1, &forAligned,
                                           &found),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmul(h, desc, &one, da, la, db, lb, &one, dc, lc, dd, lc,
                           &forAligned.algo, work, 4096, s),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulPreferenceDestroy(strict);
  batched(lb, 6); // the second batch of B starts past its 6 elements
  EXPECT_EQ(cublasLtMatmul(h, desc, &one, da, la, db, lb, &one, dc, lc, dd, lc, &r.algo, work,
                           4096, s),
            CUBLAS_STATUS_INVALID_VALUE);
  // A product whose shapes do not agree gets no algorithm.
  cublasLtMatrixLayout_t wrong;
  cublasLtMatrixLayoutCreate(&wrong, CUDA_R_32F, 4, 1, 4);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(h, desc, la, wrong, lc, lc, pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(found, 0);
  for (cublasLtMatrixLayout_t l : {la, lb, lc, wrong})
    cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(h);
  for (float *p : {da, db, dc, dd, dbias, work})
    cudaFree(p);
  cudaStreamDestroy(s);
}

TEST(CudaEmulator, LtMatmulBiasGradient) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cublasLtHandle_t h;
  ASSERT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  // D (2x3) = A (2x4) op(B), op(B) = B^T with B 3x4 as stored; the bias gradient
  // is op(B) summed over k: B's rows summed, one value per column of D.
  std::vector<float> a(8, 1), b = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, grad(3), d(6);
  float *da = deviceFloats(8), *db = deviceFloats(12), *dd = deviceFloats(6),
        *dgrad = deviceFloats(3), *work = deviceFloats(1024);
  cudaMemcpy(da, a.data(), 8 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), 12 * sizeof(float), cudaMemcpyHostToDevice);
  cublasLtMatmulDesc_t desc;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  int32_t transpose = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transpose, sizeof transpose);
  uint32_t epilogue = CUBLASLT_EPILOGUE_BGRADB;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  const float *gradPtr = dgrad;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &gradPtr,
                                 sizeof gradPtr);
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 2, 4, 2);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 4, 3);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 2, 3, 2);
  cublasLtMatmulPreference_t pref = preferenceFor(4);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(found, 1);
  float one = 1, zero = 0;
  ASSERT_EQ(cublasLtMatmul(h, desc, &one, da, la, db, lb, &zero, dd, ld, dd, ld, &r.algo, work,
                           4096, s),
            CUBLAS_STATUS_SUCCESS);
  cudaMemcpy(grad.data(), dgrad, 3 * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(d.data(), dd, 6 * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(grad, (std::vector<float>{1 + 4 + 7 + 10, 2 + 5 + 8 + 11, 3 + 6 + 9 + 12}));
  EXPECT_EQ(d, (std::vector<float>{22, 22, 26, 26, 30, 30}));
  // A bias gradient of a B that is not transposed, or of several products, gets
  // no algorithm here (not known to have one in cuBLASLt).
  int32_t keep = CUBLAS_OP_N;
  cublasLtMatrixLayout_t lbn;
  cublasLtMatrixLayoutCreate(&lbn, CUDA_R_32F, 4, 3, 4);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lbn, ld, ld, pref, 1, &r, &found),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(found, 0);
  for (cublasLtMatrixLayout_t l : {la, lb, ld, lbn})
    cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(h);
  for (float *p : {da, db, dd, dgrad, work})
    cudaFree(p);
  cudaStreamDestroy(s);
}

// The GELU epilogues (tanh form, in f32): GELU_AUX_BIAS writes D = GELU(AB + bias)
// and the aux matrix AB + bias; DGELU writes D = AB GELU'(aux). An aux leading
// dimension that is not a multiple of 8 gets no algorithm; an aux matrix past its
// allocation is refused.
TEST(CudaEmulator, LtMatmulGeluEpilogues) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cublasLtHandle_t h;
  ASSERT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  // D (8x2, column-major) = A (8x1) B (1x2) (+ bias, 8 values).
  std::vector<float> a = {-3, -1.5f, -0.5f, 0, 0.25f, 1, 2, 4}, b = {1, -0.5f},
                     bias = {0.1f, 0, 0, 0, 0, 0, 0, -0.1f}, d(16), aux(16);
  float *da = deviceFloats(8), *db = deviceFloats(2), *dd = deviceFloats(16),
        *dbias = deviceFloats(8), *daux = deviceFloats(16), *small = deviceFloats(8),
        *work = deviceFloats(1024);
  cudaMemcpy(da, a.data(), 8 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), 2 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, bias.data(), 8 * sizeof(float), cudaMemcpyHostToDevice);
  auto gelu = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 8, 1, 8);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 1, 2, 1);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 8, 2, 8);
  cublasLtMatmulPreference_t pref = preferenceFor(4);
  // One descriptor per epilogue; the algorithm for it, run.
  // auxAtRun: the aux pointer set after the heuristic chose (as a binder setting
  // each call's own).
  auto run = [&](uint32_t epilogue, float *auxPtr, int64_t auxLd, float *auxAtRun = nullptr) {
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                   sizeof epilogue);
    const float *biasPtr = dbias;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr,
                                   sizeof biasPtr);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &auxPtr,
                                   sizeof auxPtr);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd,
                                   sizeof auxLd);
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 1, &r, &found);
    int status = -1; // no algorithm
    float one = 1, zero = 0;
    if (auxAtRun)
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &auxAtRun,
                                     sizeof auxAtRun);
    if (found == 1)
      status = (int)cublasLtMatmul(h, desc, &one, da, la, db, lb, &zero, dd, ld, dd, ld,
                                   &r.algo, work, 4096, s);
    cudaStreamSynchronize(s);
    cublasLtMatmulDescDestroy(desc);
    return status;
  };
  ASSERT_EQ(run(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, daux, 8), (int)CUBLAS_STATUS_SUCCESS);
  cudaMemcpy(d.data(), dd, 16 * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(aux.data(), daux, 16 * sizeof(float), cudaMemcpyDeviceToHost);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 8; ++i) {
      float pre = a[i] * b[j] + bias[i];
      EXPECT_EQ(aux[j * 8 + i], pre) << i << ", " << j;
      EXPECT_NEAR(d[j * 8 + i], gelu(pre), 1e-6) << i << ", " << j;
    }
  ASSERT_EQ(run(CUBLASLT_EPILOGUE_DGELU, daux, 8), (int)CUBLAS_STATUS_SUCCESS);
  cudaMemcpy(d.data(), dd, 16 * sizeof(float), cudaMemcpyDeviceToHost);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 8; ++i) {
      double x = aux[j * 8 + i], step = 1e-4;
      double slope = (gelu(x + step) - gelu(x - step)) / (2 * step);
      EXPECT_NEAR(d[j * 8 + i], a[i] * b[j] * slope, 1e-5) << i << ", " << j;
    }
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, daux, 12), -1);
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_DGELU, small, 8), (int)CUBLAS_STATUS_INVALID_VALUE);
  // cublasLt.h: the heuristic decides the aux matrix's alignment from its pointer.
  // An algorithm chosen for a 256-byte aligned one fails on a 4-byte aligned one;
  // chosen for the 4-byte aligned one, it runs on both.
  float *wide = deviceFloats(20);
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, wide, 8, wide + 1),
            (int)CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(run(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, wide + 1, 8, wide),
            (int)CUBLAS_STATUS_SUCCESS);
  cudaFree(wide);
  for (cublasLtMatrixLayout_t l : {la, lb, ld})
    cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtDestroy(h);
  for (float *p : {da, db, dd, dbias, daux, small, work})
    cudaFree(p);
  cudaStreamDestroy(s);
}

TEST(CudaEmulator, CollectivesMeetAcrossThreads) {
  const int ranks = 3;
  std::vector<ncclComm_t> comms(ranks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), ranks, nullptr), ncclSuccess);
  std::vector<std::vector<float>> reduced(ranks), gathered(ranks), exchanged(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      cudaStream_t s;
      cudaStreamCreate(&s);
      float *in = deviceFloats(ranks), *sum = deviceFloats(1), *all = deviceFloats(ranks);
      std::vector<float> v(ranks);
      for (int i = 0; i < ranks; ++i)
        v[i] = float(10 * r + i);
      cudaMemcpy(in, v.data(), ranks * sizeof(float), cudaMemcpyHostToDevice);
      ncclReduceScatter(in, sum, 1, ncclFloat32, ncclSum, comms[r], s);
      ncclAllGather(sum, all, 1, ncclFloat32, comms[r], s);
      cudaStreamSynchronize(s);
      gathered[r].resize(ranks);
      cudaMemcpy(gathered[r].data(), all, ranks * sizeof(float), cudaMemcpyDeviceToHost);
      // All-to-all: rank r gets element r of every rank.
      ncclAlltoAll(in, all, 1, ncclFloat32, comms[r], s);
      cudaStreamSynchronize(s);
      exchanged[r].resize(ranks);
      cudaMemcpy(exchanged[r].data(), all, ranks * sizeof(float), cudaMemcpyDeviceToHost);
      cudaFree(in);
      cudaFree(sum);
      cudaFree(all);
      cudaStreamDestroy(s);
    });
  for (std::thread &t : threads)
    t.join();
  // Element i summed over ranks: i * 3 + (0 + 10 + 20).
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(gathered[r], (std::vector<float>{30, 33, 36}));
  // Rank r receives element r of each rank q's input: 10 q + r.
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(exchanged[r], (std::vector<float>{float(r), float(10 + r), float(20 + r)}));
  for (ncclComm_t c : comms)
    ncclCommDestroy(c);
}

TEST(CudaEmulator, SplitCommunicatorsSumWithinTheirGroup) {
  // 4 ranks: groups {0, 1} and {2, 3} (color r / 2), ranked by key -r (reversed).
  const int ranks = 4;
  std::vector<ncclComm_t> comms(ranks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), ranks, nullptr), ncclSuccess);
  std::vector<float> sums(ranks), gathered(2 * ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      cudaStream_t s;
      cudaStreamCreate(&s);
      ncclComm_t group = nullptr;
      ASSERT_EQ(ncclCommSplit(comms[r], r / 2, -r, &group, nullptr), ncclSuccess);
      float *in = deviceFloats(1), *sum = deviceFloats(1), *all = deviceFloats(2);
      float v = float(r + 1);
      cudaMemcpy(in, &v, sizeof v, cudaMemcpyHostToDevice);
      ncclAllReduce(in, sum, 1, ncclFloat32, ncclSum, group, s);
      ncclAllGather(in, all, 1, ncclFloat32, group, s);
      cudaStreamSynchronize(s);
      cudaMemcpy(&sums[r], sum, sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(&gathered[2 * r], all, 2 * sizeof(float), cudaMemcpyDeviceToHost);
      cudaFree(in);
      cudaFree(sum);
      cudaFree(all);
      ncclCommDestroy(group);
      cudaStreamDestroy(s);
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(sums, (std::vector<float>{3, 3, 7, 7}));
  // Keys reverse the order: rank 1 is the group's first, then rank 0.
  EXPECT_EQ(gathered, (std::vector<float>{2, 1, 2, 1, 4, 3, 4, 3}));
  for (ncclComm_t c : comms)
    ncclCommDestroy(c);
}

TEST(CudaEmulatorDeathTest, RanksThatDisagreeAreFatal) {
  EXPECT_EXIT(
      {
        std::vector<ncclComm_t> comms(2);
        ncclCommInitAll(comms.data(), 2, nullptr);
        std::vector<std::thread> threads;
        for (int r = 0; r < 2; ++r)
          threads.emplace_back([&, r] {
            cudaSetDevice(r);
            cudaStream_t s;
            cudaStreamCreate(&s);
            float *buf = deviceFloats(4);
            ncclAllReduce(buf, buf, r ? 4 : 2, ncclFloat32, ncclSum, comms[r], s);
            cudaStreamSynchronize(s);
          });
        for (std::thread &t : threads)
          t.join();
      },
      testing::ExitedWithCode(70), "NCCL ranks disagree at collective #0");
}


// CUDA runtime API, cudaThreadExchangeStreamCaptureMode: during a capture begun in
// thread-local (or global) mode, unsafe calls on the capturing thread fail with
// cudaErrorStreamCaptureUnsupported and invalidate the capture; relaxed mode and
// other threads of a thread-local capture may make them.
TEST(CudaEmulator, UnsafeCallsDuringACaptureFailAndInvalidateIt) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  float *p = deviceFloats(4);
  using Call = std::function<cudaError_t()>;
  std::vector<std::pair<const char *, Call>> unsafe = {
      {"cudaMalloc", [] { void *q = nullptr; return cudaMalloc(&q, 16); }},
      {"cudaFree", [&] { return cudaFree(p); }},
      {"cudaMemcpy", [&] { float v; return cudaMemcpy(&v, p, 4, cudaMemcpyDeviceToHost); }},
      {"cudaMemset", [&] { return cudaMemset(p, 0, 4); }},
      {"cudaDeviceSynchronize", [] { return cudaDeviceSynchronize(); }},
  };
  for (auto &[name, call] : unsafe) {
    SCOPED_TRACE(name);
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    store(s, p, 1);
    EXPECT_EQ(call(), cudaErrorStreamCaptureUnsupported);
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
  }
  // Relaxed: allowed. Thread-local: another thread may allocate meanwhile.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  void *q = nullptr;
  EXPECT_EQ(cudaMalloc(&q, 16), cudaSuccess);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  void *r = nullptr;
  std::thread([&] { EXPECT_EQ(cudaMalloc(&r, 16), cudaSuccess); }).join();
  store(s, p, 2);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  EXPECT_EQ(cudaFree(q), cudaSuccess);
  EXPECT_EQ(cudaFree(r), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  cudaStreamDestroy(s);
}

// A GPU leaves the order of a grid's blocks open, so float atomics sum in an
// order that changes between launches: the emulator draws a fresh order per grid.
TEST(CudaEmulator, AtomicsCompleteInAVaryingOrder) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  float *sum = deviceFloats(1);
  std::vector<float> sums;
  for (int launchNo = 0; launchNo < 20; ++launchNo) {
    cudaMemset(sum, 0, sizeof(float));
    // 64 blocks each add one term; 1 + 2^-24 rounding makes the total depend on
    // which terms met first.
    launch(s, 64, 1, [=] {
      float term = blockIdx.x % 2 ? 1.0f : 3e-8f * (float)(blockIdx.x + 1);
      atomicAdd(sum, term);
    });
    sums.push_back(read(sum));
  }
  std::sort(sums.begin(), sums.end());
  EXPECT_NE(sums.front(), sums.back()) << "20 launches summed in one order";
  cudaFree(sum);
  cudaStreamDestroy(s);
}

// NCCL user guide, "Using NCCL with CUDA Graphs": several GPUs per process with
// captured collectives may deadlock. The emulator's ranks are all threads of one
// process, so a captured collective over more than one rank is refused.
TEST(CudaEmulator, CapturedCollectivesOverSeveralGpusOfAProcessAreRefused) {
  std::vector<ncclComm_t> comms(2);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreate(&s);
  float *in = deviceFloats(2), *out = deviceFloats(2);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, comms[0], s), ncclInvalidUsage);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  // One rank alone (one GPU) may capture its collectives.
  ncclComm_t alone;
  ASSERT_EQ(ncclCommInitAll(&alone, 1, nullptr), ncclSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, alone, s), ncclSuccess);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
  for (ncclComm_t c : comms)
    ncclCommDestroy(c);
  ncclCommDestroy(alone);
}

} // namespace
