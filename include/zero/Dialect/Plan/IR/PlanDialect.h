//===- PlanDialect.h - The executable plan dialect ---------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_PLAN_IR_PLANDIALECT_H
#define ZERO_DIALECT_PLAN_IR_PLANDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include "zero/Dialect/Plan/IR/PlanEnums.h.inc"
#include "zero/Dialect/Plan/IR/PlanOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "zero/Dialect/Plan/IR/PlanOps.h.inc"

namespace zero::plan {
/// The synchronous collective that a split-phase kernel (all_gather_start, ...)
/// begins; any other kind is returned as it is.
KernelKind synchronousKind(KernelKind kind);
} // namespace zero::plan

#endif // ZERO_DIALECT_PLAN_IR_PLANDIALECT_H
