//===- MemoryBudget.h - Fitting a plan into --max-memory-gb ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The compiler knows every byte of a plan before it runs (the arena is laid out
// at compile time), so it can make a plan fit a per-rank budget: it compiles
// candidates, cheapest first (more recomputation, then fewer prefetched buckets,
// then smaller buckets), and keeps the first whose peak fits.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_MEMORYBUDGET_H
#define ZERO_DRIVER_MEMORYBUDGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <string>

namespace zero {

/// What the budget may change.
struct PlanSettings {
  int64_t recomputeLevel = 0; // --zero-recompute's level
  double bucketMb = 25;
  int64_t prefetch = 2;
  bool offloadActivations = false; // --offload-activations=cpu
  int64_t shardGroupSize = -1;     // --zero-shard-group-size (-1: the flag's)
};

/// "12.34 GiB", or MiB below one GiB.
std::string formatBytes(int64_t bytes);

/// Adds the passes that compile the imported module to the plan level with `s`.
using PipelineBuilder =
    llvm::function_ref<void(mlir::PassManager &, const PlanSettings &)>;

/// The per-rank peak (the plan's arena, bytes) of the module compiled with `s`,
/// on a clone; -1 when it does not compile.
int64_t planPeak(mlir::ModuleOp module, const PlanSettings &s, PipelineBuilder build);

struct BudgetChoice {
  PlanSettings settings;
  int64_t peak = 0;
  int64_t noRecomputePeak = -1; // with the same buckets and prefetch, if compiled
};

/// The first settings, from `start`, that fit `budgetBytes`: recompute levels in
/// the order of `levels`, then (with `offloadActivations`) the same levels with
/// the saved activations in host memory, then prefetch depths down to 0, then
/// bucket sizes halved down to 1 MiB. An error names the smallest peak reached
/// and what dominates it.
mlir::FailureOr<BudgetChoice> fitMemoryBudget(mlir::ModuleOp module, int64_t budgetBytes,
                                              PlanSettings start,
                                              llvm::ArrayRef<int64_t> levels,
                                              bool offloadActivations, int64_t zeroStage,
                                              PipelineBuilder build);

} // namespace zero

#endif // ZERO_DRIVER_MEMORYBUDGET_H
