//===- OptionSettings.h - What a session's options set ----------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A compile session's options (and the DeepSpeed config that sets the ones not
// given) as the pipeline's options, checked once: every value no run accepts is
// one message naming the flag, or the config key that set it, and the rule.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_OPTIONSETTINGS_H
#define ZERO_DRIVER_OPTIONSETTINGS_H

#include "zero/Driver/CompileOptions.h"
#include "zero/Driver/MemoryBudget.h"
#include "zero/Pipeline/ZeroPipeline.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace zero {

/// The pipeline's options `p` as the session's options `o` set them, compiling
/// down to `level` with the memory budget's or auto-tune's settings `s`.
void pipelineOptionsFrom(const CompileOptions &o, ZeroPipelineOptions &p,
                         llvm::StringRef level, const PlanSettings &s);

/// --recompute as a --zero-recompute level (auto: none until a budget asks).
int64_t recomputeLevelOf(const CompileOptions &o);

/// The first value among the driver's own options (the pipeline's are
/// findOptionProblem's) that no run accepts; `optimizerLr` is --lr.
std::optional<OptionProblem> findDriverProblem(const CompileOptions &o, double optimizerLr);

/// Every value the session was given, checked; false after printing the problem.
bool validateSettings(const CompileOptions &o, const ZeroPipelineOptions &options);

/// Reads o.deepspeedConfig and sets the options it implies (those given win);
/// the micro-batch it asks for goes to `microBatch`. False after printing why not.
bool applyDeepSpeedConfig(CompileOptions &o, std::optional<int64_t> &microBatch);

} // namespace zero

#endif // ZERO_DRIVER_OPTIONSETTINGS_H
