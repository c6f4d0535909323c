//===- ArenaAllocator.cpp - Static placement of buffers in one arena ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Conversion/ComputeToPlan/ArenaAllocator.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace zero;

int64_t ArenaAllocator::allocate(int64_t bytes) {
  int64_t size = std::max<int64_t>(bytes, 1);
  size = (size + alignment - 1) / alignment * alignment;
  ranges.push_back({size, clock++, std::numeric_limits<int64_t>::max()});
  return (int64_t)ranges.size() - 1;
}

void ArenaAllocator::release(int64_t id) {
  if (id < 0 || id >= (int64_t)ranges.size() ||
      ranges[id].end != std::numeric_limits<int64_t>::max())
    return;
  ranges[id].end = clock++;
}

void ArenaAllocator::place() {
  // Largest first (ties: earlier first, then by id: deterministic).
  std::vector<int64_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return ranges[a].bytes != ranges[b].bytes ? ranges[a].bytes > ranges[b].bytes
                                              : ranges[a].begin < ranges[b].begin;
  });
  std::vector<int64_t> placed; // by offset
  peak = 0;
  for (int64_t id : order) {
    Range &r = ranges[id];
    int64_t candidate = 0;
    for (int64_t other : placed) {
      const Range &o = ranges[other];
      if (o.end <= r.begin || r.end <= o.begin)
        continue; // never alive at the same time
      if (o.offset - candidate >= r.bytes)
        break;
      candidate = std::max(candidate, o.offset + o.bytes);
    }
    r.offset = candidate;
    peak = std::max(peak, candidate + r.bytes);
    auto at = std::upper_bound(placed.begin(), placed.end(), id, [&](int64_t a, int64_t b) {
      return ranges[a].offset < ranges[b].offset;
    });
    placed.insert(at, id);
  }
}
