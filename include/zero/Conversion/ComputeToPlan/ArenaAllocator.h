//===- ArenaAllocator.h - Static first-fit placement in one arena -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CONVERSION_COMPUTETOPLAN_ARENAALLOCATOR_H
#define ZERO_CONVERSION_COMPUTETOPLAN_ARENAALLOCATOR_H

#include <cstdint>
#include <map>

namespace zero {

/// Places buffers at byte offsets in one arena, at compile time. Freed ranges are
/// reused first-fit; the arena's size is the highest end ever allocated.
class ArenaAllocator {
public:
  explicit ArenaAllocator(int64_t alignment = 64) : alignment(alignment) {}

  /// Returns the offset of a new range of `bytes` (at least 1 byte is reserved so
  /// that empty tensors still get distinct, valid offsets).
  int64_t allocate(int64_t bytes);
  /// Releases the range that starts at `offset`.
  void release(int64_t offset);

  /// Bytes the arena needs: the peak of the layout.
  int64_t size() const { return peak; }
  /// Bytes allocated right now.
  int64_t live() const { return liveBytes; }

private:
  int64_t alignment;
  std::map<int64_t, int64_t> used; // offset -> aligned size
  int64_t peak = 0;
  int64_t liveBytes = 0;
};

} // namespace zero

#endif // ZERO_CONVERSION_COMPUTETOPLAN_ARENAALLOCATOR_H
