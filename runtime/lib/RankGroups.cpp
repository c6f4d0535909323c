//===- RankGroups.cpp - The ranks a plan's collective runs among ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/RankGroups.h"
#include "zrt/Error.h"
#include "zplan/KernelKind.h"

#include <algorithm>
#include <initializer_list>

using namespace zrt;

namespace {

/// Integer attribute `key` of kernel `k`, or `otherwise` when absent.
int64_t intAttrOr(const zero::zplan::Kernel &k, const std::string &key, int64_t otherwise,
                  bool &present) {
  auto it = k.attrs().find(key);
  present = it != k.attrs().end();
  if (!present)
    return otherwise;
  return it->second.value_case() == zero::zplan::Attr::kI ? it->second.i() : -1;
}

} // namespace

RankGroup zrt::kernelRankGroup(const zero::zplan::Plan &plan, int k, int64_t &size,
                               const std::string &what) {
  const auto &kern = plan.kernels(k);
  bool hasGroup = false, hasSize = false;
  int64_t group = intAttrOr(kern, "group", 0, hasGroup);
  size = intAttrOr(kern, "group_size", plan.world_size(), hasSize);
  int64_t world = plan.world_size();
  ZRT_CHECK(hasGroup == hasSize && group >= 0 && group <= 3 && size >= 1 &&
                world % size == 0 && (group != 0 || size == world),
            what << ": kernel " << k << " (" << zero::zplan::kernelKindName(kern.kind())
                 << ") names rank group "
                 << group << " of " << size << " ranks, which is not a group of the plan's "
                 << world << " ranks");
  return RankGroup(group);
}

namespace {

/// The group size the plan's kernels of `kinds` imply, checked to be one; 0 when
/// there are none.
int64_t impliedGroupSize(const zero::zplan::Plan &plan, const std::string &what,
                         std::initializer_list<RankGroup> kinds, const char *meaning) {
  int64_t implied = 0;
  for (int k = 0; k < plan.kernels_size(); ++k) {
    int64_t size = 0;
    RankGroup g = kernelRankGroup(plan, k, size, what);
    if (std::find(kinds.begin(), kinds.end(), g) == kinds.end())
      continue;
    // A replica group of R ranks implies shard groups of world / R.
    int64_t n = g == RankGroup::Replica ? plan.world_size() / size : size;
    ZRT_CHECK(implied == 0 || implied == n,
              what << ": kernel " << k << " ("
                   << zero::zplan::kernelKindName(plan.kernels(k).kind()) << ") implies "
                   << meaning << " of " << n << " ranks, an earlier kernel " << implied);
    implied = n;
  }
  return implied;
}

} // namespace

int64_t zrt::planShardGroupSize(const zero::zplan::Plan &plan, const std::string &what) {
  return impliedGroupSize(plan, what, {RankGroup::Shard, RankGroup::Replica}, "shard groups");
}

int64_t zrt::planNodeGroupSize(const zero::zplan::Plan &plan, const std::string &what) {
  return impliedGroupSize(plan, what, {RankGroup::Node}, "hpZ groups");
}
