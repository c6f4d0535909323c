//===- StepPhases.h - Forward, backward and activations of a step -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What recomputation and activation offload both read from a training step: which
// phase each op is in, and which values are activations.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_TRANSFORMS_STEPPHASES_H
#define ZERO_DIALECT_COMPUTE_TRANSFORMS_STEPPHASES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace zero::compute {

struct StepPhases {
  /// Micro-batch m's forward is phase 2m and its backward 2m + 1 (the ops'
  /// zero.micro_phase, with gradient accumulation); without it, forward (0) is the
  /// loss and what precedes it, backward (1) what follows. -1: the rest (the
  /// optimizer under accumulation; the terminator, whose return of the loss is not
  /// a backward read).
  llvm::DenseMap<mlir::Operation *, int64_t> phase;
  /// Values that depend on a graph input (compute.input arguments included).
  llvm::DenseSet<mlir::Value> activations;
  /// The op that makes the returned loss.
  mlir::Operation *loss = nullptr;

  bool isForward(mlir::Operation *op) const {
    int64_t p = phase.lookup(op);
    return p >= 0 && p % 2 == 0;
  }
};

/// The phases of @main's one block; fails (emitting, naming `pass`) when it returns
/// no computed loss.
mlir::FailureOr<StepPhases> analyzeStepPhases(mlir::func::FuncOp func, llvm::StringRef pass);

} // namespace zero::compute

#endif // ZERO_DIALECT_COMPUTE_TRANSFORMS_STEPPHASES_H
