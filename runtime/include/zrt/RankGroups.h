//===- RankGroups.h - The ranks a plan's collective runs among --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A plan compiled for hybrid sharding (zero-opt --zero-shard-group-size=G) runs
// each collective among all ranks, among the G consecutive ranks of a shard group
// (ranks g*G .. g*G+G-1), or among the ranks at the same place of every group (a
// replica group: r mod G equal). A plan compiled with ZeRO++'s hpZ (zero-opt
// --zero-hpz-partition-size=G) gathers its secondary partitions within groups of G
// consecutive ranks, which shard no bucket (a node group). The collective kernels
// say which with the attributes `group` (1: shard, 2: replica, 3: node; none:
// every rank) and `group_size`.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RANKGROUPS_H
#define ZRT_RANKGROUPS_H

#include "zplan.pb.h"

#include <cstdint>
#include <string>

namespace zrt {

enum class RankGroup : int64_t { World = 0, Shard = 1, Replica = 2, Node = 3 };

/// Kernel `k`'s group and how many ranks it holds; an error naming the kernel
/// when its attributes do not describe a group of the plan's world.
RankGroup kernelRankGroup(const zero::zplan::Plan &plan, int k, int64_t &size,
                          const std::string &what);

/// The plan's shard group size G (hybrid sharding): 0 when the buckets are sharded
/// over all ranks. Its shard and replica kernels must agree on it.
int64_t planShardGroupSize(const zero::zplan::Plan &plan, const std::string &what);

/// The plan's hpZ group size (node kernels): 0 when it has none.
int64_t planNodeGroupSize(const zero::zplan::Plan &plan, const std::string &what);

} // namespace zrt

#endif // ZRT_RANKGROUPS_H
