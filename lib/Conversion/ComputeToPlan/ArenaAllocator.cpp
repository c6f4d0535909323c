//===- ArenaAllocator.cpp - Static first-fit placement in one arena -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Conversion/ComputeToPlan/ArenaAllocator.h"

#include <algorithm>

using namespace zero;

int64_t ArenaAllocator::allocate(int64_t bytes) {
  int64_t size = std::max<int64_t>(bytes, 1);
  size = (size + alignment - 1) / alignment * alignment;
  int64_t candidate = 0;
  for (auto [offset, len] : used) {
    if (offset - candidate >= size)
      break;
    candidate = std::max(candidate, offset + len);
  }
  used[candidate] = size;
  peak = std::max(peak, candidate + size);
  liveBytes += size;
  return candidate;
}

void ArenaAllocator::release(int64_t offset) {
  auto it = used.find(offset);
  if (it == used.end())
    return;
  liveBytes -= it->second;
  used.erase(it);
}
