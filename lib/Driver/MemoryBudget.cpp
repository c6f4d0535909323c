//===- MemoryBudget.cpp - Fitting a plan into --max-memory-gb -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/MemoryBudget.h"

#include "zero/Dialect/Plan/Analysis/ZeroReport.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace mlir;
using namespace zero;

namespace {

double gib(int64_t bytes) { return bytes / 1073741824.0; }

/// Compiles a clone; null when it does not compile (quietly: another may).
OwningOpRef<ModuleOp> compileClone(ModuleOp module, const PlanSettings &s,
                                   PipelineBuilder build) {
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(module.getContext());
  build(pm, s);
  ScopedDiagnosticHandler quiet(module.getContext(), [](Diagnostic &) { return success(); });
  if (failed(pm.run(*clone)))
    return nullptr;
  return clone;
}

int64_t peakOf(ModuleOp module) {
  auto program = module.lookupSymbol<plan::ProgramOp>("main");
  return program ? program.getArenaBytesAttr().getInt() : -1;
}

} // namespace

std::string zero::formatBytes(int64_t bytes) {
  char buf[32];
  if (bytes >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", gib(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
  return buf;
}

int64_t zero::planPeak(ModuleOp module, const PlanSettings &s, PipelineBuilder build) {
  OwningOpRef<ModuleOp> clone = compileClone(module, s, build);
  return clone ? peakOf(*clone) : -1;
}

FailureOr<BudgetChoice> zero::fitMemoryBudget(ModuleOp module, int64_t budgetBytes,
                                              PlanSettings start, ArrayRef<int64_t> levels,
                                              bool offloadActivations, int64_t zeroStage,
                                              PipelineBuilder build) {
  SmallVector<PlanSettings> candidates;
  for (bool offload : {false, true}) {
    if (offload && !offloadActivations)
      continue;
    for (int64_t level : levels) {
      PlanSettings s = start;
      s.recomputeLevel = level;
      s.offloadActivations |= offload;
      candidates.push_back(s);
    }
  }
  PlanSettings last = candidates.back();
  for (int64_t k = last.prefetch - 1; k >= 0; --k) {
    last.prefetch = k;
    candidates.push_back(last);
  }
  for (double mb = last.bucketMb / 2; mb >= 1.0; mb /= 2) {
    last.bucketMb = mb;
    candidates.push_back(last);
  }
  BudgetChoice best;
  best.peak = -1;
  int64_t noRecompute = -1;
  for (const PlanSettings &s : candidates) {
    int64_t peak = planPeak(module, s, build);
    if (peak < 0)
      continue;
    if (s.recomputeLevel == 0 && s.bucketMb == start.bucketMb &&
        s.prefetch == start.prefetch && s.offloadActivations == start.offloadActivations)
      noRecompute = peak;
    if (best.peak < 0 || peak < best.peak) {
      best.settings = s;
      best.peak = peak;
    }
    if (peak <= budgetBytes) {
      best = {s, peak, noRecompute};
      return best;
    }
  }
  if (best.peak < 0) {
    llvm::errs() << "zero-opt: error: --max-memory-gb: no candidate plan compiled\n";
    return failure();
  }
  // What dominates the smallest peak reached.
  OwningOpRef<ModuleOp> clone = compileClone(module, best.settings, build);
  auto r = clone ? computeZeroReport(*clone, zeroStage) : FailureOr<ZeroReport>(failure());
  llvm::errs() << llvm::format("zero-opt: error: --max-memory-gb=%.3g cannot be met: the "
                               "smallest peak reached is %s (%lld bytes) per rank",
                               gib(budgetBytes), formatBytes(best.peak).c_str(),
                               (long long)best.peak)
               << " (recompute level " << best.settings.recomputeLevel
               << llvm::format(", --bucket-size-mb=%g", best.settings.bucketMb)
               << ", --prefetch-buckets=" << best.settings.prefetch
               << (best.settings.offloadActivations ? ", --offload-activations=cpu" : "")
               << ")";
  if (succeeded(r)) {
    bool states = r->modelStates() >= r->transientPeak;
    llvm::errs() << llvm::format(", dominated by %s: model states %lld bytes (parameters "
                                 "%lld, gradients %lld, optimizer state %lld), transient "
                                 "%lld bytes (activations, gathered and gradient buckets)",
                                 states ? "the model states" : "transient memory",
                                 (long long)r->modelStates(), (long long)r->params,
                                 (long long)r->grads, (long long)r->optimizerState,
                                 (long long)r->transientPeak);
    if (states)
      llvm::errs() << "; a higher --zero-stage or more ranks shard them further";
    if (!states && !best.settings.offloadActivations)
      llvm::errs() << "; --offload-activations=cpu keeps the saved activations in host "
                      "memory";
    if (states && r->hostOptimizerState == 0 && r->optimizerState > 0)
      llvm::errs() << "; --offload-optimizer=cpu (stages 1-3) moves the optimizer state "
                      "and the gradients to the host";
    if (states && r->hostParams == 0 && r->params > 0)
      llvm::errs() << "; --offload-param=cpu (stage 3) moves the parameter slices to "
                      "the host";
  }
  llvm::errs() << "\n";
  return failure();
}
