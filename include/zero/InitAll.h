//===- InitAll.h - Register every zero-opt dialect and pass -------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_INITALL_H
#define ZERO_INITALL_H

#include "zero/Conversion/Passes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"
#include "zero/Pipeline/ZeroPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace zero {

/// Every dialect that zero-opt reads or writes.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<compute::ComputeDialect, plan::PlanDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::shard::ShardDialect, zops::ZeroDialect>();
}

/// Every pass, so that each has its command-line flag.
inline void registerAllPasses() {
  // Upstream's generic passes (--canonicalize, --cse, ...) for lit tests and
  // pipelines written on the command line.
  mlir::registerTransformsPasses();
  registerZeroComputePasses();
  registerZeroTransformsPasses();
  registerZeroConversionPasses();
  registerVerifyPipelinePass();
  registerZeroPipeline();
}

} // namespace zero

#endif // ZERO_INITALL_H
