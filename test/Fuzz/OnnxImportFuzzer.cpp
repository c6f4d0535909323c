//===- OnnxImportFuzzer.cpp - libFuzzer target: ONNX bytes to a plan ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each input is a serialized ONNX ModelProto. It goes through what zero-opt does
// with a model file: import, then the whole pipeline to a plan (the forward pass,
// and the training step at ZeRO stage 3 on 2 ranks), then the plan writer with the
// runtime's checks. Errors are fine; crashes, hangs, leaks and undefined behaviour
// (AddressSanitizer, UndefinedBehaviorSanitizer) are findings. Built by
// utils/fuzz.sh (clang, -DZERO_FUZZ=ON).
//
//===----------------------------------------------------------------------===//

#include "zero/Import/ONNX/ImportOnnx.h"
#include "zero/InitAll.h"
#include "zero/Pipeline/ZeroPipeline.h"
#include "zero/Target/Zplan/ExportZplan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <cstdint>

using namespace mlir;

/// Compiles `module` (a clone) down to a plan file in memory.
static void compile(ModuleOp module, const zero::ZeroPipelineOptions &options) {
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(module.getContext());
  zero::buildZeroPipeline(pm, options);
  if (failed(pm.run(*clone)))
    return;
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  (void)zero::exportZplan(*clone, os, "fuzz.onnx");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, (int)size))
    return 0;
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    zero::registerAllDialects(*r);
    return r;
  }();
  // A fresh context per input: uniqued attributes would otherwise pile up.
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  zero::OnnxImportOptions options;
  OwningOpRef<ModuleOp> module =
      zero::importOnnxModel(context, std::move(model), "fuzz.onnx", options);
  if (!module)
    return 0;
  zero::ZeroPipelineOptions inference;
  inference.mode = "inference";
  compile(*module, inference);
  zero::ZeroPipelineOptions train;
  train.zeroStage = 3;
  train.worldSize = 2;
  train.bucketSizeMb = 0.001;
  compile(*module, train);
  return 0;
}
