//===- ZeroOptFlags.cpp - zero-opt's command-line flags -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "ZeroOptFlags.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <type_traits>
#include <vector>

using namespace llvm;
using namespace zero::flags;

namespace zero::flags {

// zero-opt's own options, in the groups --help shows (in this order); LLVM's and
// MLIR's many others stay reachable through --help-hidden.
cl::OptionCategory inputCategory("Input");
cl::OptionCategory trainingCategory("Training");
cl::OptionCategory precisionCategory("Mixed precision");
cl::OptionCategory zeroCategory("ZeRO");
cl::OptionCategory scheduleCategory("Schedule");
cl::OptionCategory reportCategory("Report");
cl::OptionCategory outputCategory("Output");

// A value's name in --help when its flag gives none: "number", "N" or "string"
// (LLVM would print its parser's name; zero-opt's --help prints the value_desc).
template <typename T> const char *valueName() {
  if constexpr (std::is_same_v<T, bool>)
    return ""; // a switch
  else if constexpr (std::is_floating_point_v<T>)
    return "number";
  else if constexpr (std::is_integral_v<T>)
    return "N";
  else
    return "string";
}

// The zero pipeline's options, as flags of the same names (declared once, in
// ZeroPipelineOptions.def; compileOptionsFromFlags() copies them into the
// session's options, OptionSettings.cpp from there into the pipeline's).
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  cl::opt<TYPE> FIELD(NAME, cl::desc(DESCRIPTION),                            \
                             cl::value_desc(*VALUES ? VALUES : valueName<TYPE>()),    \
                             cl::init(DEFAULT), cl::cat(GROUP##Category));
#include "zero/Pipeline/ZeroPipelineOptions.def"

// zero-opt's own options (CompileOptions.def), as flags of the same names.
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  cl::opt<TYPE> FIELD(NAME, cl::desc(DESCRIPTION),                                    \
                      cl::value_desc(*VALUES ? VALUES : valueName<TYPE>()),            \
                      cl::init(DEFAULT), cl::cat(GROUP##Category));
#include "zero/Driver/CompileOptions.def"

cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape for a graph input with symbolic "
                         "dimensions, e.g. --input-shape tokens=2x32"),
                cl::value_desc("NAME=DxD..."), cl::cat(inputCategory));

cl::list<std::string> constantInputs(
    "constant-input",
    cl::desc("Treat a graph input as a compile-time constant read from a "
             "TensorProto file, e.g. --constant-input shape=shape.pb (for inputs "
             "that set shapes: Reshape's shape, Slice's starts, axes)"),
    cl::value_desc("NAME=FILE.pb"), cl::cat(inputCategory));

cl::opt<bool> listOnnxOps(
    "list-onnx-ops",
    cl::desc("Print the ONNX ops the importer reads, one per line with the schema "
             "versions (since_version) it handles, and exit"),
    cl::init(false), cl::cat(inputCategory));

cl::opt<std::string>
    report("report",
           cl::desc("Print what each rank holds and moves per step: --report for a "
                    "table, --report=json for one JSON object"),
           cl::value_desc("table|json"), cl::ValueOptional, cl::init(""),
           cl::cat(reportCategory));

CompileOptions compileOptionsFromFlags() {
  CompileOptions o;
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  o.FIELD = FIELD.getValue();                                                          \
  o.FIELD.given = FIELD.getNumOccurrences() > 0;
#include "zero/Pipeline/ZeroPipelineOptions.def"
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  o.FIELD = FIELD.getValue();                                                          \
  o.FIELD.given = FIELD.getNumOccurrences() > 0;
#include "zero/Driver/CompileOptions.def"
  o.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  o.constantInputs.assign(constantInputs.begin(), constantInputs.end());
  o.report = report.getValue();
  o.report.given = report.getNumOccurrences() > 0;
  return o;
}

} // namespace zero::flags

/// One option of `zero-opt --help`: its flag in a column, its description wrapped
/// beside it, every line within 100 columns (LLVM's own printer puts a
/// description on one line, however long).
void zero::flags::printOptionHelp(raw_ostream &os, StringRef flag, StringRef description) {
  const size_t kColumn = 30, kWidth = 100;
  std::string line = "  " + flag.str();
  if (line.size() + 1 > kColumn) {
    os << line << "\n";
    line.clear();
  }
  line.resize(kColumn, ' ');
  size_t start = line.size();
  SmallVector<StringRef> words;
  description.split(words, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef w : words) {
    if (line.size() > start && line.size() + 1 + w.size() > kWidth) {
      os << line << "\n";
      line.assign(kColumn, ' ');
    }
    if (line.size() > start)
      line += ' ';
    line += w.str();
  }
  os << line << "\n";
}

/// `zero-opt --help`: zero-opt's own options by group, in a screen or two.
/// (`--help-hidden` is LLVM's full list: every LLVM and MLIR option and pass.)
void zero::flags::printHelp(raw_ostream &os) {
  os
      << "OVERVIEW: zero-opt: ZeRO training compiler\n\n"
         "USAGE: zero-opt MODEL.onnx [options] -o STEP.zplan\n"
         "       zero-opt MODEL.onnx --report [options]\n"
         "       zero-opt FILE.mlir [--pass ...]   (as mlir-opt, with zero-opt's "
         "dialects and passes)\n";
  std::vector<cl::OptionCategory *> order = {&inputCategory, &trainingCategory,
                                             &precisionCategory,
                                             &zeroCategory, &scheduleCategory,
                                             &reportCategory, &outputCategory};
  auto &registered = cl::getRegisteredOptions();
  std::vector<std::vector<cl::Option *>> groups(order.size());
  for (auto &entry : registered) {
    cl::Option *o = entry.second;
    for (size_t g = 0; g < order.size(); ++g)
      if (llvm::is_contained(o->Categories, order[g]) &&
          !llvm::is_contained(groups[g], o))
        groups[g].push_back(o);
  }
  for (size_t g = 0; g < order.size(); ++g) {
    llvm::sort(groups[g], [](cl::Option *a, cl::Option *b) {
      return a->ArgStr < b->ArgStr;
    });
    os << "\n" << order[g]->getName() << ":\n";
    if (order[g] == &outputCategory)
      printOptionHelp(os, "-o FILE", "Output file: a .zplan plan, or IR for --emit "
                                 "(default: stdout)");
    for (cl::Option *o : groups[g]) {
      std::string flag = "--" + o->ArgStr.str();
      if (o->getValueExpectedFlag() != cl::ValueDisallowed && !o->ValueStr.empty() &&
          o->ValueStr != "bool")
        flag += "=<" + o->ValueStr.str() + ">";
      printOptionHelp(os, flag, o->HelpStr);
    }
  }
  os << "\nEvery LLVM and MLIR option (passes for .mlir input, --mlir-*): "
                  "--help-hidden\n";
}
