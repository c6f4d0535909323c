//===- ParallelForTest.cpp - The CPU kernels' thread pool -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/ParallelFor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace zrt;

namespace {

struct ThreadsFor {
  explicit ThreadsFor(int n) { setKernelThreads(n); }
  ~ThreadsFor() { setKernelThreads(1); }
};

TEST(ParallelFor, CoversEveryIndexOnceManyTimesOver) {
  ThreadsFor threads(3);
  for (int64_t n : {1, 2, 3, 7, 100, 1000, 4097}) {
    for (int round = 0; round < 200; ++round) { // kernels follow each other closely
      std::vector<std::atomic<int>> hits(n);
      parallelFor(n, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
          ++hits[i];
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "n " << n << " index " << i;
    }
  }
}

TEST(ParallelFor, SplitsOnlyAboveTheGrain) {
  ThreadsFor threads(4);
  std::atomic<int> ranges{0};
  parallelFor(100, 64, [&](int64_t, int64_t) { ++ranges; });
  EXPECT_EQ(ranges.load(), 1);
  ranges = 0;
  parallelFor(400, 64, [&](int64_t, int64_t) { ++ranges; });
  EXPECT_EQ(ranges.load(), 4);
}

TEST(ParallelFor, RethrowsARangesErrorAfterAllRangesEnd) {
  ThreadsFor threads(3);
  std::atomic<int> ended{0};
  EXPECT_THROW(parallelFor(3, 1,
                           [&](int64_t lo, int64_t) {
                             ++ended;
                             if (lo == 1)
                               throw std::runtime_error("range failed");
                           }),
               std::runtime_error);
  EXPECT_EQ(ended.load(), 3);
  // The pool still works.
  std::atomic<int64_t> sum{0};
  parallelFor(1000, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

TEST(ParallelFor, NestedCallsRunInline) {
  ThreadsFor threads(2);
  std::vector<std::atomic<int>> hits(64 * 64);
  parallelFor(64, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      parallelFor(64, 1, [&](int64_t a, int64_t b) {
        for (int64_t j = a; j < b; ++j)
          ++hits[i * 64 + j];
      });
  });
  for (auto &h : hits)
    ASSERT_EQ(h.load(), 1);
}

TEST(ParallelFor, ConcurrentCallersEachGetTheirRangesCovered) {
  ThreadsFor threads(2);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> hits(513);
        parallelFor(513, 1, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i)
            ++hits[i];
        });
        for (auto &h : hits)
          wrong += h.load() != 1;
      }
    });
  for (auto &t : callers)
    t.join();
  EXPECT_EQ(wrong.load(), 0);
}

} // namespace
