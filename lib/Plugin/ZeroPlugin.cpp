//===- ZeroPlugin.cpp - The ZeRO dialects and passes as an MLIR plugin ----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Loads the compute, zero and plan dialects and the ZeRO passes into any MLIR 22
// tool built against the shared libMLIR (Debian's mlir-opt-22):
//
//   mlir-opt-22 --load-dialect-plugin=ZeroPlugin.so --load-pass-plugin=ZeroPlugin.so \
//       graph.mlir --zero-build-training-step --zero-shard="zero-stage=3" ...
//
// The plugin holds the dialects, the passes and the conversion to the plan
// dialect; not the ONNX importer, the plan writer (protobuf), the runtime or BLAS.
// --zero-pipeline and --zero-verify-pipeline end in the plan writer's checks and
// stay zero-opt's.
//
//===----------------------------------------------------------------------===//

#include "zero/Conversion/Passes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Dialect/Zero/IR/ZeroDialect.h"
#include "zero/Dialect/Zero/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "ZeroDialects", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<zero::compute::ComputeDialect, zero::plan::PlanDialect,
                             zero::zops::ZeroDialect, mlir::func::FuncDialect,
                             mlir::arith::ArithDialect, mlir::shard::ShardDialect>();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "ZeroPasses", LLVM_VERSION_STRING, []() {
            zero::registerZeroComputePasses();
            zero::registerZeroTransformsPasses();
            zero::registerZeroConversionPasses();
          }};
}
