//===- PlanVerifier.h - A plan's checks beyond its file format --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// validatePlan (PlanFile.h) checks that every offset, size, index and dtype is in
// range. A plan can pass that and still be wrong, by a compiler bug or an edit
// whose checksum was recomputed: two buffers alive at once over the same bytes, an
// offset the dtype cannot be read at, a started collective never waited for, a
// collective sized for another world. verifyPlan finds those, before anything
// runs; zero-opt runs it (and binds every kernel, checkPlanKernels) on each plan it
// writes, zero-run on each plan it loads.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_PLANVERIFIER_H
#define ZRT_PLANVERIFIER_H

#include "zplan.pb.h"

#include <string>

namespace zrt {

/// Throws zrt::Error naming `what` and the first problem:
///  - the plan has outputs, each read from a buffer;
///  - every buffer's offset is a multiple of its element size;
///  - no two buffers alive at the same kernel share a byte (parameters, state,
///    inputs, constants and outputs are alive throughout; a temporary from the
///    first kernel that touches it to the last, a started collective's buffers
///    until its wait);
///  - every *_start kernel has a request id of its own, one input and one output,
///    and exactly one later `wait` with that id whose output is the start's; no
///    wait without a start;
///  - collectives are flat buffers whose sizes fit the plan's world size.
/// Expects a plan that passed validatePlan.
void verifyPlan(const zero::zplan::Plan &plan, const std::string &what);

/// Whether kernel `k` runs on the host worker: a kernel whose buffers are host
/// buffers (the plan checks all of them are), and the NVMe transfers; the copies
/// between device and host do not.
bool runsOnHost(const zero::zplan::Plan &plan, int k);

} // namespace zrt

#endif // ZRT_PLANVERIFIER_H
