//===- ComputeToPlan.cpp - Lower the compute level to a plan.program ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "PlanLowering.h"
#include "zero/Conversion/Passes.h"

namespace zero {
#define GEN_PASS_DEF_CONVERTCOMPUTETOPLANPASS
#include "zero/Conversion/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::lowering;

LogicalResult PlanLowering::run() {
  program = plan::ProgramOp::create(b, func.getLoc(), b.getStringAttr("main"),
                                    b.getI64IntegerAttr(0),
                                    b.getI64IntegerAttr(worldSize), nullptr, nullptr);
  program.getBody().emplaceBlock();
  b.setInsertionPointToStart(&program.getBody().front());
  if (failed(fold()))
    return failure();
  computeLiveness();
  foldWritesOver();
  if (failed(emitArguments()))
    return failure();
  emitConstants();
  for (Operation &op : entry.without_terminator())
    if (failed(emitOp(op)))
      return failure();
  emitReturn();
  place();
  return success();
}

namespace {

struct ConvertComputeToPlanPass
    : public zero::impl::ConvertComputeToPlanPassBase<ConvertComputeToPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no func.func @main to lower");
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("@main must have a single block");
      return signalPassFailure();
    }
    if (failed(PlanLowering(func, worldSize, views).run()))
      return signalPassFailure();
    func.erase();
  }
};

} // namespace
