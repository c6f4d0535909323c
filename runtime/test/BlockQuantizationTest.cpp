//===- BlockQuantizationTest.cpp - int8 blocks with one scale each --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/BlockQuantization.h"
#include "zrt/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace zrt;

namespace {

/// Quantizes and dequantizes `x` (f32) in blocks of `block`.
std::vector<float> roundTrip(const std::vector<float> &x, int64_t block,
                             QuantizationError &error) {
  std::vector<char> wire(quantizedBytes((int64_t)x.size(), block));
  quantizeBlocks(x.data(), zero::zplan::F32, (int64_t)x.size(), block, wire.data(), error);
  std::vector<float> back(x.size());
  dequantizeBlocks(wire.data(), (int64_t)x.size(), block, back.data());
  return back;
}

} // namespace

TEST(BlockQuantization, WireForm) {
  EXPECT_EQ(quantizedBytes(256, 256), 256 + 4);
  EXPECT_EQ(quantizedBytes(257, 256), 257 + 8);
  EXPECT_EQ(quantizedBytes(0, 256), 0);
  // 10 elements over 4 ranks: chunks of 3 (the last padded), each 3 + 4 bytes.
  EXPECT_EQ(zplan::quantizedCollectiveBytes(10, 4, 256), 4 * 7);
}

TEST(BlockQuantization, EachValueWithinHalfAStepOfItsBlock) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0, 0.02f);
  std::vector<float> x(1000);
  for (float &v : x)
    v = normal(gen);
  x[17] = 0.5f; // an outlier widens its block's step only
  const int64_t block = 64;
  QuantizationError error;
  std::vector<float> back = roundTrip(x, block, error);
  for (size_t b0 = 0; b0 < x.size(); b0 += block) {
    float most = 0;
    for (size_t i = b0; i < std::min(x.size(), b0 + block); ++i)
      most = std::max(most, std::fabs(x[i]));
    for (size_t i = b0; i < std::min(x.size(), b0 + block); ++i)
      EXPECT_LE(std::fabs(back[i] - x[i]), most * kQuantizationErrorBound * 1.0001) << i;
  }
  // The block's largest value is exact (it is 127 steps).
  EXPECT_FLOAT_EQ(back[17], 0.5f);
  // What was measured: a relative L2 error well below the worst case, the worst
  // block at most the bound.
  EXPECT_EQ(error.values, 1000);
  EXPECT_GT(error.relative(), 0.0);
  EXPECT_LT(error.relative(), 0.02); // ~0.6% for a normal block, more for the outlier's
  EXPECT_GT(error.worstBlock, 0.0);
  EXPECT_LE(error.worstBlock, kQuantizationErrorBound * 1.0001);
}

TEST(BlockQuantization, ZeroBlocksAndNonFiniteValues) {
  std::vector<float> x(40, 0.0f);
  x[20] = NAN;
  x[35] = 1.0f; // block 32..39
  x[33] = -INFINITY;
  QuantizationError error;
  std::vector<float> back = roundTrip(x, 8, error);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(back[i], 0.0f); // all-zero blocks: exact
  for (int i = 16; i < 24; ++i)
    EXPECT_TRUE(std::isnan(back[i])) << i; // the NaN's block
  for (int i = 32; i < 40; ++i)
    EXPECT_TRUE(std::isnan(back[i])) << i; // the infinity's block
}

TEST(BlockQuantization, SixteenBitBuffers) {
  std::vector<bf16> b(100);
  std::vector<f16> h(100);
  for (int i = 0; i < 100; ++i)
    b[i] = bf16(std::cos(0.1f * i)), h[i] = f16((float)b[i]);
  for (DType t : {zero::zplan::BF16, zero::zplan::F16}) {
    const void *in = t == zero::zplan::BF16 ? (const void *)b.data() : (const void *)h.data();
    std::vector<char> wire(quantizedBytes(100, 32));
    QuantizationError error;
    quantizeBlocks(in, t, 100, 32, wire.data(), error);
    std::vector<float> back(100);
    dequantizeBlocks(wire.data(), 100, 32, back.data());
    for (int i = 0; i < 100; ++i)
      EXPECT_NEAR(back[i], (float)b[i], kQuantizationErrorBound * 1.0001);
  }
  QuantizationError error;
  std::vector<char> wire(16);
  int32_t ints[4] = {};
  EXPECT_ANY_THROW(quantizeBlocks(ints, zero::zplan::I32, 4, 4, wire.data(), error));
}
