//===- ZeroOptFlags.h - zero-opt's command-line flags -----------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// zero-opt's flags: LLVM command-line options in the groups its --help shows,
// one per option of a compile session (zero/Pipeline/ZeroPipelineOptions.def,
// zero/Driver/CompileOptions.def). Only the tool reads them: main() turns them
// into CompileOptions and hands those to a CompileSession.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TOOLS_ZEROOPT_ZEROOPTFLAGS_H
#define ZERO_TOOLS_ZEROOPT_ZEROOPTFLAGS_H

#include "zero/Driver/CompileOptions.h"

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
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  extern cl::opt<TYPE> FIELD;
#include "zero/Driver/CompileOptions.def"

extern cl::list<std::string> inputShapes;
extern cl::list<std::string> constantInputs;
extern cl::opt<std::string> report;
extern cl::opt<bool> listOnnxOps;

/// The compile session's options as the parsed flags give them, each marked
/// given when it was on the command line.
CompileOptions compileOptionsFromFlags();

/// `zero-opt --help`: zero-opt's own options by group, each line within 100
/// columns. (`--help-hidden` is LLVM's full list: every LLVM and MLIR option.)
void printHelp(llvm::raw_ostream &os);

/// One option of the help: `flag` in a column, `description` wrapped beside it.
void printOptionHelp(llvm::raw_ostream &os, llvm::StringRef flag,
                     llvm::StringRef description);

} // namespace zero::flags

#endif // ZERO_TOOLS_ZEROOPT_ZEROOPTFLAGS_H
