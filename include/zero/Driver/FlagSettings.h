//===- FlagSettings.h - What zero-opt's flags set ---------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// zero-opt's flags (and the DeepSpeed config that sets them) as the pipeline's
// options, checked once: every value no run accepts is one message naming the
// flag, or the config key that set it, and the rule.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_FLAGSETTINGS_H
#define ZERO_DRIVER_FLAGSETTINGS_H

#include "zero/Driver/MemoryBudget.h"
#include "zero/Pipeline/ZeroPipeline.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace zero {

/// The pipeline's options as zero-opt's flags set them, compiling down to
/// `level` with the memory budget's or auto-tune's settings `s`.
void pipelineOptionsFromFlags(ZeroPipelineOptions &o, llvm::StringRef level,
                              const PlanSettings &s);

/// --recompute as a --zero-recompute level (auto: none until a budget asks).
int64_t recomputeLevelFromFlags();

/// The first value among zero-opt's own flags (the pipeline's are
/// findOptionProblem's) that no run accepts; `optimizerLr` is --lr.
std::optional<OptionProblem> findDriverProblem(double optimizerLr);

/// Every value zero-opt was given, checked; false after printing the problem.
bool validateSettings(const ZeroPipelineOptions &options);

/// Reads --deepspeed and sets the flags it implies (the command line's win);
/// the micro-batch it asks for goes to `microBatch`. False after printing why not.
bool applyDeepSpeedConfig(std::optional<int64_t> &microBatch);

} // namespace zero

#endif // ZERO_DRIVER_FLAGSETTINGS_H
