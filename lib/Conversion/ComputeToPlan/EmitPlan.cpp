//===- EmitPlan.cpp - Buffers and kernels, then their offsets ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Phases 3 and 4 of PlanLowering (PlanLowering.h): buffers and kernels in step
// order with arena slots taken and given back, then the arenas' offsets written
// into the buffers.
//
//===----------------------------------------------------------------------===//

#include "PlanLowering.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

using namespace mlir;
using namespace zero;
using namespace zero::lowering;

static MemRefType bufferTypeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// The ranks a collective runs among, as the runtime knows them: every rank
/// (kWorld), the group of consecutive ranks a hybrid grid shards over (kShard),
/// the ranks at the same place of every group (kReplica), or hpZ's group of
/// consecutive ranks that shares a secondary partition (kNode). A plan kernel names its
/// group with the attributes `group` and `group_size` (none: the world).
enum RankGroup : int64_t { kWorld = 0, kShard = 1, kReplica = 2, kNode = 3 };

/// The runtime's collectives work on the whole 1-D grid, or on one axis of a 2-D
/// hybrid grid [world / G, G] (axis 1: a shard group, axis 0: a replica group), on
/// flat tensors, and reduce by summing: anything else is refused here. `group`
/// and `groupSize` say which ranks.
static LogicalResult checkCollective(Operation &op, int64_t worldSize, RankGroup &group,
                              int64_t &groupSize) {
  auto grid = op.getAttrOfType<FlatSymbolRefAttr>("grid");
  auto module = op.getParentOfType<ModuleOp>();
  auto gridOp = module ? module.lookupSymbol<mlir::shard::GridOp>(grid.getAttr())
                       : mlir::shard::GridOp();
  ArrayRef<int64_t> shape = gridOp ? gridOp.getShape() : ArrayRef<int64_t>{};
  bool flat = shape.size() == 1 && shape[0] == worldSize;
  bool hybrid = shape.size() == 2 && shape[0] > 0 && shape[1] > 0 &&
                shape[0] * shape[1] == worldSize;
  if (!flat && !hybrid)
    return op.emitError("collective on grid ")
           << grid << ", which is neither a 1-D grid of the " << worldSize
           << " ranks the plan is compiled for nor a 2-D grid [groups, group size] of them";
  auto axes = op.getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  ArrayRef<int16_t> a = axes ? axes.asArrayRef() : ArrayRef<int16_t>{};
  group = kWorld;
  groupSize = worldSize;
  // hpZ's grid of its own: the groups its secondary partitions are sliced and
  // gathered within, which hold no bucket's primary slices.
  bool hpz = grid.getValue() == "zero_hpz";
  if (hybrid && hpz && a == ArrayRef<int16_t>{1}) {
    group = kNode;
    groupSize = shape[1];
  } else if (hpz) {
    return op.emitError("hpZ's grid @zero_hpz takes collectives along axis 1 only");
  } else if (hybrid && a == ArrayRef<int16_t>{1}) {
    group = kShard;
    groupSize = shape[1];
  } else if (hybrid && a == ArrayRef<int16_t>{0}) {
    group = kReplica;
    groupSize = shape[0];
  } else if (!(flat && a == ArrayRef<int16_t>{0}) &&
             !(hybrid && a == ArrayRef<int16_t>{0, 1})) {
    return op.emitError("collective must use grid axis 0 of a 1-D grid, or one axis "
                        "(or both) of a 2-D grid");
  }
  for (StringRef key : {"gather_axis", "scatter_axis", "slice_axis"})
    if (auto a = op.getAttrOfType<IntegerAttr>(key); a && a.getInt() != 0)
      return op.emitError(key) << " must be 0";
  if (auto r = op.getAttrOfType<mlir::shard::ReductionKindAttr>("reduction");
      r && r.getValue() != mlir::shard::ReductionKind::Sum)
    return op.emitError("only sum reductions are supported");
  for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.getRank() != 1)
      return op.emitError("collectives work on flat (1-D) tensors");
  return success();
}

/// Ops whose kernels read each element before writing the same element of the
/// output, so that the output may share the input's bytes.
static bool isInPlaceSafe(Operation &op) {
  return isa<compute::AdamWOp, compute::SgdOp, compute::AddOp, compute::FusedOp>(op);
}

bool PlanLowering::isHost(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return bool(func.getArgAttr(arg.getArgNumber(), compute::attr::kHost));
  Operation *def = v.getDefiningOp();
  return def && (def->hasAttr(zops::attr::kHost) ||
                 isa<compute::ToHostOp, compute::NvmeReadOp>(def));
}

bool PlanLowering::isNvme(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return bool(func.getArgAttr(arg.getArgNumber(), compute::attr::kNvme));
  return isa_and_nonnull<compute::NvmeWriteOp>(v.getDefiningOp());
}

PlanLowering::Space PlanLowering::spaceOf(Value v) {
  if (isNvme(v))
    return Space::Nvme;
  if (!isHost(v))
    return Space::Device;
  Operation *def = v.getDefiningOp();
  return def && (def->hasAttr(zops::attr::kHost) || isa<compute::NvmeReadOp>(def))
             ? Space::HostKernel
             : Space::Host;
}

ArenaAllocator &PlanLowering::arenaFor(Space space) {
  switch (space) {
  case Space::Device:
    return arena;
  case Space::Host:
    return hostArena;
  case Space::HostKernel:
    return hostKernelArena;
  case Space::Nvme:
    break;
  }
  return nvmeArena;
}

void PlanLowering::release(Value v) {
  Space space = spaceOf(v);
  if (space != Space::Host && space != Space::Nvme)
    arenaFor(space).release(offsetOf[v]);
}

bool PlanLowering::isTemp(Value v) {
  return cast<plan::BufferOp>(bufferOf.lookup(v).getDefiningOp()).getRole() ==
         plan::BufferRole::temp;
}

plan::BufferOp PlanLowering::makeBuffer(Value v, plan::BufferRole role, NamedAttrList attrs) {
  Space space = spaceOf(v);
  bool host = space == Space::Host || space == Space::HostKernel;
  // The offset is set once all are known.
  int64_t id = arenaFor(space).allocate(bytesOf(v));
  auto buf = plan::BufferOp::create(
      b, v.getLoc(), bufferTypeOf(v), plan::BufferRoleAttr::get(b.getContext(), role),
      b.getI64IntegerAttr(0), nullptr, nullptr, nullptr, host ? b.getUnitAttr() : nullptr,
      space == Space::Nvme ? b.getUnitAttr() : nullptr, Value());
  for (NamedAttribute a : attrs)
    buf->setAttr(a.getName(), a.getValue());
  bufferOf[v] = buf;
  offsetOf[v] = id;
  (space == Space::Device   ? placements
   : space == Space::Host   ? hostPlacements
   : space == Space::Nvme   ? nvmePlacements
                            : hostKernelPlacements)
      .push_back(std::make_pair(buf, id));
  return buf;
}

LogicalResult PlanLowering::emitArguments() {
  for (BlockArgument arg : entry.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()) ||
        !cast<RankedTensorType>(arg.getType()).hasStaticShape())
      return func.emitError("argument ")
             << arg.getArgNumber() << " is not a statically shaped tensor";
    NamedAttrList attrs;
    unsigned i = arg.getArgNumber();
    if (auto name = func.getArgAttrOfType<StringAttr>(i, compute::attr::kParam)) {
      attrs.append("name", name);
      makeBuffer(arg, plan::BufferRole::param, attrs);
    } else if (auto name =
                   func.getArgAttrOfType<StringAttr>(i, compute::attr::kParamBucket)) {
      // This rank's slice of a flat parameter bucket (ZeRO stage 3).
      attrs.append("name", name);
      attrs.append("bucket_members", func.getArgAttr(i, compute::attr::kBucketMembers));
      attrs.append("bucket_elements", func.getArgAttr(i, compute::attr::kBucketElements));
      makeBuffer(arg, plan::BufferRole::param, attrs);
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, compute::attr::kMaster)) {
      // Mixed precision: the f32 master copy of a parameter, loaded from the
      // same initializer.
      attrs.append("name", name);
      makeBuffer(arg, plan::BufferRole::master, attrs);
    } else if (auto name =
                   func.getArgAttrOfType<StringAttr>(i, compute::attr::kMasterBucket)) {
      attrs.append("name", name);
      attrs.append("bucket_members", func.getArgAttr(i, compute::attr::kBucketMembers));
      attrs.append("bucket_elements", func.getArgAttr(i, compute::attr::kBucketElements));
      makeBuffer(arg, plan::BufferRole::master, attrs);
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, compute::attr::kRuntime)) {
      attrs.append("name", name); // set by the runtime before each step
      makeBuffer(arg, plan::BufferRole::runtime, attrs);
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, compute::attr::kState)) {
      attrs.append("name", name);
      // Above stage 0: this rank's slice of a bucket's state (BUCKET.SUFFIX).
      if (auto members = func.getArgAttr(i, compute::attr::kBucketMembers)) {
        attrs.append("bucket_members", members);
        attrs.append("bucket_elements", func.getArgAttr(i, compute::attr::kBucketElements));
      }
      makeBuffer(arg, plan::BufferRole::state, attrs);
    } else if (auto index =
                   func.getArgAttrOfType<IntegerAttr>(i, compute::attr::kInput)) {
      attrs.append("index", index);
      if (auto name = func.getArgAttrOfType<StringAttr>(i, compute::attr::kName))
        attrs.append("name", name);
      if (auto micro = func.getArgAttrOfType<IntegerAttr>(i, compute::attr::kMicroStep))
        attrs.append("micro_step", micro);
      makeBuffer(arg, plan::BufferRole::input, attrs);
    } else {
      return func.emitError("argument ")
             << i << " is not a compute.param, compute.master, compute.state, "
             << "compute.runtime or compute.input";
    }
  }
  return success();
}

void PlanLowering::emitConstants() {
  for (Operation &op : entry.without_terminator())
    if (auto cst = dyn_cast<compute::ConstantOp>(op)) {
      NamedAttrList attrs;
      attrs.append("value", cst.getValue());
      makeBuffer(cst.getResult(), plan::BufferRole::constant, attrs);
    }
}

void PlanLowering::emitWait(zops::WaitOp w) {
  Operation *start = w.getToken().getDefiningOp();
  plan::KernelOp::create(b, w.getLoc(), plan::KernelKind::wait, ValueRange{},
                         ValueRange{bufferOf.lookup(w.getPending())},
                         b.getDictionaryAttr(b.getNamedAttr(
                             "request", b.getI64IntegerAttr(requestOf.lookup(start)))));
  // The start read its input until now.
  Value in = base(start->getOperand(0));
  if (lastUse.lookup(in) == w.getOperation() && isTemp(in))
    release(in);
}

void PlanLowering::emitView(Value r, const View &v) {
  Value root = bufferOf.lookup(v.root);
  // A view of a result written over its operand (itself a view at offset 0 of
  // that operand's buffer) reads the buffer underneath: views are one level.
  if (Value under = cast<plan::BufferOp>(root.getDefiningOp()).getViewOf())
    root = under;
  Space space = spaceOf(v.root);
  bool host = space != Space::Device;
  auto view = plan::BufferOp::create(
      b, r.getLoc(), bufferTypeOf(r),
      plan::BufferRoleAttr::get(b.getContext(), plan::BufferRole::temp),
      b.getI64IntegerAttr(0), nullptr, nullptr, nullptr,
      host ? b.getUnitAttr() : nullptr, nullptr, root);
  bufferOf[r] = view;
  offsetOf[r] = offsetOf.lookup(v.root);
  viewPlacements.push_back({view, offsetOf[r], v.bytes, space});
}

LogicalResult PlanLowering::emitOp(Operation &op) {
  if (auto w = dyn_cast<zops::WaitOp>(op)) {
    emitWait(w);
    return success();
  }
  bool isStart =
      isa<zops::AllGatherStartOp, zops::ReduceScatterStartOp, zops::AllReduceStartOp>(op);
  bool isCollective =
      isStart || isa<mlir::shard::AllGatherOp, mlir::shard::ReduceScatterOp,
                     mlir::shard::AllReduceOp, mlir::shard::AllSliceOp>(op);
  if (op.getDialect() != op.getContext()->getLoadedDialect("compute") && !isCollective)
    return op.emitError("cannot lower '")
           << op.getName()
           << "' to the plan: only compute ops and shard collectives are supported";
  // Every collective, split or not, must be one the runtime runs.
  RankGroup group = kWorld;
  int64_t groupSize = worldSize;
  if (isCollective && failed(checkCollective(op, worldSize, group, groupSize)))
    return failure();
  if (isa<compute::ConstantOp>(op) || emitsNothing(op))
    return success();
  if (auto it = viewOf.find(op.getResult(0)); it != viewOf.end()) {
    emitView(op.getResult(0), it->second);
    return success();
  }
  SmallVector<Value> ins, outs;
  for (unsigned i = 0; i < op.getNumOperands(); ++i)
    ins.push_back(bufferOf.lookup(resolve(readOf(op, i))));
  // Outputs are placed before any input is released, so a kernel never writes
  // over what it reads.
  bool newBuffers = false; // whether an output took arena memory of its own
  for (Value made : madeBy(op)) {
    if (!isa<RankedTensorType>(made.getType()))
      continue; // a collective's token has no buffer
    Value r = writeOf(made);
    if (Value shared = bufferOf.lookup(r)) { // an earlier result's target too
      outs.push_back(shared);
      continue;
    }
    if (Value over = writtenOver.lookup(r)) {
      emitView(r, View{over, 0});
      outs.push_back(bufferOf[r]);
      newBuffers = true;
      continue;
    }
    BlockArgument target = updateOf.lookup(r);
    if (target && ((isInPlaceSafe(op) && lastUse.lookup(target) == &op &&
                    llvm::is_contained(op.getOperands(), Value(target))) ||
                   (!isCollective && writesStraightInto(op, r, target)))) {
      bufferOf[r] = bufferOf.lookup(target);
      offsetOf[r] = offsetOf.lookup(target);
      inPlace.insert(r);
      outs.push_back(bufferOf[r]);
      continue;
    }
    if (isNvme(r)) // the pass placed the write after the old value's last read
      return op.emitError("internal error: the NVMe write of argument ")
             << (target ? (int64_t)target.getArgNumber() : -1)
             << " cannot go straight into it";
    outs.push_back(makeBuffer(r, plan::BufferRole::temp, {}));
    newBuffers = true;
  }
  FailureOr<DictionaryAttr> attrs = kernelAttrs(op, isCollective, isStart);
  if (failed(attrs))
    return failure();
  if (group != kWorld) { // a hybrid grid's group, which the runtime makes
    NamedAttrList withGroup(*attrs);
    withGroup.set("group", b.getI64IntegerAttr(group));
    withGroup.set("group_size", b.getI64IntegerAttr(groupSize));
    attrs = withGroup.getDictionary(op.getContext());
  }
  if (!newBuffers && joinOptimizerGroup(op, ins, outs, *attrs)) {
    copyUpdatesEarly(op);
    releaseDead(op);
    return success();
  }
  // The op's name is the kind's (compute.matmul runs the matmul kernel); a
  // fused product is a matmul kernel with its epilogue's operands.
  std::optional<plan::KernelKind> kind =
      isa<compute::FusedMatMulOp>(op)
          ? plan::KernelKind::matmul
          : plan::symbolizeKernelKind(op.getName().stripDialect());
  if (!kind)
    return op.emitOpError("has no runtime kernel: the plan has no kernel kind '")
           << op.getName().stripDialect() << "'";
  auto k = plan::KernelOp::create(b, op.getLoc(), *kind, ins, outs, *attrs);
  openGroup = pendingGroup ? k : nullptr; // a device update: later ones may join it
  pendingGroup = false;
  // For the report (not the runtime): work done again by activation
  // checkpointing.
  if (op.hasAttr(zops::attr::kRecompute))
    k->setAttr(zops::attr::kRecompute, b.getUnitAttr());
  copyUpdatesEarly(op);
  releaseDead(op);
  return success();
}

bool PlanLowering::joinOptimizerGroup(Operation &op, ArrayRef<Value> ins, ArrayRef<Value> outs, DictionaryAttr attrs) {
  if (!isa<compute::AdamWOp, compute::SgdOp>(op) || op.hasAttr(zops::attr::kHost)) {
    openGroup = nullptr;
    return false;
  }
  size_t own = isa<compute::AdamWOp>(op) ? 4 : 3; // tensor operands before the scalars
  size_t results = own - 1 + (outs.size() > own - 1 ? 1 : 0); // (+ the 16-bit copy)
  auto segmentsOf = [](DictionaryAttr a) {
    return SmallVector<int64_t>(a.getAs<DenseI64ArrayAttr>("operand_segments").asArrayRef());
  };
  auto without = [](DictionaryAttr a) {
    NamedAttrList l(a);
    l.erase("operand_segments");
    return l.getDictionary(a.getContext());
  };
  plan::KernelOp group = openGroup;
  bool joins = group && !b.getInsertionBlock()->empty() &&
               &b.getInsertionBlock()->back() == group.getOperation() &&
               group.getKernel() == *plan::symbolizeKernelKind(op.getName().stripDialect()) &&
               without(group.getAttrs()) == without(attrs) &&
               outs.size() == results;
  SmallVector<int64_t> seg = joins ? segmentsOf(group.getAttrs()) : SmallVector<int64_t>();
  size_t n = joins ? seg[0] : 0;
  if (joins) {
    ValueRange gins = group.getInputs(), gouts = group.getOutputs();
    // The same scalars (step, scale, overflow count, learning rate)...
    joins = gouts.size() == results * n &&
            llvm::equal(gins.drop_front(own * n), ArrayRef<Value>(ins).drop_front(own));
    // ...and the same element types per operand and result.
    for (size_t i = 0; joins && i < own; ++i)
      joins = getElementTypeOrSelf(gins[i * n].getType()) ==
              getElementTypeOrSelf(ins[i].getType());
    for (size_t i = 0; joins && i < results; ++i)
      joins = getElementTypeOrSelf(gouts[i * n].getType()) ==
              getElementTypeOrSelf(outs[i].getType());
  }
  if (!joins) {
    openGroup = nullptr; // the caller makes this update's kernel, which opens one
    pendingGroup = true;
    return false;
  }
  ValueRange gins = group.getInputs(), gouts = group.getOutputs();
  SmallVector<Value> newIns, newOuts;
  for (size_t i = 0; i < own; ++i) {
    llvm::append_range(newIns, gins.slice(i * n, n));
    newIns.push_back(ins[i]);
  }
  llvm::append_range(newIns, gins.drop_front(own * n));
  for (size_t i = 0; i < results; ++i) {
    llvm::append_range(newOuts, gouts.slice(i * n, n));
    newOuts.push_back(outs[i]);
  }
  for (size_t i = 0; i < own; ++i)
    seg[i] = (int64_t)n + 1;
  NamedAttrList merged(group.getAttrs());
  merged.set("operand_segments", b.getDenseI64ArrayAttr(seg));
  openGroup = plan::KernelOp::create(b, group.getLoc(), group.getKernel(), newIns, newOuts,
                                     merged.getDictionary(b.getContext()));
  group.erase();
  return true;
}

FailureOr<DictionaryAttr> PlanLowering::kernelAttrs(Operation &op, bool isCollective, bool isStart) {
  NamedAttrList attrs;
  if (!isCollective) // a collective's attributes are all implied (checked above)
    for (NamedAttribute a : op.getAttrs()) {
      // Which optional operands are there (the optimizers' runtime values).
      if (auto seg = dyn_cast<DenseI32ArrayAttr>(a.getValue());
          seg && a.getName() == "operandSegmentSizes") {
        SmallVector<int64_t> sizes(seg.asArrayRef().begin(), seg.asArrayRef().end());
        attrs.append("operand_segments", b.getDenseI64ArrayAttr(sizes));
        continue;
      }
      // The passes' marks; which optional results there are (the kernel's
      // outputs and `activation` say it).
      if (a.getName().strref().starts_with("zero.") || a.getName() == "resultSegmentSizes")
        continue;
      attrs.append(a);
    }
  if (auto block = op.getAttrOfType<IntegerAttr>(zops::attr::kQuantizeBlock); block && isCollective)
    attrs.append("quantize_block", block);
  if (isStart) {
    int64_t id = requestOf.size();
    requestOf[&op] = id;
    attrs.append("request", b.getI64IntegerAttr(id));
  }
  if (auto f = dyn_cast<compute::FusedOp>(op)) {
    FailureOr<SmallVector<int64_t>> program = encodeFusedProgram(f);
    if (failed(program))
      return failure();
    attrs.append("program", b.getDenseI64ArrayAttr(*program));
  }
  appendLayouts(op, attrs);
  return attrs.getDictionary(op.getContext());
}

void PlanLowering::appendLayouts(Operation &op, NamedAttrList &attrs) {
  auto appendView = [&](StringRef name, Value v, const StridedView &view) {
    attrs.append(name.str() + "_shape",
                 b.getDenseI64ArrayAttr(cast<RankedTensorType>(v.getType()).getShape()));
    attrs.append(name.str() + "_strides", b.getDenseI64ArrayAttr(view.strides));
    attrs.append(name.str() + "_offset", b.getI64IntegerAttr(view.offset));
  };
  bool matmul = isa<compute::MatMulOp, compute::FusedMatMulOp>(op);
  bool grad = isa<compute::AttentionGradOp>(op);
  if (!matmul && !isa<compute::AttentionOp>(op) && !grad)
    return;
  for (unsigned i = 0; i < op.getNumOperands(); ++i) {
    auto it = operandView.find({&op, i});
    if (it == operandView.end())
      continue;
    StringRef name = matmul ? (i == 0 ? "lhs" : "rhs") : ::zplan::attention::inputView(grad, i);
    Value v = op.getOperand(i);
    auto def = dyn_cast_or_null<compute::TransposeOp>(v.getDefiningOp());
    if (matmul && def && isLastTwoSwap(def) && def.getInput() == it->second.root)
      attrs.append("transpose_" + name.str(), b.getBoolAttr(true));
    else
      appendView(name, v, it->second);
  }
  for (OpResult r : op.getResults())
    if (auto it = resultView.find(r); it != resultView.end())
      appendView(matmul ? "out" : ::zplan::attention::outputView(grad, r.getResultNumber()),
                 r, it->second);
}

bool PlanLowering::writesStraightInto(Operation &op, Value r, BlockArgument target) {
  Operation *lastRead = lastUse.lookup(target);
  if (lastRead && position[lastRead] >= position[&op])
    return false;
  return isHost(r) == isHost(target) && isNvme(r) == isNvme(target) &&
         r.getType() == target.getType() &&
         llvm::count(terminator->getOperands(), r) == 1;
}

void PlanLowering::copyUpdatesEarly(Operation &op) {
  for (Value r : madeBy(op)) {
    BlockArgument target = updateOf.lookup(r);
    if (!target || inPlace.contains(r) || lastUse.lookup(r) != terminator)
      continue;
    Operation *lastRead = lastUse.lookup(target);
    if (lastRead && position[lastRead] > position[&op])
      continue;
    plan::KernelOp::create(b, r.getLoc(), plan::KernelKind::copy,
                           ValueRange{bufferOf.lookup(r)},
                           ValueRange{bufferOf.lookup(target)}, b.getDictionaryAttr({}));
    copiedEarly.insert(r);
    // Dead now unless a kernel still reads it (then its last reader frees it).
    if (llvm::count(terminator->getOperands(), r) == 1 && !lastKernelUse.count(r))
      release(r);
  }
}

void PlanLowering::releaseDead(Operation &op) {
  auto releaseIfDead = [&](Value v, bool isResult) {
    if (!isTemp(v) || handedOver.contains(v))
      return;
    Operation *last = lastUse.lookup(v);
    if ((isResult && !last) || last == &op)
      release(v);
  };
  llvm::SmallDenseSet<Value> written;
  for (Value r : madeBy(op))
    if (isa<RankedTensorType>(r.getType()) && written.insert(writeOf(r)).second)
      releaseIfDead(writeOf(r), /*isResult=*/true);
  llvm::SmallDenseSet<Value> seen;
  for (unsigned i = 0; i < op.getNumOperands(); ++i) {
    Value operand = readOf(op, i);
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    Value v = base(operand);
    if (!seen.insert(v).second)
      continue;
    if (lastUse.lookup(v) != terminator)
      releaseIfDead(v, /*isResult=*/false);
    else if (copiedEarly.contains(v) && lastKernelUse.lookup(v) == &op &&
             llvm::count(terminator->getOperands(), v) == 1)
      release(v); // copied into its argument already
  }
}

void PlanLowering::emitReturn() {
  SmallVector<Value> results;
  SmallVector<Attribute> names;
  auto allNames = func->getAttrOfType<ArrayAttr>(compute::attr::kOutputNames);
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    if (BlockArgument target = updateOf.lookup(v)) {
      if (!inPlace.contains(v) && !copiedEarly.contains(v))
        plan::KernelOp::create(b, v.getLoc(), plan::KernelKind::copy,
                               ValueRange{bufferOf.lookup(v)},
                               ValueRange{bufferOf.lookup(target)},
                               b.getDictionaryAttr({}));
      continue;
    }
    results.push_back(bufferOf.lookup(v));
    if (allNames && i < allNames.size())
      names.push_back(allNames[i]);
  }
  auto ret = plan::ReturnOp::create(b, terminator->getLoc(), results, nullptr);
  if (allNames)
    ret.setNamesAttr(b.getArrayAttr(names));
}

void PlanLowering::place() {
  arena.place();
  hostArena.place();
  hostKernelArena.place();
  nvmeArena.place();
  for (auto [buf, id] : nvmePlacements)
    buf.setOffsetAttr(b.getI64IntegerAttr(nvmeArena.offset(id)));
  if (!nvmePlacements.empty())
    program.setNvmeArenaBytes(nvmeArena.size());
  // The host kernels' part follows the rest of the host arena.
  int64_t kernelBase = (hostArena.size() + 63) / 64 * 64;
  auto offsetIn = [&](Space space, int64_t id) {
    return space == Space::HostKernel ? kernelBase + hostKernelArena.offset(id)
                                      : arenaFor(space).offset(id);
  };
  for (auto [buf, id] : placements)
    buf.setOffsetAttr(b.getI64IntegerAttr(arena.offset(id)));
  for (auto [buf, id] : hostPlacements)
    buf.setOffsetAttr(b.getI64IntegerAttr(hostArena.offset(id)));
  for (auto [buf, id] : hostKernelPlacements)
    buf.setOffsetAttr(b.getI64IntegerAttr(offsetIn(Space::HostKernel, id)));
  for (ViewPlacement &v : viewPlacements)
    v.view.setOffsetAttr(b.getI64IntegerAttr(offsetIn(v.space, v.rootId) + v.bytes));
  program.setArenaBytes(arena.size());
  if (!hostPlacements.empty() || !hostKernelPlacements.empty())
    program.setHostArenaBytes(hostKernelPlacements.empty()
                                  ? hostArena.size()
                                  : kernelBase + hostKernelArena.size());
}
