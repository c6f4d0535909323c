//===- ThreadCommunicatorTest.cpp - Collectives among threads of a process ===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "CommunicatorGroups.h"
#include "CommunicatorQuantized.h"

#include "zrt/Communicator.h"
#include "zrt/Error.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

using namespace zrt;

namespace {

/// Runs `body(rank, comm)` on one thread per rank and joins them.
void onRanks(int ranks, const std::function<void(int, Communicator &)> &body) {
  auto comms = makeThreadCommunicators(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { body(r, *comms[r]); });
  for (auto &t : threads)
    t.join();
}

TEST(ThreadCommunicator, CollectivesMatchTheirDefinitions) {
  const int ranks = 3, count = 4;
  std::vector<std::vector<float>> gathered(ranks), scattered(ranks), reduced(ranks);
  onRanks(ranks, [&](int r, Communicator &comm) {
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.size(), ranks);
    // In place, as the plan's buckets are: rank r's shard sits at out + r * count.
    std::vector<float> all(ranks * count, -1);
    for (int i = 0; i < count; ++i)
      all[r * count + i] = 10 * r + i;
    comm.allGather(all.data() + r * count, all.data(), count, zero::zplan::F32);
    gathered[r] = all;
    std::vector<float> full(ranks * count), shard(count);
    for (int i = 0; i < ranks * count; ++i)
      full[i] = (r + 1) * i;
    comm.reduceScatterSum(full.data(), shard.data(), count, zero::zplan::F32);
    scattered[r] = shard;
    comm.allReduceSum(full.data(), full.data(), ranks * count, zero::zplan::F32);
    reduced[r] = full;
    EXPECT_DOUBLE_EQ(comm.meanOf(r), 1.0);
    std::vector<int64_t> ints = comm.gatherInts(100 + r);
    EXPECT_EQ(ints, r == 0 ? std::vector<int64_t>({100, 101, 102})
                           : std::vector<int64_t>({100 + r}));
    int64_t id = r == 0 ? 42 : 0;
    comm.broadcast(&id, sizeof(id));
    EXPECT_EQ(id, 42);
  });
  for (int r = 0; r < ranks; ++r) {
    for (int q = 0; q < ranks; ++q)
      for (int i = 0; i < count; ++i)
        EXPECT_EQ(gathered[r][q * count + i], 10 * q + i);
    // sum over q of (q + 1) * (r * count + i) = 6 * (r * count + i)
    for (int i = 0; i < count; ++i)
      EXPECT_EQ(scattered[r][i], 6 * (r * count + i));
    for (int i = 0; i < ranks * count; ++i)
      EXPECT_EQ(reduced[r][i], 6 * i);
  }
}

TEST(ThreadCommunicator, Groups) {
  onRanks(4, [](int, Communicator &comm) { test::checkGroupsOfFour(comm); });
}

TEST(ThreadCommunicator, QuantizedCollectives) {
  onRanks(4, [](int r, Communicator &comm) {
    test::checkQuantizedCollectives(comm);
    std::unique_ptr<Communicator> pair = comm.split(r / 2, r); // a group, as hybrid grids
    test::checkQuantizedCollectives(*pair);
  });
  onRanks(3, [](int, Communicator &comm) { test::checkQuantizedCollectives(comm); });
}

TEST(ThreadCommunicator, AFailingRankAlsoStopsTheOthersInGroups) {
  std::vector<std::string> errors(4);
  onRanks(4, [&](int r, Communicator &comm) {
    std::unique_ptr<Communicator> pair = comm.split(r / 2, r);
    if (r == 1) {
      comm.abort();
      return;
    }
    try {
      pair->meanOf(1.0); // rank 0 waits for rank 1 in their group
      comm.meanOf(1.0);
    } catch (const Error &e) {
      errors[r] = e.what();
    }
  });
  for (int r : {0, 2, 3})
    EXPECT_EQ(errors[r], "another rank of this process failed") << r;
}

TEST(ThreadCommunicator, AFailingRankStopsTheOthersWaiting) {
  std::vector<std::string> errors(3);
  onRanks(3, [&](int r, Communicator &comm) {
    if (r == 1) {
      comm.abort();
      return;
    }
    try {
      comm.meanOf(1.0);
    } catch (const Error &e) {
      errors[r] = e.what();
    }
  });
  EXPECT_NE(errors[0].find("another rank of this process failed"), std::string::npos);
  EXPECT_NE(errors[2].find("another rank of this process failed"), std::string::npos);
}

TEST(ThreadCommunicator, RefusesSumsOfTypesItCannotAdd) {
  std::string error;
  onRanks(2, [&](int r, Communicator &comm) {
    uint8_t x[2] = {1, 2}, y[1];
    try {
      comm.reduceScatterSum(x, y, 1, zero::zplan::U8);
    } catch (const Error &e) {
      if (r == 0)
        error = e.what();
    }
  });
  EXPECT_NE(error.find("summing u8 across ranks is not supported"), std::string::npos)
      << error;
}

} // namespace
