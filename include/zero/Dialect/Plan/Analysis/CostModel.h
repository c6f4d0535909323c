//===- CostModel.h - Predicted step time of a plan ---------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_PLAN_ANALYSIS_COSTMODEL_H
#define ZERO_DIALECT_PLAN_ANALYSIS_COSTMODEL_H

#include "zero/Dialect/Plan/IR/PlanDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace zero {

/// The figures the cost model needs about a machine. Collectives are rings:
/// an all-gather or reduce-scatter of B bytes (the full tensor) over N ranks takes
/// alpha (N-1) + beta B (N-1)/N; an all-reduce twice that; a ring over more
/// ranks than a node holds runs at the inter-node figures (its slowest link). Kernels are rooflines:
/// overhead + max(flops / peak, bytes / bandwidth).
struct MachineModel {
  std::string name;
  double matmulFlops = 1e11;       // FLOP/s of GEMM
  double matmulFlops16 = 0;        // of 16-bit GEMM (0: matmulFlops)
  double vectorFlops = 1e10;       // FLOP/s of everything else
  double memoryBandwidth = 1e10;   // bytes/s
  double kernelOverheadS = 1e-6;   // per kernel launch
  double alphaS = 1e-5;            // per ring step
  double betaSPerByte = 1e-9;      // per byte on the wire
  /// Ranks that share the fast link (NVLink); beyond them, the `inter` figures.
  int64_t ranksPerNode = 1 << 30;
  double interAlphaS = 1e-5, interBetaSPerByte = 1e-9;
  /// How the collectives' bytes travel, for the traffic by link class: rings,
  /// or each rank straight to every peer (zero-run's TCP collectives).
  bool directExchange = false;
  /// NVMe offload: bytes/s one rank reads from and writes to its file.
  double nvmeReadBandwidth = 1e9, nvmeWriteBandwidth = 1e9;
};

/// "h100-nvlink" (8 GPUs per node over NVLink, InfiniBand NDR between nodes) and
/// "cpu" (a modest default); or a JSON file with the fields above (zero-run
/// --calibrate writes one). Fails with a message naming the problem.
mlir::FailureOr<MachineModel> loadMachineModel(llvm::StringRef nameOrPath,
                                               std::string &error);

/// The plan's step on `machine`: compute and communication on two streams,
/// collectives in start order; a wait stalls compute until its collective is done.
/// NVMe transfers run on a third, in plan order (zero-run's NVMe worker): a read
/// starts when issued or when the one before ends, and a kernel that reads its
/// result waits for it; the step ends when the last write has.
struct StepPrediction {
  double stepS = 0, computeS = 0, commS = 0, exposedCommS = 0;
  /// NVMe offload's transfers, and the part of the step spent waiting for them.
  double nvmeS = 0, exposedNvmeS = 0;
  /// Floating-point work of the compute kernels, and of those that recompute
  /// activations (with their predicted time).
  double flops = 0, recomputeFlops = 0, recomputeS = 0;
  /// The world as the machine places it (node by node), and the bytes the
  /// step's ring collectives send per node: over links inside the node, and out
  /// of it over the network (zero when the world fits one node).
  int64_t nodes = 1, ranksPerNode = 1;
  double intraNodeBytes = 0, interNodeBytes = 0;
  bool directExchange = false; ///< the machine's collective algorithm
};
/// Bytes a collective kernel's full tensor takes in one pass's messages: its
/// bytes, or in ZeRO++'s int8 wire form (`quantize_block`) over its group's ranks
/// of the world `world`.
int64_t collectiveWireBytes(plan::KernelOp k, int64_t world);
/// Floating-point operations of one compute kernel (2 m n k for a matmul; a
/// per-element estimate otherwise; none for data movement).
double kernelFlops(plan::KernelOp k);
/// Bytes one compute kernel reads and writes: each input once (a view: its own
/// elements, not its buffer's), each output once.
int64_t kernelBytes(plan::KernelOp k);
/// The tensors an optimizer kernel (adamw, sgd) updates: the plan joins a step's
/// updates into one kernel, its operand_segments then counting N per operand.
int64_t optimizerTensors(plan::KernelOp k);
/// The elements of its `operand`-th operand (0: the parameters, 1: the gradients)
/// over its tensors.
int64_t optimizerElements(plan::KernelOp k, unsigned operand = 0);

/// The step of a plan on `machine`. With `asShardGroupSize` G (1 < G < world),
/// the step of the plan hybrid sharding over groups of G would give, estimated
/// from this flat plan: its collectives run within the groups, and each
/// gradient reduce-scatter is followed by its slice's all-reduce across the
/// groups (what ShardZero builds; the schedule chains the two, waiting for both
/// where the reduce-scatter's wait was), the optimizer on slices N/G times
/// larger. --auto-tune's group sizes.
mlir::FailureOr<StepPrediction> predictStep(mlir::ModuleOp module,
                                            const MachineModel &machine,
                                            int64_t asShardGroupSize = 0);

} // namespace zero

#endif // ZERO_DIALECT_PLAN_ANALYSIS_COSTMODEL_H
