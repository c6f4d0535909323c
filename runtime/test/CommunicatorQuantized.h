//===- CommunicatorQuantized.h - All-to-all and qwZ/qgZ, on every communicator -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The personalized exchange the quantized reduce-scatter is built on, then the
// three quantized collectives against exact results: each value within the error
// bound of every quantization it went through. The thread, TCP and MPI
// communicators' tests run the same body, on the world and on a group of it.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TEST_COMMUNICATORQUANTIZED_H
#define ZRT_TEST_COMMUNICATORQUANTIZED_H

#include "zrt/Communicator.h"
#include "zrt/QuantizedCollectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace zrt::test {

/// Rank r's value i: smooth, of both signs, a different scale per rank.
inline float quantizedTestValue(int r, int i) {
  return std::sin(0.37f * i + r) * (r + 1);
}

/// Checks all-to-all and the quantized collectives on `comm` (any size).
inline void checkQuantizedCollectives(Communicator &comm) {
  int n = comm.size(), me = comm.rank();
  // All-to-all: rank r sends rank p the bytes r * 16 + p, three of them.
  std::vector<char> sent(3 * n), received(3 * n);
  for (int p = 0; p < n; ++p)
    for (int k = 0; k < 3; ++k)
      sent[p * 3 + k] = char(me * 16 + p + k);
  comm.allToAllBytes(sent.data(), received.data(), 3);
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(received[r * 3 + k], char(r * 16 + me + k)) << "from rank " << r;

  // Blocks of 16 over chunks of 37 values: the last block of each chunk is short.
  const int64_t block = 16, part = 37, full = part * n;
  auto within = [&](float got, double exact, double bound) {
    EXPECT_LE(std::fabs(got - exact), bound * 1.0001 + 1e-6) << got << " vs " << exact;
  };
  // The largest magnitude of rank r's block holding value i of a chunk laid out
  // from `first`: the bound of that value's quantization is it / 254.
  auto blockMax = [&](int r, int64_t first, int64_t i, int64_t chunk) {
    int64_t b0 = first + (i - first) / block * block;
    float most = 0;
    for (int64_t j = b0; j < std::min(b0 + block, first + chunk); ++j)
      most = std::max(most, std::fabs(quantizedTestValue(r, (int)j)));
    return most;
  };
  std::vector<float> mine(full), out(full), slice(part);
  for (int64_t i = 0; i < full; ++i)
    mine[i] = quantizedTestValue(me, (int)i);

  // qwZ's all-gather: every part as its owner sent it, quantized once.
  QuantizationError before = comm.quantization;
  std::vector<float> own(mine.begin() + me * part, mine.begin() + (me + 1) * part);
  quantizedAllGather(comm, own.data(), out.data(), part, zero::zplan::F32, block);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < part; ++i) {
      int64_t at = r * part + i;
      within(out[at], quantizedTestValue(r, (int)at),
             blockMax(r, r * part, at, part) * kQuantizationErrorBound);
    }
  EXPECT_GT(comm.quantization.values, before.values);
  EXPECT_LE(comm.quantization.worstBlock, kQuantizationErrorBound * 1.0001);

  // qgZ's reduce-scatter: this rank's chunk summed, every other rank's part
  // quantized once.
  quantizedReduceScatterSum(comm, mine.data(), slice.data(), part, zero::zplan::F32, block);
  for (int64_t i = 0; i < part; ++i) {
    int64_t at = me * part + i;
    double exact = 0, bound = 0;
    for (int r = 0; r < n; ++r) {
      exact += quantizedTestValue(r, (int)at);
      if (r != me)
        bound += blockMax(r, me * part, at, part) * kQuantizationErrorBound;
    }
    within(slice[i], exact, bound);
  }

  // The all-reduce: a reduce-scatter over ceil(count / n) chunks, then a
  // quantized all-gather of the sums: loosely, the sum of the bounds twice.
  const int64_t count = full - 5; // chunks of unequal use: the last is padded
  quantizedAllReduceSum(comm, mine.data(), out.data(), count, zero::zplan::F32, block);
  for (int64_t i = 0; i < count; ++i) {
    double exact = 0, most = 0;
    for (int r = 0; r < n; ++r) {
      exact += quantizedTestValue(r, (int)i);
      most += r + 1; // |value| <= r + 1
    }
    within(out[i], exact, 2 * most * kQuantizationErrorBound);
  }
  // Every rank holds the same all-reduced bits (the owners' sums, dequantized).
  std::vector<float> all(count * n);
  comm.allGather(out.data(), all.data(), count, zero::zplan::F32);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(0, std::memcmp(all.data() + r * count, out.data(), count * sizeof(float)));

  // A block holding a NaN or an infinity comes back NaN (an overflow stays seen):
  // rank 1's value 3 goes to rank 0 quantized, in block 0..15 of its chunk.
  if (n < 2)
    return;
  std::vector<float> bad(mine);
  if (me == 1)
    bad[3] = INFINITY;
  quantizedReduceScatterSum(comm, bad.data(), slice.data(), part, zero::zplan::F32, block);
  if (me == 0) {
    for (int64_t i = 0; i < block; ++i)
      EXPECT_TRUE(std::isnan(slice[i])) << i;
    EXPECT_TRUE(std::isfinite(slice[block]));
  }
}

} // namespace zrt::test

#endif // ZRT_TEST_COMMUNICATORQUANTIZED_H
