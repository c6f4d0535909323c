//===- ArenaAllocator.h - Static placement of buffers in one arena -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CONVERSION_COMPUTETOPLAN_ARENAALLOCATOR_H
#define ZERO_CONVERSION_COMPUTETOPLAN_ARENAALLOCATOR_H

#include <cstdint>
#include <vector>

namespace zero {

/// Places buffers at byte offsets in one arena, at compile time, knowing every
/// lifetime first: the lowering calls allocate() when a buffer is defined and
/// release() after its last reader, then place() lays them all out, largest first,
/// each at the lowest offset that no buffer alive at the same time uses. Placing
/// online (first-fit as buffers come) fragments badly once some values live long
/// (activations kept for backward) among short ones.
class ArenaAllocator {
public:
  explicit ArenaAllocator(int64_t alignment = 64) : alignment(alignment) {}

  /// A new buffer of `bytes` (at least 1 byte is reserved so that empty tensors
  /// still get distinct, valid offsets), alive from now; returns its id.
  int64_t allocate(int64_t bytes);
  /// The buffer `id` is dead from now (a second release is ignored).
  void release(int64_t id);

  /// Lays out every buffer; then offset() and size() hold.
  void place();
  int64_t offset(int64_t id) const { return ranges[id].offset; }
  /// Bytes the arena needs: the end of the highest buffer.
  int64_t size() const { return peak; }

private:
  struct Range {
    int64_t bytes, begin, end, offset = 0;
  };
  int64_t alignment;
  int64_t clock = 0;
  std::vector<Range> ranges;
  int64_t peak = 0;
};

} // namespace zero

#endif // ZERO_CONVERSION_COMPUTETOPLAN_ARENAALLOCATOR_H
