//===- QuantizeKernels.cu - ZeRO++'s int8 wire form on the GPU ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The GPU's side of the quantized collectives (zrt/QuantizedCollectives.h has the
// CPU's): packing chunks into the wire form of zplan/QuantizedWire.h, unpacking a
// gather's, and summing a reduce-scatter's chunks in rank order. Every operation
// rounds as the CPU's does (explicit _rn intrinsics: no fused multiply-adds), so
// a plan's quantized collectives give the same bits on both backends.
//
//===----------------------------------------------------------------------===//

#include "QuantizeKernels.h"
#include "CheckedLaunch.h"

#include "zrt/Float16.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace zrt::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T> __device__ float widen(T v) { return (float)v; }
__device__ bool finite(float v) { return (floatBits(v) & 0x7f800000u) != 0x7f800000u; }

/// The scale at byte `at` of a wire buffer (messages are packed back to back: it
/// may be unaligned).
__device__ float scaleAt(const uint8_t *at) {
  uint32_t bits = (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 |
                  (uint32_t)at[3] << 24;
  return bitsFloat(bits);
}
__device__ void storeScale(uint8_t *at, float scale) {
  uint32_t bits = floatBits(scale);
  for (int k = 0; k < 4; ++k)
    at[k] = (uint8_t)(bits >> (8 * k));
}

/// One thread block per quantization block: chunk c's block b of values
/// c * chunk + b * block ..., zero at or past `count`. Chunk `skip` stays unpacked.
template <typename T>
__global__ void quantizeKernel(const T *in, int64_t count, int64_t chunk, int64_t blocks,
                               int64_t block, int64_t skip, uint8_t *wire) {
  int64_t c = blockIdx.x / blocks, b = blockIdx.x % blocks;
  if (c == skip)
    return;
  int64_t first = c * chunk + b * block, n = block < chunk - b * block ? block : chunk - b * block;
  __shared__ float most[kThreads];
  __shared__ int bad[kThreads];
  float m = 0;
  int nonfinite = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = first + i < count ? widen(in[first + i]) : 0.0f;
    nonfinite |= !finite(v);
    m = fmaxf(m, fabsf(v));
  }
  most[threadIdx.x] = m;
  bad[threadIdx.x] = nonfinite;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if ((int)threadIdx.x < k) {
      most[threadIdx.x] = fmaxf(most[threadIdx.x], most[threadIdx.x + k]);
      bad[threadIdx.x] |= bad[threadIdx.x + k];
    }
    __syncthreads();
  }
  uint8_t *message = wire + c * (blocks * 4 + chunk);
  int8_t *q = reinterpret_cast<int8_t *>(message + blocks * 4) + b * block;
  float scale = bad[0] ? bitsFloat(0x7fc00000u) : __fdiv_rn(most[0], 127.0f);
  if (threadIdx.x == 0)
    storeScale(message + b * 4, scale);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = first + i < count ? widen(in[first + i]) : 0.0f;
    float r = !bad[0] && scale > 0 ? rintf(__fdiv_rn(v, scale)) : 0.0f;
    q[i] = (int8_t)fminf(127.0f, fmaxf(-127.0f, r));
  }
}

/// out[i] for i < count: value i of the chunks' wire form, dequantized.
template <typename T>
__global__ void dequantizeKernel(const uint8_t *wire, int64_t chunk, int64_t blocks,
                                 int64_t block, int64_t count, T *out) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  int64_t c = i / chunk, j = i % chunk;
  const uint8_t *message = wire + c * (blocks * 4 + chunk);
  int8_t q = reinterpret_cast<const int8_t *>(message + blocks * 4)[j];
  out[i] = T(__fmul_rn((float)q, scaleAt(message + j / block * 4)));
}

/// out[i] = the sum over ranks in rank order, in f32: rank `me`'s own[i] (exact,
/// zero at or past ownCount), every other rank's chunk dequantized.
template <typename T>
__global__ void sumKernel(const uint8_t *wire, const T *own, int64_t ownCount, int me,
                          int ranks, int64_t chunk, int64_t blocks, int64_t block, T *out) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= chunk)
    return;
  float sum = 0.0f;
  for (int r = 0; r < ranks; ++r) {
    float term;
    if (r == me) {
      term = i < ownCount ? widen(own[i]) : 0.0f;
    } else {
      const uint8_t *message = wire + r * (blocks * 4 + chunk);
      int8_t q = reinterpret_cast<const int8_t *>(message + blocks * 4)[i];
      term = __fmul_rn((float)q, scaleAt(message + i / block * 4));
    }
    sum = __fadd_rn(sum, term);
  }
  out[i] = T(sum);
}

} // namespace

void quantizeChunks(cudaStream_t s, Elem t, const void *in, int64_t count, int64_t chunk,
                    int64_t chunks, int64_t block, int64_t skip, void *wire) {
  int64_t blocks = (chunk + block - 1) / block;
  dispatchFloat(t, [&](auto z) {
    using T = decltype(z);
    launchChecked<true>("quantize_blocks", quantizeKernel<T>, chunks * blocks, kThreads, s,
                 static_cast<const T *>(in), count, chunk, blocks, block, skip,
                 static_cast<uint8_t *>(wire));
  });
}

void dequantizeChunks(cudaStream_t s, Elem t, const void *wire, int64_t chunk,
                      int64_t block, int64_t count, void *out) {
  int64_t blocks = (chunk + block - 1) / block;
  dispatchFloat(t, [&](auto z) {
    using T = decltype(z);
    launchChecked<false>("dequantize_blocks", dequantizeKernel<T>, (count + kThreads - 1) / kThreads,
                  kThreads, s, static_cast<const uint8_t *>(wire), chunk, blocks, block,
                  count, static_cast<T *>(out));
  });
}

void sumQuantizedChunks(cudaStream_t s, Elem t, const void *wire, const void *own,
                        int64_t ownCount, int me, int ranks, int64_t chunk, int64_t block,
                        void *out) {
  int64_t blocks = (chunk + block - 1) / block;
  dispatchFloat(t, [&](auto z) {
    using T = decltype(z);
    launchChecked<false>("sum_quantized_chunks", sumKernel<T>, (chunk + kThreads - 1) / kThreads,
                  kThreads, s, static_cast<const uint8_t *>(wire), static_cast<const T *>(own),
                  ownCount, me, ranks, chunk, blocks, block, static_cast<T *>(out));
  });
}

} // namespace zrt::cuda
