//===- ZeroPipeline.h - From the imported graph to the plan ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PIPELINE_ZEROPIPELINE_H
#define ZERO_PIPELINE_ZEROPIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>

namespace zero {

/// What zero-opt's flags choose; the defaults are zero-opt's.
struct ZeroPipelineOptions {
  /// train (forward, backward, optimizer), inference, or gradients (for checks).
  std::string mode = "train";
  /// The last level: graph, step, plan or zplan (plan and zplan lower fully).
  std::string level = "zplan";
  // The training step.
  std::string loss, freeze, optimizer = "adamw";
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = -1; // -1: the optimizer's default
  double momentum = 0;
  // Mixed precision: fp32, bf16 or fp16; reduceDtype "fp32" reduces 16-bit
  // gradients in f32.
  std::string precision = "fp32", reduceDtype;
  // Gradient clipping (0: off) and a runtime learning rate (for a schedule).
  double clipGradNorm = 0;
  bool runtimeLr = false;
  int64_t gradAccumSteps = 1;
  // Activation checkpointing (--zero-recompute's level; 0: none).
  int64_t recomputeLevel = 0;
  // ZeRO.
  int64_t zeroStage = 0, worldSize = 1, persistenceThreshold = 0;
  double bucketSizeMb = 25;
  // The collective schedule.
  int64_t prefetchBuckets = 2;
  double maxLiveMb = 0, fuseBelowKb = 256;
  bool noOverlap = false;
  // ZeRO-Offload: the optimizer, its master weights and state on the host.
  bool offloadOptimizer = false;
  // Reshapes and contiguous slices as views of their input (false: copies).
  bool views = true;
  // Chains of elementwise ops as one fused kernel each (false: a kernel per op).
  bool fuse = true;
};

/// --zero-verify-pipeline: the invariants the pipeline's passes promise (every
/// started collective waited for once, no shard collective after the schedule, a
/// plan that passes zero-run's checks). buildZeroPipeline ends with it.
std::unique_ptr<mlir::Pass> createVerifyPipelinePass();
void registerVerifyPipelinePass();

/// The passes from an imported forward graph (a module holding func.func @main)
/// down to `options.level`.
void buildZeroPipeline(mlir::OpPassManager &pm, const ZeroPipelineOptions &options);

} // namespace zero

#endif // ZERO_PIPELINE_ZEROPIPELINE_H
