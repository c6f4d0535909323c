//===- CommunicatorGroups.h - One test of split, for every communicator -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A 2-D grid's groups, as hybrid sharding uses them: 4 ranks split into shard
// groups {0,1}, {2,3} (color r / 2) and replica groups {0,2}, {1,3} (color r % 2),
// each group's collectives checked against exact sums. The thread, TCP and MPI
// communicators' tests run the same body.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TEST_COMMUNICATORGROUPS_H
#define ZRT_TEST_COMMUNICATORGROUPS_H

#include "zrt/Communicator.h"

#include <gtest/gtest.h>

#include <vector>

namespace zrt::test {

/// Rank `r` of a world of 4 (`world`) splits it and checks each group.
inline void checkGroupsOfFour(Communicator &world) {
  ASSERT_EQ(world.size(), 4);
  int r = world.rank();
  std::unique_ptr<Communicator> shard = world.split(r / 2, r);
  std::unique_ptr<Communicator> replica = world.split(r % 2, r);
  ASSERT_EQ(shard->size(), 2);
  ASSERT_EQ(replica->size(), 2);
  EXPECT_EQ(shard->rank(), r % 2);
  EXPECT_EQ(replica->rank(), r / 2);
  const int n = 6;
  std::vector<float> v(n), sum(n);
  for (int i = 0; i < n; ++i)
    v[i] = float((r + 1) * (i + 1));
  // Shard groups: ranks 0+1 (1+2 = 3) and 2+3 (3+4 = 7).
  shard->allReduceSum(v.data(), sum.data(), n, zero::zplan::F32);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(sum[i], float((r < 2 ? 3 : 7) * (i + 1)));
  // Replica groups: ranks 0+2 (1+3 = 4) and 1+3 (2+4 = 6), each its half.
  std::vector<float> half(n / 2);
  replica->reduceScatterSum(v.data(), half.data(), n / 2, zero::zplan::F32);
  for (int i = 0; i < n / 2; ++i)
    EXPECT_EQ(half[i], float((r % 2 ? 6 : 4) * (replica->rank() * n / 2 + i + 1)));
  std::vector<float> gathered(n);
  shard->allGather(half.data(), gathered.data(), n / 2, zero::zplan::F32);
  std::vector<int64_t> ranks = shard->allGatherInts(r);
  EXPECT_EQ(ranks, r < 2 ? std::vector<int64_t>({0, 1}) : std::vector<int64_t>({2, 3}));
  // The world still works after its groups did, and keys order a group.
  EXPECT_DOUBLE_EQ(world.meanOf(r), 1.5);
  std::unique_ptr<Communicator> reversed = world.split(0, -r);
  EXPECT_EQ(reversed->size(), 4);
  EXPECT_EQ(reversed->rank(), 3 - r);
  EXPECT_EQ(reversed->allGatherInts(r), std::vector<int64_t>({3, 2, 1, 0}));
}

} // namespace zrt::test

#endif // ZRT_TEST_COMMUNICATORGROUPS_H
