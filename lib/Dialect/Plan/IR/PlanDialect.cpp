//===- PlanDialect.cpp - Plan dialect registration and verifiers ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Support/ElementBytes.h"
#include "zplan/PlanFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace zero::plan;

#include "zero/Dialect/Plan/IR/PlanEnums.cpp.inc"
#include "zero/Dialect/Plan/IR/PlanOpsDialect.cpp.inc"

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zero/Dialect/Plan/IR/PlanOps.cpp.inc"
      >();
}

int64_t BufferOp::getSizeInBytes() {
  return zero::shapedBytes(getResult().getType());
}

LogicalResult BufferOp::verify() {
  BufferRole role = getRole();
  // I64Attr accessors return uint64_t: compare the signed value.
  if (getOffsetAttr().getInt() < 0)
    return emitOpError("offset must be non-negative");
  if ((role == BufferRole::param || role == BufferRole::state ||
       role == BufferRole::master || role == BufferRole::runtime) &&
      !getName())
    return emitOpError("a ") << stringifyBufferRole(role) << " buffer needs a name";
  if (role == BufferRole::input && !getIndex())
    return emitOpError("an input buffer needs its input index");
  if ((role == BufferRole::constant) != bool(getValue()))
    return emitOpError("a value is given exactly for constant buffers");
  if (getValue()) {
    auto vt = cast<ShapedType>(getValue()->getType());
    MemRefType t = getResult().getType();
    if (vt.getShape() != t.getShape() || vt.getElementType() != t.getElementType())
      return emitOpError("value type does not match the buffer type");
  }
  if (getNvme()) {
    if (getHost())
      return emitOpError("lies in host memory or in the NVMe file, not both");
    if (role != BufferRole::param && role != BufferRole::master &&
        role != BufferRole::state)
      return emitOpError("an nvme buffer is a param, master or state buffer, not ")
             << stringifyBufferRole(role);
    if (getOffsetAttr().getInt() % zrt::kNvmeAlignment)
      return emitOpError("an nvme buffer's offset is a multiple of ") << zrt::kNvmeAlignment;
  }
  if (Value root = getViewOf()) {
    auto r = root.getDefiningOp<BufferOp>();
    if (!r || r.getViewOf())
      return emitOpError("is a view of a value that is not a plan.buffer root");
    if (role != BufferRole::temp)
      return emitOpError("a view is a temp buffer, not ") << stringifyBufferRole(role);
    if (getHost() != r.getHost() || r.getNvme())
      return emitOpError("a view lies in its root's memory (host or device)");
    int64_t begin = getOffsetAttr().getInt(), rootBegin = r.getOffsetAttr().getInt();
    if (begin < rootBegin || begin + getSizeInBytes() > rootBegin + r.getSizeInBytes())
      return emitOpError("view bytes [")
             << begin << ", " << begin + getSizeInBytes() << ") lie outside its root's ["
             << rootBegin << ", " << rootBegin + r.getSizeInBytes() << ")";
  }
  return success();
}

LogicalResult KernelOp::verify() {
  if (getOutputs().empty())
    return emitOpError("writes no output");
  for (Value v : llvm::concat<Value>(getInputs(), getOutputs()))
    if (!v.getDefiningOp<BufferOp>())
      return emitOpError("operands must be plan.buffer results");
  for (Value v : getOutputs()) {
    BufferRole role = v.getDefiningOp<BufferOp>().getRole();
    if (role == BufferRole::input || role == BufferRole::constant)
      return emitOpError("writes a ") << stringifyBufferRole(role) << " buffer";
  }
  // Host kernels read and write host buffers, device kernels device buffers; the
  // two copies cross.
  auto isHost = [](Value v) { return v.getDefiningOp<BufferOp>().getHost(); };
  auto isNvme = [](Value v) { return v.getDefiningOp<BufferOp>().getNvme(); };
  bool toHost = getKernel() == KernelKind::to_host,
       toDevice = getKernel() == KernelKind::to_device;
  bool nvmeRead = getKernel() == KernelKind::nvme_read,
       nvmeWrite = getKernel() == KernelKind::nvme_write;
  if (nvmeRead || nvmeWrite) {
    if (getInputs().size() != 1 || getOutputs().size() != 1 ||
        getInputs()[0].getType() != getOutputs()[0].getType())
      return emitOpError("copies one buffer into one of the same type");
    Value nvme = nvmeRead ? getInputs()[0] : getOutputs()[0];
    Value host = nvmeRead ? getOutputs()[0] : getInputs()[0];
    if (!isNvme(nvme) || !isHost(host))
      return emitOpError(nvmeRead ? "reads an nvme buffer into a host buffer"
                                  : "writes a host buffer into an nvme buffer");
  } else if (llvm::any_of(llvm::concat<Value>(getInputs(), getOutputs()), isNvme)) {
    return emitOpError("touches an nvme buffer (only nvme_read and nvme_write do)");
  } else if (toHost || toDevice) {
    if (getInputs().size() != 1 || getOutputs().size() != 1 ||
        getInputs()[0].getType() != getOutputs()[0].getType())
      return emitOpError("copies one buffer into one of the same type");
    if (isHost(getInputs()[0]) != toDevice || isHost(getOutputs()[0]) != toHost)
      return emitOpError(toHost ? "copies a device buffer into a host buffer"
                                : "copies a host buffer into a device buffer");
  } else {
    bool host = isHost(getOutputs()[0]);
    for (Value v : llvm::concat<Value>(getInputs(), getOutputs()))
      if (isHost(v) != host)
        return emitOpError("mixes host and device buffers (only to_host and "
                           "to_device cross)");
  }
  for (NamedAttribute a : getAttrs())
    if (!isa<IntegerAttr, FloatAttr, StringAttr, DenseI64ArrayAttr, BoolAttr>(
            a.getValue()))
      return emitOpError("attribute '")
             << a.getName().getValue()
             << "' must be an integer, float, string or i64 array";
  return success();
}

LogicalResult ProgramOp::verifyRegions() {
  int64_t arena = getArenaBytesAttr().getInt();
  if (arena < 0)
    return emitOpError("arena_bytes must be non-negative");
  if (getWorldSizeAttr().getInt() < 1)
    return emitOpError("world_size must be at least 1");
  int64_t hostArena = getHostArenaBytes() ? (int64_t)*getHostArenaBytes() : 0;
  if (hostArena < 0)
    return emitOpError("host_arena_bytes must be non-negative");
  int64_t nvmeArena = getNvmeArenaBytes() ? (int64_t)*getNvmeArenaBytes() : 0;
  if (nvmeArena < 0)
    return emitOpError("nvme_arena_bytes must be non-negative");
  for (Operation &op : getBody().front()) {
    auto buf = dyn_cast<BufferOp>(op);
    if (!buf)
      continue;
    int64_t offset = buf.getOffsetAttr().getInt();
    int64_t size = buf.getNvme() ? nvmeArena : buf.getHost() ? hostArena : arena;
    if (offset < 0 || offset + buf.getSizeInBytes() > size)
      return buf.emitOpError("bytes [")
             << offset << ", " << offset + buf.getSizeInBytes() << ") lie outside the "
             << (buf.getNvme() ? "nvme arena" : buf.getHost() ? "host arena" : "arena")
             << " of " << size << " bytes";
  }
  return success();
}

#define GET_OP_CLASSES
#include "zero/Dialect/Plan/IR/PlanOps.cpp.inc"

KernelKind zero::plan::synchronousKind(KernelKind kind) {
  switch (kind) {
  case KernelKind::all_reduce_start:
    return KernelKind::all_reduce;
  case KernelKind::all_gather_start:
    return KernelKind::all_gather;
  case KernelKind::reduce_scatter_start:
    return KernelKind::reduce_scatter;
  default:
    return kind;
  }
}
