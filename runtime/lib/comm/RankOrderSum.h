//===- RankOrderSum.h - Sums over ranks, in rank order ---------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The communicators that sum on the host (threads, TCP) add the ranks' values in
// rank order, 16-bit floats in f32 with one rounding at the end: every rank, and
// every such communicator, gets the same bits for the same inputs.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_COMM_RANKORDERSUM_H
#define ZRT_COMM_RANKORDERSUM_H

#include "zrt/Tensor.h"

#include <cstdint>
#include <vector>

namespace zrt {

/// `sum` (count elements of `t`, resized and overwritten) = the sum over
/// `from[0], from[1], ...` (in that order) of the `count` elements at byte
/// `offset` of each.
void sumInRankOrder(const std::vector<const void *> &from, size_t offset, int64_t count,
                    DType t, std::vector<char> &sum);

} // namespace zrt

#endif // ZRT_COMM_RANKORDERSUM_H
