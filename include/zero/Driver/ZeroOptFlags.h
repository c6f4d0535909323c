//===- ZeroOptFlags.h - zero-opt's command-line flags -----------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// zero-opt's flags: LLVM command-line options in the groups its --help shows.
// The zero pipeline's are declared once, in ZeroPipelineOptions.def; the
// driver's own (DeepSpeed config, schedules, loss scaling, budget, report) here.
// Defined in lib/Driver/ZeroOptFlags.cpp; a tool that links it has them.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_ZEROOPTFLAGS_H
#define ZERO_DRIVER_ZEROOPTFLAGS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace zero::flags {

namespace cl = llvm::cl;

extern cl::OptionCategory inputCategory;
extern cl::OptionCategory trainingCategory;
extern cl::OptionCategory precisionCategory;
extern cl::OptionCategory zeroCategory;
extern cl::OptionCategory scheduleCategory;
extern cl::OptionCategory reportCategory;
extern cl::OptionCategory outputCategory;

#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  extern cl::opt<TYPE> FIELD;
#include "zero/Pipeline/ZeroPipelineOptions.def"

extern cl::opt<std::string> emitLevel;
extern cl::opt<std::string> deepspeedConfig;
extern cl::opt<int64_t> stepsPerPrint;
extern cl::opt<bool> wallClockBreakdown;
extern cl::opt<std::string> lrSchedule;
extern cl::opt<double> warmupMinLr;
extern cl::opt<double> warmupMaxLr;
extern cl::opt<int64_t> warmupSteps;
extern cl::opt<std::string> warmupType;
extern cl::opt<int64_t> totalSteps;
extern cl::opt<double> cosMinRatio;
extern cl::opt<double> warmupMinRatio;
extern cl::opt<double> lossScale;
extern cl::opt<int> initialScalePower;
extern cl::opt<int64_t> lossScaleWindow;
extern cl::opt<int> hysteresis;
extern cl::opt<double> minLossScale;
extern cl::list<std::string> inputShapes;
extern cl::list<std::string> constantInputs;
extern cl::opt<bool> listOnnxOps;
extern cl::opt<std::string> report;
extern cl::opt<std::string> machine;
extern cl::opt<double> maxMemoryGb;
extern cl::opt<std::string> recompute;
extern cl::opt<bool> autoTune;
extern cl::opt<std::string> emitLevel;
extern cl::list<std::string> inputShapes;
extern cl::opt<std::string> report;
extern cl::opt<std::string> machine;
extern cl::opt<bool> autoTune;

/// `zero-opt --help`: zero-opt's own options by group, each line within 100
/// columns. (`--help-hidden` is LLVM's full list: every LLVM and MLIR option.)
void printHelp(llvm::raw_ostream &os);

/// One option of the help: `flag` in a column, `description` wrapped beside it.
void printOptionHelp(llvm::raw_ostream &os, llvm::StringRef flag,
                     llvm::StringRef description);

} // namespace zero::flags

#endif // ZERO_DRIVER_ZEROOPTFLAGS_H
