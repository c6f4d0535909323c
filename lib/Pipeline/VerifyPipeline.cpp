//===- VerifyPipeline.cpp - The last pass: what every stage must leave -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// --zero-verify-pipeline checks the invariants the passes before it promise, at
// whatever level the pipeline stopped:
//  - every started collective (zero.*_start) is waited for exactly once, by a
//    zero.wait;
//  - once the schedule has placed split-phase collectives, no `shard` collective
//    is left (only the grid declaration and all_slice, which moves no data);
//  - a lowered plan passes the runtime's own checks (ExportZplan.h: no two buffers
//    alive at once over the same bytes, every start waited for, every kernel
//    bound), so a plan zero-run would refuse is a compiler error, not a failed run.
//
//===----------------------------------------------------------------------===//

#include "zero/Pipeline/ZeroPipeline.h"

#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Dialect/Zero/IR/ZeroDialect.h"
#include "zero/Target/Zplan/ExportZplan.h"

#include "zplan.pb.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

struct VerifyPipelinePass
    : public PassWrapper<VerifyPipelinePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(VerifyPipelinePass)

  StringRef getArgument() const override { return "zero-verify-pipeline"; }
  StringRef getDescription() const override {
    return "Checks what the zero pipeline's passes leave: every collective start "
           "waited for once, no shard collective after the schedule, a plan that "
           "passes zero-run's checks";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool failedCheck = false, scheduled = false;
    module.walk([&](Operation *op) {
      if (!isa<zero::zops::AllGatherStartOp, zero::zops::ReduceScatterStartOp, zero::zops::AllReduceStartOp>(
              op))
        return;
      scheduled = true;
      Value token = op->getResult(1);
      if (!token.hasOneUse() || !isa<zero::zops::WaitOp>(*token.getUsers().begin())) {
        op->emitError("started collective is not waited for exactly once (")
            << std::distance(token.use_begin(), token.use_end()) << " uses of its token)";
        failedCheck = true;
      }
    });
    if (scheduled)
      module.walk([&](Operation *op) {
        // all_slice takes this rank's part of a replicated value: no transfer, so
        // the schedule leaves it for the lowering.
        if (op->getDialect() && isa<shard::ShardDialect>(op->getDialect()) &&
            !isa<shard::GridOp, shard::AllSliceOp>(op)) {
          op->emitError("a shard collective is left after the collective schedule");
          failedCheck = true;
        }
      });
    if (module.lookupSymbol<zero::plan::ProgramOp>("main") &&
        failed(zero::buildZplan(module, "the pipeline's plan")))
      failedCheck = true;
    if (failedCheck)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace

std::unique_ptr<Pass> zero::createVerifyPipelinePass() {
  return std::make_unique<VerifyPipelinePass>();
}

void zero::registerVerifyPipelinePass() { PassRegistration<VerifyPipelinePass>(); }
