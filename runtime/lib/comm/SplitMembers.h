//===- SplitMembers.h - Who is in a group of a split -------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Communicator::split's rule, for the communicators that compute it themselves
// (threads, TCP): the ranks that gave `color`, ordered by their keys, equal keys
// by rank (as MPI_Comm_split orders them).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_COMM_SPLITMEMBERS_H
#define ZRT_COMM_SPLITMEMBERS_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace zrt {

/// The ranks (indices into `colors` and `keys`, every rank's) of `color`'s group,
/// in group order.
inline std::vector<int> splitMembers(const std::vector<int64_t> &colors,
                                     const std::vector<int64_t> &keys, int64_t color) {
  std::vector<int> members;
  for (int p = 0; p < (int)colors.size(); ++p)
    if (colors[p] == color)
      members.push_back(p);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return keys[a] < keys[b]; });
  return members;
}

} // namespace zrt

#endif // ZRT_COMM_SPLITMEMBERS_H
