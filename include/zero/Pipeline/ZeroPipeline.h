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
#include <optional>
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

/// A value that cannot be compiled: the option's name ("lr"), its value as given,
/// and the rule it breaks, with the allowed range ("a learning rate must be
/// finite and >= 0 (torch.optim)").
struct OptionProblem {
  std::string option, value, rule;
};

/// The first problem with `options`: a value out of range (PyTorch's rules for
/// the optimizers' hyper-parameters, DeepSpeed's for ZeRO's), not one of the
/// accepted ones, or options that do not go together. Every option's rule is
/// here, once: zero-opt checks its flags and a DeepSpeed config's keys with it.
std::optional<OptionProblem> findOptionProblem(const ZeroPipelineOptions &options);

/// findOptionProblem's problem as `<dashes>name=value: rule` ("--" for zero-opt's
/// flags), or "" when there is none.
std::string checkZeroPipelineOptions(const ZeroPipelineOptions &options,
                                     llvm::StringRef dashes);

/// A number as messages show an option's value ("0.001", "inf", "nan").
std::string formatOptionValue(double v);

/// The problem of `option`'s `value` when it is not one of `allowed` ("a, b, c").
std::optional<OptionProblem> notOneOf(llvm::StringRef option, llvm::StringRef value,
                                      llvm::StringRef allowed);

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
