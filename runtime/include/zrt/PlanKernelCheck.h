//===- PlanKernelCheck.h - Bind every kernel of a plan, run none -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Binding a kernel is where its arity, dtypes, shapes and attributes are checked
// (Kernels.h). zero-opt binds every kernel of each plan it writes against the CPU
// kernel table, on an arena that is never touched, so a plan the runtime would
// refuse is a compile error instead of a failed run.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_PLANKERNELCHECK_H
#define ZRT_PLANKERNELCHECK_H

#include "zplan.pb.h"

#include <string>

namespace zrt {

/// validatePlan, verifyPlan, then binds every kernel; "" when all pass, else the
/// first problem. Never throws (the compiler has no exceptions).
std::string checkPlanKernels(const zero::zplan::Plan &plan, const std::string &what);

} // namespace zrt

#endif // ZRT_PLANKERNELCHECK_H
