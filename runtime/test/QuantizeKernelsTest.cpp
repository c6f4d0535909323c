//===- QuantizeKernelsTest.cpp - The GPU's int8 wire form, against the CPU's -===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The quantized collectives must give the same bits on both backends: the GPU
// kernels (QuantizeKernels.cu, on the emulated device) write the CPU's wire form
// byte for byte, unpack it to the same values and sum chunks in the same order.
//
//===----------------------------------------------------------------------===//

#include "../lib/cuda/QuantizeKernels.h"

#include "zrt/BlockQuantization.h"
#include "zrt/Float16.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace zrt;
using namespace zrt::cuda;

namespace {

template <typename T> T *toDevice(const std::vector<T> &v) {
  T *p = nullptr;
  cudaMalloc(reinterpret_cast<void **>(&p), std::max<size_t>(1, v.size() * sizeof(T)));
  cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}
template <typename T> std::vector<T> toHost(const T *p, size_t n) {
  std::vector<T> v(n);
  cudaDeviceSynchronize();
  cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = std::sin(0.7f * i + seed) * (1 + i % 5) * 0.01f;
  return v;
}

} // namespace

TEST(QuantizeKernels, TheWireFormIsTheCpusByteForByte) {
  const int64_t chunk = 100, chunks = 3, block = 32, count = 290; // last chunk padded
  std::vector<float> x = values(count, 1);
  x[40] = NAN; // chunk 0's block 1 comes back NaN
  int64_t message = quantizedBytes(chunk, block);
  float *in = toDevice(x);
  uint8_t *wire = toDevice(std::vector<uint8_t>(message * chunks, 0xAB));
  quantizeChunks(nullptr, Elem::F32, in, count, chunk, chunks, block, /*skip=*/1, wire);
  std::vector<uint8_t> got = toHost(wire, message * chunks);
  for (int64_t c = 0; c < chunks; ++c) {
    if (c == 1) { // skipped: untouched
      for (int64_t i = 0; i < message; ++i)
        ASSERT_EQ(got[c * message + i], 0xAB);
      continue;
    }
    std::vector<float> padded(chunk, 0.0f);
    for (int64_t i = 0; i < chunk && c * chunk + i < count; ++i)
      padded[i] = x[c * chunk + i];
    std::vector<uint8_t> cpu(message);
    QuantizationError error;
    quantizeBlocks(padded.data(), zero::zplan::F32, chunk, block, cpu.data(), error);
    EXPECT_EQ(0, std::memcmp(cpu.data(), got.data() + c * message, message)) << "chunk " << c;
  }
  // Unpacked as the CPU unpacks it (chunks 0 and 2 written from the CPU's form).
  float *out = toDevice(std::vector<float>(chunk * chunks));
  dequantizeChunks(nullptr, Elem::F32, wire, chunk, block, chunk, out);
  std::vector<float> back = toHost(out, chunk), cpuBack(chunk);
  dequantizeBlocks(got.data(), chunk, block, cpuBack.data());
  for (int64_t i = 0; i < chunk; ++i)
    if (std::isnan(cpuBack[i]))
      EXPECT_TRUE(std::isnan(back[i])) << i;
    else
      EXPECT_EQ(back[i], cpuBack[i]) << i;
  EXPECT_TRUE(std::isnan(back[40]));
  cudaFree(in);
  cudaFree(wire);
  cudaFree(out);
}

TEST(QuantizeKernels, ChunksSumInRankOrderAsTheCpusDo) {
  // Rank 1 of 3 sums its own chunk (exact) with ranks 0 and 2's messages, bf16.
  const int64_t chunk = 70, block = 16;
  int64_t message = quantizedBytes(chunk, block);
  std::vector<bf16> own(chunk);
  std::vector<float> ownF = values(chunk, 5);
  for (int64_t i = 0; i < chunk; ++i)
    own[i] = bf16(ownF[i]);
  std::vector<uint8_t> wire(3 * message, 0);
  std::vector<std::vector<float>> from(3);
  for (int r : {0, 2}) {
    std::vector<bf16> x(chunk);
    std::vector<float> v = values(chunk, 10 + r);
    for (int64_t i = 0; i < chunk; ++i)
      x[i] = bf16(v[i]);
    QuantizationError error;
    quantizeBlocks(x.data(), zero::zplan::BF16, chunk, block, wire.data() + r * message, error);
    from[r].resize(chunk);
    dequantizeBlocks(wire.data() + r * message, chunk, block, from[r].data());
  }
  uint8_t *dwire = toDevice(wire);
  bf16 *downs = toDevice(own), *dout = toDevice(std::vector<bf16>(chunk));
  sumQuantizedChunks(nullptr, Elem::BF16, dwire, downs, chunk, /*me=*/1, 3, chunk, block, dout);
  std::vector<bf16> got = toHost(dout, chunk);
  for (int64_t i = 0; i < chunk; ++i) {
    float sum = 0.0f;
    sum += from[0][i];
    sum += (float)own[i];
    sum += from[2][i];
    EXPECT_EQ(got[i].bits, bf16(sum).bits) << i;
  }
  cudaFree(dwire);
  cudaFree(downs);
  cudaFree(dout);
}
