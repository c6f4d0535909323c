//===- ZeroDialect.cpp - Split-phase collectives --------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Zero/IR/ZeroDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace zero::zops;

#include "zero/Dialect/Zero/IR/ZeroOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "zero/Dialect/Zero/IR/ZeroOpsTypes.cpp.inc"

void ZeroDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "zero/Dialect/Zero/IR/ZeroOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "zero/Dialect/Zero/IR/ZeroOps.cpp.inc"
      >();
}

/// Flat tensors of one element type; `outScale` and `inScale` relate the sizes
/// (the world size is not known here, only that one divides the other).
static LogicalResult verifyFlat(Operation *op, Value in, Value out, bool gather,
                                bool scatter) {
  auto it = cast<RankedTensorType>(in.getType());
  auto ot = cast<RankedTensorType>(out.getType());
  if (it.getRank() != 1 || ot.getRank() != 1)
    return op->emitOpError("works on flat (1-D) tensors");
  if (it.getElementType() != ot.getElementType())
    return op->emitOpError("input and result element types differ");
  int64_t n = it.getDimSize(0), m = ot.getDimSize(0);
  if (gather && (n == 0 || m % n))
    return op->emitOpError("result size must be a multiple of the input size");
  if (scatter && (m == 0 || n % m))
    return op->emitOpError("input size must be a multiple of the result size");
  if (!gather && !scatter && n != m)
    return op->emitOpError("input and result sizes differ");
  return success();
}

/// The grid exists, and the axes are distinct axes of it.
static LogicalResult verifyGrid(Operation *op, FlatSymbolRefAttr gridSymbol,
                                ArrayRef<int16_t> axes,
                                SymbolTableCollection &symbols) {
  auto grid = mlir::shard::getGridOrNull(op, gridSymbol, symbols);
  if (!grid)
    return op->emitOpError("grid ") << gridSymbol << " is not a shard.grid in scope";
  int64_t rank = grid.getShape().size();
  SmallVector<bool> seen(rank, false);
  for (int16_t a : axes) {
    if (a < 0 || a >= rank)
      return op->emitOpError("grid axis ") << a << " is not an axis of grid "
                                           << gridSymbol << " (rank " << rank << ")";
    if (seen[a])
      return op->emitOpError("grid axis ") << a << " appears twice";
    seen[a] = true;
  }
  return success();
}

LogicalResult AllGatherStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGrid(*this, getGridAttr(), getGridAxes(), symbols);
}
LogicalResult ReduceScatterStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGrid(*this, getGridAttr(), getGridAxes(), symbols);
}
LogicalResult AllReduceStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyGrid(*this, getGridAttr(), getGridAxes(), symbols);
}

LogicalResult AllGatherStartOp::verify() {
  return verifyFlat(*this, getInput(), getPending(), true, false);
}
LogicalResult ReduceScatterStartOp::verify() {
  return verifyFlat(*this, getInput(), getPending(), false, true);
}
LogicalResult AllReduceStartOp::verify() {
  return verifyFlat(*this, getInput(), getPending(), false, false);
}

LogicalResult WaitOp::verify() {
  Operation *start = getToken().getDefiningOp();
  if (!start || !isa<AllGatherStartOp, ReduceScatterStartOp, AllReduceStartOp>(start))
    return emitOpError("token must come from a zero.*_start op");
  if (start->getResult(0) != getPending())
    return emitOpError("pending value must be its start's result");
  if (!getToken().hasOneUse())
    return emitOpError("a token is waited for exactly once");
  return success();
}

#define GET_OP_CLASSES
#include "zero/Dialect/Zero/IR/ZeroOps.cpp.inc"
