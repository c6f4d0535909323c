//===- PlanLowering.h - @main to one plan.program, in phases -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The lowering's state and phases, private to convert-compute-to-plan: folding and
// liveness in FoldLayouts.cpp, emission and placement in EmitPlan.cpp; the pass
// (ComputeToPlan.cpp) runs them in order.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CONVERSION_COMPUTETOPLAN_PLANLOWERING_H
#define ZERO_CONVERSION_COMPUTETOPLAN_PLANLOWERING_H

#include "zero/Conversion/ComputeToPlan/ArenaAllocator.h"
#include "zero/Conversion/ComputeToPlan/FusedProgram.h"
#include "zplan/AttentionViews.h"
#include "zplan/PlanFormat.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Dialect/Zero/IR/ZeroDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace zero::lowering {

using namespace mlir;

/// The bytes of a ranked tensor value.
inline int64_t bytesOf(Value v) {
  return zero::shapedBytes(cast<RankedTensorType>(v.getType()));
}

/// A transpose that swaps the last two dimensions and keeps the others.
inline bool isLastTwoSwap(compute::TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  int64_t r = perm.size();
  if (r < 2 || perm[r - 1] != r - 2 || perm[r - 2] != r - 1)
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

/// Lowers @main to one plan.program in phases that run in order:
///  1. fold: what needs no kernel of its own (waits, views, the slices, reshapes
///     and transposes whose matmuls read or write through them) and which results
///     replace which argument;
///  2. liveness: each value's last reader;
///  3. emission: buffers and kernels in step order, arena slots taken when a value
///     is made and given back at its last reader;
///  4. placement: the arenas' offsets written into the buffers.
class PlanLowering {
  /// A view reads `bytes` on into the buffer of `root`.
  struct View {
    Value root;
    int64_t bytes;
  };
  /// Where a buffer's bytes are: the device arena, the host arena's part that is
  /// never reused within a step, or its part for host kernels' results (reused).
  enum class Space { Device, Host, HostKernel, Nvme };
  struct ViewPlacement {
    plan::BufferOp view;
    int64_t rootId, bytes;
    Space space;
  };
  /// A tensor as elements of another's buffer: element (i...) of it is element
  /// offset + sum(i_d strides_d) of root's.
  struct StridedView {
    Value root;
    SmallVector<int64_t> strides;
    int64_t offset = 0;
  };

public:
  PlanLowering(func::FuncOp func, int64_t worldSize, bool views)
      : func(func), entry(func.getBody().front()), terminator(entry.getTerminator()),
        b(func), worldSize(worldSize), views(views) {}

  LogicalResult run();

private:
  // Phase 1: fold.
  LogicalResult fold();

  /// Mixed precision: AdamW writes its new parameter's 16-bit copy as it writes
  /// the f32 master, so the cast after it is not a kernel of its own (which would
  /// read the master again and write the copy to a temporary).
  void foldParameterCopies();

  /// The values a kernel writes: its op's results, then a folded copy.
  SmallVector<Value> madeBy(Operation &op);

  /// Matmuls and fused attention read their operands, and write their results,
  /// in place through slices, reshapes and transposes where their kernels can: a
  /// matmul a strided matrix (a head split or merge, a slice of a fused QKV
  /// projection, a transposed weight), attention any view whose rows are
  /// contiguous. The kernel takes the chain's first value with the strides, and a
  /// chain op that only such kernels read is not run. Without views, only a
  /// transpose of a matmul's last two dimensions is read in place (a flag BLAS
  /// takes for free).
  void foldStridedLayouts();

  void foldMatMulLayouts(Operation &op);

  /// Attention's [batch, heads, rows, width] operands (zplan/AttentionViews.h)
  /// read as views whose rows are contiguous: the heads of a QKV projection where
  /// it wrote them. Its results written into the transpose that merges their heads
  /// (the forward's result also read by the gradients, through the same view).
  void foldAttentionLayouts(Operation &op);

  /// The QKV projection's gradient: dQ, dK and dV, each through its head merge
  /// (and a reshape) into one concat, are written where the concat puts them, and
  /// the concat, merges and reshapes run no kernel. Only where the three are alike
  /// ([B, H, T, D] each, so they tile the concat at evenly spaced offsets, as the
  /// runtime checks) and the concat joins exactly them.
  void foldGradientsIntoConcat(Operation &op);

  /// `res` as a view of the result of the transpose `t` that reads it (its one
  /// reader when not given), where the result could take it: a transpose that
  /// moves elements and whose result is neither an update nor an output.
  std::optional<StridedView> transposeTarget(Value res, compute::TransposeOp t = {});

  void writeInto(Value res, const StridedView &into);

  /// `v` as a strided view of the first value of the slices, reshapes and
  /// transposes that make it (`v` itself when none does); nothing where a reshape
  /// cannot be one or a slice steps backwards.
  std::optional<StridedView> stridedViewOf(Value v);

  /// Whether a chain that makes `v` runs a kernel: a transpose that moves
  /// elements or a slice that is not a view.
  bool costsAKernel(Value v);

  /// A slice, reshape or transpose that a matmul may read through (not one a
  /// matmul writes: its result is a buffer of its own).
  bool isChainOp(Operation *op);

  /// The value whose buffer operand `i` of `op` reads.
  Value readOf(Operation &op, unsigned i);
  /// The value whose buffer result `r` is written into.
  Value writeOf(Value r);
  /// Ops that emit nothing and read nothing: dropped chain ops, transposes a
  /// matmul writes.
  bool emitsNothing(Operation &op);

  /// The value a folded transpose or a wait stands for.
  Value resolve(Value v);
  /// The value whose buffer holds `v`'s bytes.
  Value base(Value v);

  // Phase 2: liveness. The last reader of every value, so that a temporary is
  // freed right after it (and the last reader that is not the terminator).
  void computeLiveness();

  /// The fused classifier writes the scores' gradient over the scores where
  /// nothing reads them after it (and they are a whole temporary of the same
  /// size): the B·T×V logits are not kept twice. Its kernels read each row
  /// before writing it.
  void foldWritesOver();

  // Phase 3: emission.

  /// Host memory (offload): arguments the offload passes marked, values of host
  /// ops and of copies to the host or from the NVMe file.
  bool isHost(Value v);
  /// The NVMe file (NVMe offload): arguments marked so, and their new values.
  bool isNvme(Value v);
  /// Where `v`'s buffer goes. A host kernel's result may reuse the bytes of host
  /// temporaries that died before it: host kernels run one after another on the
  /// host worker, each once the copies issued before it are done, so whatever
  /// read the old bytes (an earlier host kernel, a copy to the device) has. A copy
  /// to the host writes on the copy stream, which does not wait for the host
  /// kernels before it: its result gets bytes of its own for the step.
  Space spaceOf(Value v);
  ArenaAllocator &arenaFor(Space space);
  /// A buffer is freed at its last reader, except host bytes outside the host
  /// kernels' part (see spaceOf) and the NVMe file's (persistent).
  void release(Value v);
  bool isTemp(Value v);

  plan::BufferOp makeBuffer(Value v, plan::BufferRole role, NamedAttrList attrs);

  /// Parameters and inputs live for the whole step.
  LogicalResult emitArguments();

  /// Constants are written once, when the plan loads, so they too are placed
  /// before any temporary: a temporary must never reuse their bytes.
  void emitConstants();

  /// Completes request N; its result is the start's buffer.
  void emitWait(zops::WaitOp w);

  /// A view: a buffer over its root's bytes, no kernel.
  void emitView(Value r, const View &v);

  /// One op of the step: a wait, a view, nothing (a constant, a folded
  /// transpose), or a kernel with its output buffers; then what dies there.
  LogicalResult emitOp(Operation &op);

  /// The optimizer in one kernel: an update (AdamW or SGD, on the device) right
  /// after another of the same kind, hyperparameters, runtime scalars and types
  /// joins its kernel, whose operand_segments then count N tensors per operand
  /// (params, grads, states..., then the step's scalars once) and whose outputs are
  /// N per result. It is safe because nothing is placed between the two: the
  /// update writes in place (no output of its own in the arena), so no memory the
  /// earlier members free is taken before the joined kernel has run; and every
  /// input of the later member exists already (no kernel ran in between).
  bool joinOptimizerGroup(Operation &op, ArrayRef<Value> ins, ArrayRef<Value> outs,
                          DictionaryAttr attrs);

  /// The kernel's attributes: the op's own, but for the passes' marks; which
  /// optional operands are there; a collective's request id; a fused op's
  /// program; a matmul's folded transposes.
  FailureOr<DictionaryAttr> kernelAttrs(Operation &op, bool isCollective, bool isStart);

  /// Operands and results read or written in place: a matmul's transpose of the
  /// last two dimensions of a whole tensor as a flag, anything else as a view
  /// (NAME_shape, NAME_strides, NAME_offset).
  void appendLayouts(Operation &op, NamedAttrList &attrs);

  /// Whether `op` can write `r`, the new value of argument `target`, into the
  /// argument itself: nothing reads the old value from `op` on (the 16-bit copy
  /// of an updated master weight, cast after the update), both lie in the same
  /// memory, and `r` is returned once. Then no temporary and no copy kernel.
  bool writesStraightInto(Operation &op, Value r, BlockArgument target);

  /// A new value whose argument nobody reads any more goes into it at once (not
  /// at the end of the step), so that its temporary dies here: otherwise every
  /// updated parameter of a ZeRO 1-2 step would be alive at once at the end.
  void copyUpdatesEarly(Operation &op);

  /// Results nobody reads die at once; inputs die at their last reader.
  void releaseDead(Operation &op);

  /// The outputs; updated arguments not yet written get their copy.
  void emitReturn();

  // Phase 4: placement.
  void place();

  func::FuncOp func;
  Block &entry;
  Operation *terminator;
  OpBuilder b;
  int64_t worldSize;
  bool views;
  plan::ProgramOp program;

  // fold
  DenseMap<Value, Value> source;              // wait -> the value it completes
  DenseMap<std::pair<Operation *, unsigned>, StridedView> operandView; // views read
  DenseMap<Value, StridedView> resultView;    // a result -> the transpose it is written into
  DenseMap<Value, Operation *> writtenBy;     // that transpose's result -> the writer
  DenseSet<Operation *> dropped;              // chain ops no kernel reads, folded casts
  DenseMap<Operation *, Value> copyOf;        // AdamW -> the 16-bit copy it writes too
  plan::KernelOp openGroup;  // the optimizer kernel later updates may join
  bool pendingGroup = false; // the kernel being made may open a group
  DenseSet<Value> roots;                      // values kernels read through chains
  DenseMap<Value, BlockArgument> updateOf;    // new value -> the argument it replaces
  DenseMap<Value, View> viewOf;
  // liveness
  DenseMap<Value, Operation *> lastUse, lastKernelUse;
  DenseMap<Operation *, int64_t> position;
  // emission: device memory, and host memory for offload (an optimizer's
  // master weights, state and the values its host kernels read and write; the
  // parameter slices).
  ArenaAllocator arena, hostArena, hostKernelArena,
      nvmeArena{zrt::kNvmeAlignment}; // O_DIRECT: block-aligned offsets and sizes
  DenseMap<Value, Value> bufferOf;
  DenseMap<Value, int64_t> offsetOf; // the arena's id of each value's buffer
  DenseSet<Value> inPlace;           // new values written over their argument
  DenseMap<Value, Value> writtenOver; // a result -> the dying operand it overwrites
  DenseSet<Value> handedOver;         // such operands: freed with the result
  DenseSet<Value> copiedEarly;       // new values already copied into their argument
  DenseMap<Operation *, int64_t> requestOf; // started collective -> request id
  // placement
  SmallVector<std::pair<plan::BufferOp, int64_t>> placements, hostPlacements,
      hostKernelPlacements, nvmePlacements;
  SmallVector<ViewPlacement> viewPlacements;
};

} // namespace zero::lowering

#endif // ZERO_CONVERSION_COMPUTETOPLAN_PLANLOWERING_H
