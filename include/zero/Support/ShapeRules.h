//===- ShapeRules.h - Axes, slices and broadcasting, once ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The ONNX/numpy shape rules that the importer, the constant evaluator and the
// compute ops' verifiers all apply: negative axes, Slice's clamping, broadcasting.
// Plain integers in, so each user keeps its own containers.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_SHAPERULES_H
#define ZERO_SUPPORT_SHAPERULES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace zero {

/// A negative axis counts from the end (-1 is rank - 1). The result may still be
/// out of [0, rank): the caller says which op's axis that is.
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// One axis of an ONNX Slice: the first index taken and how many, over a
/// dimension of `dim`. Starts and ends may be any int64 (clamped before any
/// arithmetic); a step of 0 or INT64_MIN is not a slice.
struct SliceBounds {
  int64_t start = 0, count = 0;
};
inline std::optional<SliceBounds> sliceBounds(int64_t start, int64_t end, int64_t step,
                                              int64_t dim) {
  if (step == 0 || step == INT64_MIN)
    return std::nullopt;
  int64_t s = std::clamp<int64_t>(start, -dim - 1, dim + 1);
  int64_t e = std::clamp<int64_t>(end, -dim - 1, dim + 1);
  s = s < 0 ? s + dim : s;
  e = e < 0 ? e + dim : e;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    return SliceBounds{s, e > s ? (e - s - 1) / step + 1 : 0};
  }
  s = std::clamp<int64_t>(s, -1, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  return SliceBounds{s, s > e ? (s - e - 1) / (-step) + 1 : 0};
}

/// numpy's broadcast of two shapes (trailing dimensions align, a 1 stretches);
/// nothing when they do not broadcast.
inline std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                                 llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

} // namespace zero

#endif // ZERO_SUPPORT_SHAPERULES_H
