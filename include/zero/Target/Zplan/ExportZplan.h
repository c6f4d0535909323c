//===- ExportZplan.h - Serialize a plan.program to a .zplan ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TARGET_ZPLAN_EXPORTZPLAN_H
#define ZERO_TARGET_ZPLAN_EXPORTZPLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace zero {

/// Writes the module's `plan.program @main` as a .zplan file (header + protobuf).
/// `source` names the model it came from, for the runtime's messages.
mlir::LogicalResult exportZplan(mlir::ModuleOp module, llvm::raw_ostream &os,
                                llvm::StringRef source);

} // namespace zero

#endif // ZERO_TARGET_ZPLAN_EXPORTZPLAN_H
