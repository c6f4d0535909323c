//===- ZeroPipeline.h - From the imported graph to the plan ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PIPELINE_ZEROPIPELINE_H
#define ZERO_PIPELINE_ZEROPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <cstdint>
#include <string>

namespace zero {

/// The zero pipeline's options (ZeroPipelineOptions.def declares each once; the
/// defaults are zero-opt's). `--zero-pipeline="zero-stage=2 world-size=4 ..."`
/// takes them in mlir-opt's pipeline syntax.
struct ZeroPipelineOptions : public mlir::PassPipelineOptions<ZeroPipelineOptions> {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  Option<TYPE> FIELD{*this, NAME, llvm::cl::desc(DESCRIPTION), llvm::cl::init(DEFAULT)};
#define ZERO_PIPELINE_SETTING(TYPE, FIELD, NAME, DEFAULT, DESCRIPTION)                \
  Option<TYPE> FIELD{*this, NAME, llvm::cl::desc(DESCRIPTION), llvm::cl::init(DEFAULT)};
#include "zero/Pipeline/ZeroPipelineOptions.def"
};

/// Why `options` cannot be compiled ("" when they can): a value out of range or
/// not one of the accepted ones, or options that do not go together. The message
/// names each option as `<dashes>name` ("--" for zero-opt's flags).
std::string checkZeroPipelineOptions(const ZeroPipelineOptions &options,
                                     llvm::StringRef dashes);

/// --zero-verify-pipeline: the invariants the pipeline's passes promise (every
/// started collective waited for once, no shard collective after the schedule, a
/// plan that passes zero-run's checks). buildZeroPipeline ends with it.
std::unique_ptr<mlir::Pass> createVerifyPipelinePass();
void registerVerifyPipelinePass();

/// The passes from an imported forward graph (a module holding func.func @main)
/// down to `options.level`.
/// `options` must pass checkZeroPipelineOptions.
void buildZeroPipeline(mlir::OpPassManager &pm, const ZeroPipelineOptions &options);

/// Registers `--zero-pipeline`: buildZeroPipeline with its options given in the
/// pass pipeline syntax, refused with checkZeroPipelineOptions's message.
void registerZeroPipeline();

} // namespace zero

#endif // ZERO_PIPELINE_ZEROPIPELINE_H
