//===- ZeroOptFlags.cpp - zero-opt's command-line flags -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/ZeroOptFlags.h"

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
// ZeroPipelineOptions.def; pipelineOptions() copies them into the pipeline's).
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  cl::opt<TYPE> FIELD(NAME, cl::desc(DESCRIPTION),                            \
                             cl::value_desc(*VALUES ? VALUES : valueName<TYPE>()),    \
                             cl::init(DEFAULT), cl::cat(GROUP##Category));
#include "zero/Pipeline/ZeroPipelineOptions.def"

cl::opt<std::string>
    emitLevel("emit",
              cl::desc("What to produce: graph (the imported forward graph), step "
                       "(the training step, compute IR), plan (plan IR) or zplan "
                       "(the plan file). Default: zplan when -o ends in .zplan, "
                       "graph for other ONNX input"),
              cl::value_desc("graph|step|plan|zplan"), cl::init(""),
              cl::cat(outputCategory));

cl::opt<std::string> deepspeedConfig(
    "deepspeed",
    cl::desc("A DeepSpeed JSON config: its batch sizes, optimizer, scheduler, "
             "zero_optimization, fp16/bf16 and clipping set the matching flags (flags "
             "given here win)"),
    cl::value_desc("ds_config.json"), cl::init(""), cl::cat(inputCategory));
cl::opt<int64_t> stepsPerPrint(
    "steps-per-print",
    cl::desc("Recorded in the plan: zero-run prints every N steps (its --print-every "
             "wins)"),
    cl::init(0), cl::value_desc(valueName<int64_t>()), cl::cat(trainingCategory));
cl::opt<bool> wallClockBreakdown(
    "wall-clock-breakdown",
    cl::desc("Recorded in the plan: zero-run times each kernel kind (--profile)"),
    cl::init(false), cl::cat(trainingCategory));
cl::opt<std::string> lrSchedule(
    "lr-schedule",
    cl::desc("DeepSpeed's schedules: WarmupLR, WarmupDecayLR, WarmupCosineLR; the "
             "learning rate becomes a runtime value"),
    cl::value_desc("constant|warmup|warmup-decay|warmup-cosine"), cl::init("constant"),
    cl::cat(trainingCategory));
cl::opt<double> warmupMinLr("warmup-min-lr",
                                   cl::desc("Schedules: the first learning rate"),
                                   cl::init(0.0), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));
cl::opt<double> warmupMaxLr("warmup-max-lr",
                                   cl::desc("Schedules: the rate after warm-up (default: "
                                            "--lr)"),
                                   cl::init(-1.0), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));
cl::opt<int64_t> warmupSteps("warmup-steps",
                                    cl::desc("Schedules: warm-up steps"), cl::init(1000),
                                    cl::value_desc(valueName<int64_t>()), cl::cat(trainingCategory));
cl::opt<std::string> warmupType("warmup-type",
                                       cl::desc("Schedules: the warm-up's shape"),
                                       cl::value_desc("log|linear"), cl::init("log"),
                                       cl::cat(trainingCategory));
cl::opt<int64_t> totalSteps(
    "total-steps", cl::desc("warmup-decay, warmup-cosine: the steps of the whole run"),
    cl::init(0), cl::value_desc(valueName<int64_t>()), cl::cat(trainingCategory));
cl::opt<double> cosMinRatio("cos-min-ratio",
                                   cl::desc("warmup-cosine: the final ratio of --lr"),
                                   cl::init(0.0001), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));
cl::opt<double> warmupMinRatio(
    "warmup-min-ratio", cl::desc("warmup-cosine: the first ratio of --lr"),
    cl::init(0.0), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));

cl::opt<double> lossScale("loss-scale",
                                 cl::desc("fp16: a fixed loss scale (0: dynamic)"),
                                 cl::init(0.0), cl::value_desc(valueName<double>()), cl::cat(precisionCategory));
cl::opt<int> initialScalePower(
    "initial-scale-power", cl::desc("fp16: the first dynamic loss scale is 2^N"),
    cl::init(16), cl::value_desc(valueName<int>()), cl::cat(precisionCategory));
cl::opt<int64_t> lossScaleWindow(
    "loss-scale-window",
    cl::desc("fp16: good steps after which the dynamic scale doubles"), cl::init(1000),
    cl::value_desc(valueName<int64_t>()), cl::cat(precisionCategory));
cl::opt<int> hysteresis(
    "hysteresis", cl::desc("fp16: overflows tolerated before the dynamic scale halves"),
    cl::init(2), cl::value_desc(valueName<int>()), cl::cat(precisionCategory));
cl::opt<double> minLossScale(
    "min-loss-scale",
    cl::desc("fp16: the smallest dynamic scale; an overflow there stops training"),
    cl::value_desc("number"), cl::init(1.0), cl::cat(precisionCategory));

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

cl::opt<std::string>
    machine("machine",
            cl::desc("Machine for the predicted step time in --report and for "
                     "--auto-tune: h100-nvlink, cpu, or a JSON file (zero-run "
                     "--calibrate writes one)"),
            cl::value_desc("name|file.json"), cl::init("cpu"), cl::cat(reportCategory));
cl::opt<double> maxMemoryGb(
    "max-memory-gb",
    cl::desc("Device memory per rank, GiB (0: no budget): the plan is made to fit by "
             "recomputing activations, then fewer prefetched buckets, then smaller "
             "buckets; an error if it cannot"),
    cl::value_desc("GiB"), cl::init(0.0), cl::cat(scheduleCategory));
cl::opt<std::string> recompute(
    "recompute",
    cl::desc("Activation checkpointing: auto (as much as --max-memory-gb needs; none "
             "without it), none, cheap (recompute cheap ops from kept matrix "
             "products), blocks (keep only the forward's cut points, such as the "
             "residual stream between blocks)"),
    cl::value_desc("auto|none|cheap|blocks"), cl::init("auto"), cl::cat(scheduleCategory));
cl::opt<bool>
    autoTune("auto-tune",
             cl::desc("Choose --bucket-size-mb and --prefetch-buckets (those not given) "
                      "by the predicted step time on --machine (within --max-live-mb), "
                      "and, when the world spans nodes, --zero-shard-group-size"),
             cl::init(false), cl::cat(scheduleCategory));

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
