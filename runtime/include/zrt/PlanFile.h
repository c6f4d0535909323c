//===- PlanFile.h - Load and validate a .zplan -----------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_PLANFILE_H
#define ZRT_PLANFILE_H

#include "zplan.pb.h"

#include <string>
#include <vector>

namespace zrt {

/// Reads and validates the plan file at `path`; throws zrt::Error naming the problem
/// (missing file, truncation, bad magic or version, checksum mismatch, a buffer
/// outside the arena, a bad dtype, shape or index).
zero::zplan::Plan loadPlanFile(const std::string &path);

/// Same, from the file's bytes; `what` names the source in messages.
zero::zplan::Plan parsePlanBytes(const std::string &bytes, const std::string &what);

/// The structural checks alone, on an already parsed plan.
void validatePlan(const zero::zplan::Plan &plan, const std::string &what);

/// The plan's identity: FNV-1a 64 of its deterministic serialization, 16 hex
/// digits (a checkpoint records it; ranks compare it).
std::string planFingerprint(const zero::zplan::Plan &plan);

/// The names the plan's buffers of `role` hold (a buffer's own, or its bucket's
/// members'), in plan order: with PARAM, the parameters the plan trains.
std::vector<std::string> planBufferNames(const zero::zplan::Plan &plan, zero::zplan::Role role);
inline std::vector<std::string> planParameterNames(const zero::zplan::Plan &plan) {
  return planBufferNames(plan, zero::zplan::PARAM);
}

} // namespace zrt

#endif // ZRT_PLANFILE_H
