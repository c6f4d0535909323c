//===- ExportZplan.h - Serialize a plan.program to a .zplan ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TARGET_ZPLAN_EXPORTZPLAN_H
#define ZERO_TARGET_ZPLAN_EXPORTZPLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace zero::zplan {
class Plan;
} // namespace zero::zplan

namespace zero {

/// The module's `plan.program @main` as the plan file's message, after the
/// runtime's own checks (zrt::checkPlanKernels: every buffer and kernel valid, no
/// two buffers alive at once over the same bytes, every start waited for once,
/// every kernel bound as zero-run would); an error on the program otherwise.
mlir::FailureOr<zplan::Plan> buildZplan(mlir::ModuleOp module, llvm::StringRef source);

/// Writes the module's `plan.program @main` as a .zplan file (header + protobuf).
/// `source` names the model it came from, for the runtime's messages.
mlir::LogicalResult exportZplan(mlir::ModuleOp module, llvm::raw_ostream &os,
                                llvm::StringRef source);

} // namespace zero

#endif // ZERO_TARGET_ZPLAN_EXPORTZPLAN_H
