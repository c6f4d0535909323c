//===- ZeroReport.h - Memory and traffic of a compiled step ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_PLAN_ANALYSIS_ZEROREPORT_H
#define ZERO_DIALECT_PLAN_ANALYSIS_ZEROREPORT_H

#include "zero/Dialect/Plan/Analysis/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zero {

/// What one rank holds and moves per step, read off a lowered plan.program: the
/// compiler knows it exactly before anything runs, and zero-run measures the same.
struct ZeroReport {
  int64_t stage = 0, worldSize = 1;
  /// Trainable elements (a tied weight once, before padding), and after padding
  /// each bucket to a multiple of the world size.
  int64_t parameters = 0, paddedParameters = 0;
  /// The trainable set as the importer found it (tensors and elements, after
  /// --freeze) and where it came from; empty for a module compiled from IR.
  int64_t trainableTensors = 0, trainableElements = 0;
  std::string trainableSource;
  /// Persistent model states per rank, bytes: parameter buffers; gradients a rank
  /// must hold at once (stages 0-1: the full buckets, 2-3: the reduced slices);
  /// optimizer state buffers.
  int64_t params = 0, grads = 0, optimizerState = 0;
  int64_t modelStates() const { return params + grads + optimizerState; }
  /// The arena (the plan's peak), and what of it is not persistent storage
  /// (gathered buckets, gradient buckets, activations).
  int64_t totalPeak = 0, transientPeak = 0;
  /// Optimizer offload: the host arena, the optimizer state and master weights in
  /// it (not in optimizerState, which is the device's), and the bytes copied each
  /// step to the host (gradients) and back (updated parameters). All 0 without.
  /// The gradients the host optimizer reads are host bytes too (on the device
  /// they are transient: each bucket leaves once reduced).
  int64_t hostPeak = 0, hostOptimizerState = 0, hostGrads = 0, toHostBytes = 0,
          toDeviceBytes = 0;
  /// Parameter offload (stage 3): the parameter slices in the host arena (not in
  /// params, which are the device's); each gather copies its slice to the device.
  int64_t hostParams = 0;
  /// Activation offload: the saved activations waiting in the host arena for
  /// backward (copies to the host that only copies back to the device read).
  int64_t hostActivations = 0;
  /// NVMe offload: each rank's NVMe file (its size, and what of it parameter
  /// slices and optimizer state take: not in the host's or device's figures),
  /// and the bytes the step reads from it and writes to it.
  int64_t nvmeFile = 0, nvmeParams = 0, nvmeOptimizerState = 0, nvmeReadBytes = 0,
          nvmeWriteBytes = 0;
  /// Gathered parameter buckets alive at once, at most: each from its all-gather
  /// (start) to the last kernel reading its result.
  int64_t gatheredPeak = 0;
  /// Each all-gather's full bucket, bytes, in step order; and the live-parameter
  /// limit the schedule placed them under (--max-live-mb; 0: none), which is
  /// soft: a bucket over it is gathered alone (bucketsOverLiveLimit counts them).
  std::vector<int64_t> gatheredBuckets;
  int64_t liveLimitBytes = 0;
  int64_t bucketsOverLiveLimit() const;
  /// Full-tensor elements per step: an all-gather counts its output, a
  /// reduce-scatter its input; the volume counts an all-reduce twice.
  int64_t allGather = 0, reduceScatter = 0, allReduce = 0;
  /// The elements of allReduce that sum the overflow count (mixed precision) and
  /// the gradients' squared norm (clipping).
  int64_t overflowCheck = 0;
  int64_t volume() const { return allGather + reduceScatter + 2 * allReduce; }
  /// ZeRO++'s quantized collectives (qwZ, qgZ): how many kernels, their block
  /// size, and the bytes of their full tensors per pass per step, in full
  /// precision and in the int8 wire form (what the link figures count).
  int64_t quantizedKernels = 0, quantizeBlock = 0, quantizedFullBytes = 0,
          quantizedWireBytes = 0;
  /// Activation checkpointing: the level chosen (0: none), the kernels that
  /// recompute activations, and the peak it saves (when zero-opt compiled the
  /// plan without it too; -1: not known).
  int64_t recomputeLevel = 0, recomputeKernels = 0, recomputeSavedBytes = -1;
  /// What one step's kernels do: launches (every kernel the runtime issues but
  /// waits: compute, copies, collectives), and the compute kernels' floating-
  /// point work and bytes read plus written (CostModel.h's counts), by class.
  enum WorkClass { Gemm, Attention, Other, kWorkClasses };
  int64_t stepKernels = 0;
  double stepFlops[kWorkClasses] = {};
  int64_t stepBytes[kWorkClasses] = {};
  /// The cost model's prediction, when a machine is given.
  std::optional<StepPrediction> predicted;
  std::string machine;
};

/// Computes the report of the module's `plan.program @main`.
mlir::FailureOr<ZeroReport> computeZeroReport(mlir::ModuleOp module, int64_t stage);

void printReportTable(const ZeroReport &r, llvm::raw_ostream &os);
/// Prints the report as JSON; returns "" or, printing nothing, why it cannot be
/// (a number that is not finite).
std::string printReportJson(const ZeroReport &r, llvm::raw_ostream &os);

} // namespace zero

#endif // ZERO_DIALECT_PLAN_ANALYSIS_ZEROREPORT_H
