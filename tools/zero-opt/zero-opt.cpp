//===- zero-opt.cpp - The zero-opt compiler driver ------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Two ways in:
//   zero-opt model.onnx [--mode=train|inference] [--optimizer=adamw ...] -o step.zplan
//       imports the model and compiles its training step (or its forward pass)
//       down to a plan file, or prints the IR of the level named by --emit;
//   zero-opt file.mlir --some-pass ...
//       behaves as mlir-opt with the zero-opt dialects and passes (lit tests).
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedConfig.h"
#include "MemoryBudget.h"

#include "zero/Dialect/Plan/Analysis/CostModel.h"
#include "zero/Dialect/Plan/Analysis/ZeroReport.h"
#include "zero/Import/ONNX/ImportOnnx.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zero/InitAll.h"
#include "zero/Pipeline/ZeroPipeline.h"
#include "zero/Target/Zplan/ExportZplan.h"
#include "zrt/AtomicFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <map>
#include <optional>
#include <type_traits>

using namespace mlir;
namespace cl = llvm::cl;

// zero-opt's own options, in the groups --help shows (in this order); LLVM's and
// MLIR's many others stay reachable through --help-hidden.
static cl::OptionCategory inputCategory("Input");
static cl::OptionCategory trainingCategory("Training");
static cl::OptionCategory precisionCategory("Mixed precision");
static cl::OptionCategory zeroCategory("ZeRO");
static cl::OptionCategory scheduleCategory("Schedule");
static cl::OptionCategory reportCategory("Report");
static cl::OptionCategory outputCategory("Output");

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
  static cl::opt<TYPE> FIELD(NAME, cl::desc(DESCRIPTION),                            \
                             cl::value_desc(*VALUES ? VALUES : valueName<TYPE>()),    \
                             cl::init(DEFAULT), cl::cat(GROUP##Category));
#include "zero/Pipeline/ZeroPipelineOptions.def"

static cl::opt<std::string>
    emitLevel("emit",
              cl::desc("What to produce: graph (the imported forward graph), step "
                       "(the training step, compute IR), plan (plan IR) or zplan "
                       "(the plan file). Default: zplan when -o ends in .zplan, "
                       "graph for other ONNX input"),
              cl::value_desc("graph|step|plan|zplan"), cl::init(""),
              cl::cat(outputCategory));



static cl::opt<std::string> deepspeedConfig(
    "deepspeed",
    cl::desc("A DeepSpeed JSON config: its batch sizes, optimizer, scheduler, "
             "zero_optimization, fp16/bf16 and clipping set the matching flags (flags "
             "given here win)"),
    cl::value_desc("ds_config.json"), cl::init(""), cl::cat(inputCategory));
static cl::opt<int64_t> stepsPerPrint(
    "steps-per-print",
    cl::desc("Recorded in the plan: zero-run prints every N steps (its --print-every "
             "wins)"),
    cl::init(0), cl::value_desc(valueName<int64_t>()), cl::cat(trainingCategory));
static cl::opt<bool> wallClockBreakdown(
    "wall-clock-breakdown",
    cl::desc("Recorded in the plan: zero-run times each kernel kind (--profile)"),
    cl::init(false), cl::cat(trainingCategory));
static cl::opt<std::string> lrSchedule(
    "lr-schedule",
    cl::desc("DeepSpeed's schedules: WarmupLR, WarmupDecayLR, WarmupCosineLR; the "
             "learning rate becomes a runtime value"),
    cl::value_desc("constant|warmup|warmup-decay|warmup-cosine"), cl::init("constant"),
    cl::cat(trainingCategory));
static cl::opt<double> warmupMinLr("warmup-min-lr",
                                   cl::desc("Schedules: the first learning rate"),
                                   cl::init(0.0), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));
static cl::opt<double> warmupMaxLr("warmup-max-lr",
                                   cl::desc("Schedules: the rate after warm-up (default: "
                                            "--lr)"),
                                   cl::init(-1.0), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));
static cl::opt<int64_t> warmupSteps("warmup-steps",
                                    cl::desc("Schedules: warm-up steps"), cl::init(1000),
                                    cl::value_desc(valueName<int64_t>()), cl::cat(trainingCategory));
static cl::opt<std::string> warmupType("warmup-type",
                                       cl::desc("Schedules: the warm-up's shape"),
                                       cl::value_desc("log|linear"), cl::init("log"),
                                       cl::cat(trainingCategory));
static cl::opt<int64_t> totalSteps(
    "total-steps", cl::desc("warmup-decay, warmup-cosine: the steps of the whole run"),
    cl::init(0), cl::value_desc(valueName<int64_t>()), cl::cat(trainingCategory));
static cl::opt<double> cosMinRatio("cos-min-ratio",
                                   cl::desc("warmup-cosine: the final ratio of --lr"),
                                   cl::init(0.0001), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));
static cl::opt<double> warmupMinRatio(
    "warmup-min-ratio", cl::desc("warmup-cosine: the first ratio of --lr"),
    cl::init(0.0), cl::value_desc(valueName<double>()), cl::cat(trainingCategory));

static cl::opt<double> lossScale("loss-scale",
                                 cl::desc("fp16: a fixed loss scale (0: dynamic)"),
                                 cl::init(0.0), cl::value_desc(valueName<double>()), cl::cat(precisionCategory));
static cl::opt<int> initialScalePower(
    "initial-scale-power", cl::desc("fp16: the first dynamic loss scale is 2^N"),
    cl::init(16), cl::value_desc(valueName<int>()), cl::cat(precisionCategory));
static cl::opt<int64_t> lossScaleWindow(
    "loss-scale-window",
    cl::desc("fp16: good steps after which the dynamic scale doubles"), cl::init(1000),
    cl::value_desc(valueName<int64_t>()), cl::cat(precisionCategory));
static cl::opt<int> hysteresis(
    "hysteresis", cl::desc("fp16: overflows tolerated before the dynamic scale halves"),
    cl::init(2), cl::value_desc(valueName<int>()), cl::cat(precisionCategory));
static cl::opt<double> minLossScale(
    "min-loss-scale",
    cl::desc("fp16: the smallest dynamic scale; an overflow there stops training"),
    cl::value_desc("number"), cl::init(1.0), cl::cat(precisionCategory));

static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape for a graph input with symbolic "
                         "dimensions, e.g. --input-shape tokens=2x32"),
                cl::value_desc("NAME=DxD..."), cl::cat(inputCategory));

static cl::list<std::string> constantInputs(
    "constant-input",
    cl::desc("Treat a graph input as a compile-time constant read from a "
             "TensorProto file, e.g. --constant-input shape=shape.pb (for inputs "
             "that set shapes: Reshape's shape, Slice's starts, axes)"),
    cl::value_desc("NAME=FILE.pb"), cl::cat(inputCategory));

static cl::opt<bool> listOnnxOps(
    "list-onnx-ops",
    cl::desc("Print the ONNX ops the importer reads, one per line with the schema "
             "versions (since_version) it handles, and exit"),
    cl::init(false), cl::cat(inputCategory));

static cl::opt<std::string>
    report("report",
           cl::desc("Print what each rank holds and moves per step: --report for a "
                    "table, --report=json for one JSON object"),
           cl::value_desc("table|json"), cl::ValueOptional, cl::init(""),
           cl::cat(reportCategory));


static cl::opt<std::string>
    machine("machine",
            cl::desc("Machine for the predicted step time in --report and for "
                     "--auto-tune: h100-nvlink, cpu, or a JSON file (zero-run "
                     "--calibrate writes one)"),
            cl::value_desc("name|file.json"), cl::init("cpu"), cl::cat(reportCategory));
static cl::opt<double> maxMemoryGb(
    "max-memory-gb",
    cl::desc("Device memory per rank, GiB (0: no budget): the plan is made to fit by "
             "recomputing activations, then fewer prefetched buckets, then smaller "
             "buckets; an error if it cannot"),
    cl::value_desc("GiB"), cl::init(0.0), cl::cat(scheduleCategory));
static cl::opt<std::string> recompute(
    "recompute",
    cl::desc("Activation checkpointing: auto (as much as --max-memory-gb needs; none "
             "without it), none, cheap (recompute cheap ops from kept matrix "
             "products), blocks (keep only the forward's cut points, such as the "
             "residual stream between blocks)"),
    cl::value_desc("auto|none|cheap|blocks"), cl::init("auto"), cl::cat(scheduleCategory));
static cl::opt<bool>
    autoTune("auto-tune",
             cl::desc("Choose --bucket-size-mb and --prefetch-buckets by the predicted "
                      "step time on --machine (within --max-live-mb)"),
             cl::init(false), cl::cat(scheduleCategory));


namespace {

/// The file a location points into (the importer fuses the ONNX node's name with
/// the file), or "".
std::string fileOf(Location loc) {
  if (auto f = dyn_cast<FileLineColLoc>(loc))
    return f.getFilename().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string file = fileOf(inner);
      if (!file.empty())
        return file;
    }
  return "";
}

/// The ONNX node a location points back to (the importer fuses its name with the
/// file), or "".
std::string nodeOf(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string node = nodeOf(inner);
      if (!node.empty())
        return node;
    }
  return "";
}

/// Prints diagnostics on ONNX input as `model.onnx: error: node 'x' ...`: the file
/// and the ONNX node say where, MLIR's location syntax would add only noise.
LogicalResult printDiagnostic(Diagnostic &diag) {
  std::string file = fileOf(diag.getLocation());
  std::string node = nodeOf(diag.getLocation());
  std::string message = diag.str();
  if (!node.empty() && !StringRef(message).starts_with("node '"))
    message = "node '" + node + "': " + message;
  const char *kind = diag.getSeverity() == DiagnosticSeverity::Error     ? "error"
                     : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                                                                         : "note";
  llvm::errs() << (file.empty() ? "zero-opt" : file) << ": " << kind << ": " << message
               << "\n";
  return success();
}

bool isOnnx(StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtxt");
}

LogicalResult parseInputShapes(zero::OnnxImportOptions &options) {
  for (const std::string &spec : inputShapes) {
    auto [name, dims] = StringRef(spec).rsplit('=');
    if (name.empty() || dims.empty()) {
      llvm::errs() << "zero-opt: error: --input-shape '" << spec
                   << "' is not NAME=DxDx...\n";
      return failure();
    }
    std::vector<int64_t> shape;
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d) || d < 0) {
        llvm::errs() << "zero-opt: error: --input-shape '" << spec
                     << "': '" << p << "' is not a dimension\n";
        return failure();
      }
      shape.push_back(d);
    }
    options.inputShapes[name.str()] = shape;
  }
  for (const std::string &spec : constantInputs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty()) {
      llvm::errs() << "zero-opt: error: --constant-input '" << spec
                   << "' is not NAME=FILE.pb\n";
      return failure();
    }
    options.constantInputs[name.str()] = file.str();
  }
  return success();
}

/// The pipeline's options as zero-opt's flags set them, compiling down to
/// `level` with the memory budget's or auto-tune's settings `s`.
void pipelineOptions(zero::ZeroPipelineOptions &o, StringRef level,
                     const zero::PlanSettings &s) {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  o.FIELD = FIELD.getValue();
#include "zero/Pipeline/ZeroPipelineOptions.def"
  o.level = level.str();
  o.runtimeLr = lrSchedule != "constant";
  o.bucketSizeMb = s.bucketMb;
  o.prefetchBuckets = s.prefetch;
  o.recomputeLevel = s.recomputeLevel;
  if (s.offloadActivations)
    o.offloadActivations = "cpu";
}

/// The passes from the imported graph (or the module's level) down to `level`, as
/// zero-opt's flags choose them.
void buildPipeline(PassManager &pm, bool isGraph, StringRef level,
                   const zero::PlanSettings &s) {
  if (!isGraph)
    return; // a module already at the plan level is written as it is
  zero::ZeroPipelineOptions o;
  pipelineOptions(o, level, s);
  zero::buildZeroPipeline(pm, o);
}

/// What trains, counted on the imported graph (after --freeze), for --report.
struct TrainableSummary {
  int64_t tensors = 0, elements = 0;
  std::string source;
};
std::optional<TrainableSummary> trainableSummary;

/// Counts the trainable set and where it came from (the importer's
/// compute.trainable_source). A model whose set is every float initializer
/// (buffers included: PyTorch's older exporter writes rotary tables and masks as
/// initializers too) gets one line that says so, and how many.
void noteTrainableSet(ModuleOp module, StringRef input) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return;
  llvm::Regex frozen(freeze);
  TrainableSummary summary;
  if (auto source = func->getAttrOfType<StringAttr>("compute.trainable_source"))
    summary.source = source.str();
  int64_t all = 0;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    all += !zero::trainedParameterName(func, i, nullptr).empty();
    if (zero::trainedParameterName(func, i, freeze.empty() ? nullptr : &frozen).empty())
      continue;
    ++summary.tensors;
    summary.elements +=
        cast<RankedTensorType>(func.getArgument(i).getType()).getNumElements();
  }
  trainableSummary = summary;
  if (func->hasAttr("compute.trainable_listed"))
    return;
  llvm::errs() << input << ": note: no zero.trainable metadata and no torch.export "
               << "graph signature: training every float initializer ("
               << summary.tensors << " of " << all
               << (freeze.empty() ? "" : " after --freeze")
               << "); utils/zero_export.py exports a model with the entry\n";
}

/// Compiles clones of the module for bucket sizes and prefetch depths, and keeps
/// the fastest predicted step whose gathered buckets fit --max-live-mb.
LogicalResult chooseByCostModel(ModuleOp module, const zero::MachineModel &m,
                                zero::PlanSettings &settings) {
  double best = -1;
  int tried = 0;
  for (double b : {1.0, 5.0, 25.0, 100.0})
    for (int64_t k : {1, 2, 4, 8}) {
      OwningOpRef<ModuleOp> clone = module.clone();
      PassManager pm(module.getContext());
      buildPipeline(pm, true, "plan", {settings.recomputeLevel, b, k});
      // A candidate that does not fit is skipped, silently: the others may.
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      if (failed(pm.run(*clone)))
        continue;
      auto p = zero::predictStep(*clone, m);
      if (failed(p))
        continue;
      ++tried;
      if (best < 0 || p->stepS < best) {
        best = p->stepS;
        settings.bucketMb = b;
        settings.prefetch = k;
      }
    }
  if (best < 0) {
    llvm::errs() << "zero-opt: error: --auto-tune found no bucket size and prefetch "
                    "depth that fit --max-live-mb="
                 << maxLiveMb << "\n";
    return failure();
  }
  llvm::errs() << "zero-opt: auto-tune on " << m.name
               << ": --bucket-size-mb=" << llvm::format("%g", settings.bucketMb)
               << " --prefetch-buckets=" << settings.prefetch << " (predicted step "
               << llvm::format("%.3f", best * 1e3) << " ms, best of " << tried
               << " candidates)\n";
  return success();
}

/// The settings zero-run needs (the loss scaler's, the learning-rate schedule's,
/// how often to print), on the module for the plan writer.
void recordRuntimeSettings(ModuleOp module) {
  if (mode != "train")
    return;
  Builder b(module.getContext());
  if (stepsPerPrint > 0)
    module->setAttr("zero.print_every", b.getI64IntegerAttr(stepsPerPrint));
  if (wallClockBreakdown)
    module->setAttr("zero.profile", b.getUnitAttr());
  if (lrSchedule != "constant")
    module->setAttr(
        "zero.lr_schedule",
        b.getDictionaryAttr(
            {b.getNamedAttr("kind", b.getStringAttr(lrSchedule)),
             b.getNamedAttr("min_lr", b.getF64FloatAttr(warmupMinLr)),
             b.getNamedAttr("max_lr",
                            b.getF64FloatAttr(warmupMaxLr < 0 ? (double)lr : warmupMaxLr)),
             b.getNamedAttr("warmup_steps", b.getF64FloatAttr((double)warmupSteps)),
             b.getNamedAttr("warmup_type", b.getStringAttr(warmupType)),
             b.getNamedAttr("total_steps", b.getF64FloatAttr((double)totalSteps)),
             b.getNamedAttr("base_lr", b.getF64FloatAttr(lr)),
             b.getNamedAttr("cos_min_ratio", b.getF64FloatAttr(cosMinRatio)),
             b.getNamedAttr("warmup_min_ratio", b.getF64FloatAttr(warmupMinRatio))}));
  if (precision == "fp32")
    return;
  module->setAttr("zero.precision", b.getStringAttr(precision));
  if (precision != "fp16")
    return;
  module->setAttr("zero.loss_scaling",
                  b.getDictionaryAttr(
                      {b.getNamedAttr("scale", b.getF64FloatAttr(lossScale)),
                       b.getNamedAttr("initial_scale_power",
                                      b.getF64FloatAttr(initialScalePower)),
                       b.getNamedAttr("window", b.getF64FloatAttr(lossScaleWindow)),
                       b.getNamedAttr("hysteresis", b.getF64FloatAttr(hysteresis)),
                       b.getNamedAttr("min_scale", b.getF64FloatAttr(minLossScale))}));
}

/// The flags a DeepSpeed config set (the command line did not): the key and
/// value each came from, for messages about them.
struct ConfigOrigin {
  std::string key, value;
};
std::map<std::string, ConfigOrigin> configOrigins;

/// Sets flag `name` from the DeepSpeed config's `key`, unless the command line
/// gave it (then one line says which wins). A command line that breaks the
/// config's batch rule (`batchRule`: train_batch_size) is an error instead.
bool applyConfigFlag(StringRef name, StringRef value, StringRef key,
                     const std::string &batchRule = "") {
  auto &registered = cl::getRegisteredOptions();
  auto it = registered.find(name);
  if (it == registered.end()) {
    llvm::errs() << "zero-opt: error: internal: the config sets --" << name
                 << ", which zero-opt does not have\n";
    return false;
  }
  cl::Option *o = it->second;
  if (o->getNumOccurrences()) {
    if (name == "grad-accum-steps" && !batchRule.empty() &&
        std::to_string(gradAccumSteps) != value) {
      llvm::errs() << "zero-opt: error: --grad-accum-steps=" << gradAccumSteps
                   << " on the command line contradicts " << deepspeedConfig << ": its "
                   << batchRule << " needs " << value
                   << " micro-batches per step (change train_batch_size for "
                   << gradAccumSteps << " instead)\n";
      return false;
    }
    llvm::errs() << "zero-opt: note: --" << name << " on the command line overrides "
                 << key << " (" << value << ") of " << deepspeedConfig << "\n";
    return true;
  }
  configOrigins[name.str()] = {key.str(), value.str()};
  if (o->addOccurrence(0, name, value)) {
    llvm::errs() << "zero-opt: error: " << deepspeedConfig << ": " << key << " (" << value
                 << ") is not a valid --" << name << "\n";
    return false;
  }
  return true;
}

/// The first value among zero-opt's own flags (the pipeline's are
/// findOptionProblem's) that no run accepts: DeepSpeed's rules for its schedules
/// (each takes the parameters its class takes) and loss scaling, and budgets that
/// are finite. Flags that go with a setting not chosen are problems too.
std::optional<zero::OptionProblem> findDriverProblem(double optimizerLr) {
  using P = std::optional<zero::OptionProblem>;
  auto number = [](const cl::Option &o, double v, std::string rule) -> P {
    return zero::OptionProblem{o.ArgStr.str(), zero::formatOptionValue(v), rule};
  };
  auto count = [](const cl::Option &o, int64_t v, std::string rule) -> P {
    return zero::OptionProblem{o.ArgStr.str(), std::to_string(v), rule};
  };
  auto oneOf = [](const cl::opt<std::string> &o, StringRef allowed) {
    return zero::notOneOf(o.ArgStr, o.getValue(), allowed);
  };
  auto given = [](const cl::Option &o) { return o.getNumOccurrences() > 0; };
  for (P p : {oneOf(lrSchedule, "constant, warmup, warmup-decay, warmup-cosine"),
              oneOf(warmupType, "log, linear"),
              oneOf(recompute, "auto, none, cheap, blocks")})
    if (p)
      return p;
  // torch.optim's constructors take only their own hyper-parameters.
  if (optimizer == "sgd")
    for (const cl::Option *o : {(const cl::Option *)&beta1, (const cl::Option *)&beta2,
                                (const cl::Option *)&eps})
      if (given(*o))
        return zero::OptionProblem{o->ArgStr.str(), "", "is AdamW's: --optimizer=sgd "
                                   "takes no betas or epsilon (torch.optim.SGD)"};
  if (optimizer == "adamw" && given(momentum))
    return zero::OptionProblem{momentum.ArgStr.str(), "",
                               "is SGD's: --optimizer=adamw takes no momentum "
                               "(torch.optim.AdamW)"};
  // DeepSpeed's schedules, each with the parameters of its class
  // (deepspeed/runtime/lr_schedules.py): others are an error there, so here.
  bool warmupLr = lrSchedule == "warmup" || lrSchedule == "warmup-decay";
  bool cosine = lrSchedule == "warmup-cosine";
  struct Takes {
    const cl::Option *flag;
    bool taken;
  };
  for (Takes t : {Takes{&warmupMinLr, warmupLr}, Takes{&warmupMaxLr, warmupLr},
                  Takes{&warmupSteps, warmupLr || cosine}, Takes{&warmupType, warmupLr || cosine},
                  Takes{&totalSteps, lrSchedule == "warmup-decay" || cosine},
                  Takes{&cosMinRatio, cosine}, Takes{&warmupMinRatio, cosine}})
    if (given(*t.flag) && !t.taken)
      return zero::OptionProblem{
          t.flag->ArgStr.str(), "",
          lrSchedule == "constant"
              ? "goes with --lr-schedule: without a schedule the learning rate is --lr"
              : "is not a parameter of --lr-schedule=" + lrSchedule.getValue() + " (" +
                    (cosine ? "WarmupCosineLR" : lrSchedule == "warmup" ? "WarmupLR"
                                                                         : "WarmupDecayLR") +
                    " has none of that name in DeepSpeed)"};
  if (!(std::isfinite(warmupMinLr) && warmupMinLr >= 0))
    return number(warmupMinLr, warmupMinLr, "must be finite and >= 0 (a learning rate)");
  if (given(warmupMaxLr) && !(std::isfinite(warmupMaxLr) && warmupMaxLr >= 0))
    return number(warmupMaxLr, warmupMaxLr, "must be finite and >= 0 (a learning rate)");
  double maxLr = given(warmupMaxLr) ? (double)warmupMaxLr : optimizerLr;
  if (warmupLr && maxLr < warmupMinLr)
    return number(warmupMaxLr, maxLr,
                  "must be at least --warmup-min-lr (" +
                      zero::formatOptionValue(warmupMinLr) +
                      "): the warm-up rises from the minimum to it (default: --lr)");
  if (warmupSteps < 1)
    return count(warmupSteps, warmupSteps,
                 "must be >= 1 (DeepSpeed's schedulers refuse fewer warm-up steps)");
  if (totalSteps < 0 || ((lrSchedule == "warmup-decay" || cosine) && totalSteps < 1))
    return count(totalSteps, totalSteps,
                 "must be >= 1 with --lr-schedule=" + lrSchedule.getValue() +
                     " (the steps of the whole run)");
  for (const cl::opt<double> *r : {&cosMinRatio, &warmupMinRatio})
    if (!(*r >= 0 && *r <= 1))
      return number(*r, *r, "must be in [0, 1] (a ratio of --lr)");
  // Loss scaling, by DeepSpeed's DynamicLossScaler; fp16 only.
  for (const cl::Option *o :
       {(const cl::Option *)&lossScale, (const cl::Option *)&initialScalePower,
        (const cl::Option *)&lossScaleWindow, (const cl::Option *)&hysteresis,
        (const cl::Option *)&minLossScale})
    if (given(*o) && precision != "fp16")
      return zero::OptionProblem{o->ArgStr.str(), "",
                                 "goes with --precision=fp16 (fp32 and bf16 train "
                                 "without loss scaling)"};
  if (!(std::isfinite(lossScale) && lossScale >= 0))
    return number(lossScale, lossScale, "must be finite and >= 0 (0: dynamic)");
  if (initialScalePower < 0 || initialScalePower > 120)
    return count(initialScalePower, initialScalePower, "must be 0 to 120");
  if (lossScaleWindow < 1)
    return count(lossScaleWindow, lossScaleWindow, "must be >= 1");
  if (hysteresis < 1)
    return count(hysteresis, hysteresis, "must be >= 1");
  if (!(std::isfinite(minLossScale) && minLossScale > 0))
    return number(minLossScale, minLossScale, "must be finite and > 0");
  if (lossScale == 0 && minLossScale > std::ldexp(1.0, initialScalePower))
    return number(minLossScale, minLossScale,
                  "must be at most the first dynamic scale, 2^--initial-scale-power = " +
                      zero::formatOptionValue(std::ldexp(1.0, initialScalePower)));
  if (!(std::isfinite(maxMemoryGb) && maxMemoryGb >= 0))
    return number(maxMemoryGb, maxMemoryGb, "must be finite and >= 0 (GiB; 0: no budget)");
  if (stepsPerPrint < 0)
    return count(stepsPerPrint, stepsPerPrint, "must be >= 0");
  return std::nullopt;
}

/// Every value zero-opt was given, from its flags and a DeepSpeed config alike,
/// checked once, here: the pipeline's options by findOptionProblem, zero-opt's
/// own by findDriverProblem. The message names the flag, or the config key that
/// set it, and the rule with its range.
bool validateSettings(const zero::ZeroPipelineOptions &options) {
  std::optional<zero::OptionProblem> p = zero::findOptionProblem(options);
  if (!p)
    p = findDriverProblem(options.lr);
  if (!p)
    return true;
  auto origin = configOrigins.find(p->option);
  if (origin != configOrigins.end())
    llvm::errs() << "zero-opt: error: " << deepspeedConfig << ": '" << origin->second.key
                 << "' (" << origin->second.value << ", zero-opt's --" << p->option
                 << "): " << p->rule << "\n";
  else
    llvm::errs() << "zero-opt: error: --" << p->option
                 << (p->value.empty() ? " " : "=" + p->value + ": ") << p->rule << "\n";
  return false;
}

/// Reads --deepspeed and sets the flags it implies. The micro-batch it asks for
/// goes to `microBatch` (checked against the model once imported).
bool applyDeepSpeedConfig(std::optional<int64_t> &microBatch) {
  std::string error;
  zero::DeepSpeedConfig cfg;
  bool ok = zero::readDeepSpeedConfig(deepspeedConfig, worldSize, cfg, error);
  for (const std::string &w : cfg.warnings)
    llvm::errs() << "zero-opt: warning: " << deepspeedConfig << ": " << w << "\n";
  for (const std::string &n : cfg.notes)
    llvm::errs() << "zero-opt: note: " << deepspeedConfig << ": " << n << "\n";
  if (!ok) {
    llvm::errs() << "zero-opt: error: " << error << "\n";
    return false;
  }
  zero::DeepSpeedConfig *config = &cfg;
  for (const zero::ConfigFlag &f : config->flags)
    if (!applyConfigFlag(f.flag, f.value, f.key, config->batchRule))
      return false;
  // DeepSpeed counts bucket sizes in elements; zero-opt's flags are MiB of the
  // parameters' type.
  double bytes = precision == "fp32" ? 4.0 : 2.0;
  auto mib = [&](double elements) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", elements * bytes / (1024.0 * 1024.0));
    return std::string(buf);
  };
  if (config->reduceBucketElements &&
      !applyConfigFlag("bucket-size-mb", mib(*config->reduceBucketElements),
                       "zero_optimization.reduce_bucket_size"))
    return false;
  if (config->maxLiveElements &&
      !applyConfigFlag("max-live-mb", mib(*config->maxLiveElements),
                       "zero_optimization.stage3_max_live_parameters"))
    return false;
  if (config->prefetchElements) {
    // zero-opt prefetches whole buckets: as many as hold the elements asked for.
    double bucketElements = bucketSizeMb * 1024.0 * 1024.0 / bytes;
    int64_t buckets = std::max<int64_t>(
        1, (int64_t)std::ceil(*config->prefetchElements / bucketElements));
    if (!applyConfigFlag("prefetch-buckets", std::to_string(buckets),
                         "zero_optimization.stage3_prefetch_bucket_size"))
      return false;
  }
  microBatch = config->microBatch;
  return true;
}

/// The config's micro-batch must be the model's batch: the first dimension of
/// graph input 0.
bool checkMicroBatch(ModuleOp module, int64_t micro) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return true;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto index = func.getArgAttrOfType<IntegerAttr>(i, "compute.input");
    auto t = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!index || index.getInt() != 0 || !t || t.getRank() == 0)
      continue;
    if (t.getDimSize(0) != micro) {
      llvm::errs() << "zero-opt: error: " << deepspeedConfig
                   << ": train_micro_batch_size_per_gpu is " << micro
                   << ", but the model's batch (graph input 0) is " << t.getDimSize(0)
                   << " (export it with batch " << micro << ")\n";
      return false;
    }
  }
  return true;
}

/// --recompute as a --zero-recompute level (auto: none until a budget asks).
int64_t recomputeLevel() {
  return recompute == "cheap" ? 1 : recompute == "blocks" ? 2 : 0;
}

/// Compiles from the module's current level down to `level` and writes it.
LogicalResult compileAndEmit(ModuleOp module, StringRef level, StringRef input,
                             StringRef output) {
  bool isGraph = !module.getBody()->empty() &&
                 !isa<zero::plan::ProgramOp>(module.getBody()->front());
  std::optional<zero::MachineModel> m;
  if (report.getNumOccurrences() || autoTune) {
    std::string error;
    auto loaded = zero::loadMachineModel(machine, error);
    if (failed(loaded)) {
      llvm::errs() << "zero-opt: error: --machine: " << error << "\n";
      return failure();
    }
    m = *loaded;
  }
  zero::PlanSettings settings{recomputeLevel(), bucketSizeMb, prefetchBuckets};
  if (autoTune && isGraph && mode == "train" &&
      failed(chooseByCostModel(module, *m, settings)))
    return failure();
  // The memory budget: the cheapest settings whose plan fits.
  int64_t noRecomputePeak = -1;
  auto buildPlan = [&](PassManager &pm, const zero::PlanSettings &s) {
    buildPipeline(pm, true, "plan", s);
  };
  if (maxMemoryGb > 0 && isGraph && mode == "train") {
    SmallVector<int64_t> levels = {settings.recomputeLevel};
    if (recompute == "auto")
      levels = {0, 1, 2, 3, 4, 5, 6};
    // With --recompute=auto the budget may also keep the saved activations in
    // host memory, unless --offload-activations says where they go.
    bool mayOffload = recompute == "auto" && !offloadActivations.getNumOccurrences();
    auto choice = zero::fitMemoryBudget(module, (int64_t)(maxMemoryGb * 1073741824.0),
                                        settings, levels, mayOffload, zeroStage, buildPlan);
    if (failed(choice))
      return failure();
    settings = choice->settings;
    noRecomputePeak = choice->noRecomputePeak;
    llvm::errs() << llvm::format("zero-opt: --max-memory-gb=%g: peak %s per rank",
                                 (double)maxMemoryGb, zero::formatBytes(choice->peak).c_str());
    if (noRecomputePeak >= 0 && settings.recomputeLevel)
      llvm::errs() << " (" << zero::formatBytes(noRecomputePeak) << " without recomputation)";
    llvm::errs() << " with recompute level " << settings.recomputeLevel
                 << llvm::format(", --bucket-size-mb=%g", settings.bucketMb)
                 << ", --prefetch-buckets=" << settings.prefetch
                 << (settings.offloadActivations ? ", --offload-activations=cpu" : "") << "\n";
  }
  if (report.getNumOccurrences() && settings.recomputeLevel && noRecomputePeak < 0 &&
      isGraph && mode == "train") {
    zero::PlanSettings none = settings;
    none.recomputeLevel = 0;
    noRecomputePeak = zero::planPeak(module, none, buildPlan);
  }
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  buildPipeline(pm, isGraph, level, settings);
  if (failed(pm.run(module)))
    return failure();
  recordRuntimeSettings(module);
  if (report.getNumOccurrences()) {
    auto r = zero::computeZeroReport(module, zeroStage);
    if (failed(r))
      return failure();
    auto p = zero::predictStep(module, *m);
    if (failed(p))
      return failure();
    r->predicted = *p;
    r->machine = m->name;
    if (trainableSummary) {
      r->trainableTensors = trainableSummary->tensors;
      r->trainableElements = trainableSummary->elements;
      r->trainableSource = trainableSummary->source;
    }
    if (noRecomputePeak >= 0 && r->recomputeLevel)
      r->recomputeSavedBytes = noRecomputePeak - r->totalPeak;
    if (report == "json")
      zero::printReportJson(*r, llvm::outs());
    else
      zero::printReportTable(*r, llvm::outs());
    if (output == "-") // the report was what was asked for
      return success();
  }
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  if (level == "zplan") {
    if (failed(zero::exportZplan(module, os, input)))
      return failure();
  } else {
    module.print(os);
    os << "\n";
  }
  if (output == "-") {
    llvm::outs() << bytes;
    return success();
  }
  // Whole or not at all: a failed write leaves the previous plan as it was.
  std::string error;
  if (!zrt::writeFileAtomically(output.str(), bytes, error)) {
    llvm::errs() << "zero-opt: error: " << error << "\n";
    return failure();
  }
  return success();
}

/// One option of `zero-opt --help`: its flag in a column, its description wrapped
/// beside it, every line within 100 columns (LLVM's own printer puts a
/// description on one line, however long).
void printOptionHelp(StringRef flag, StringRef description) {
  const size_t kColumn = 30, kWidth = 100;
  std::string line = "  " + flag.str();
  if (line.size() + 1 > kColumn) {
    llvm::outs() << line << "\n";
    line.clear();
  }
  line.resize(kColumn, ' ');
  size_t start = line.size();
  SmallVector<StringRef> words;
  description.split(words, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef w : words) {
    if (line.size() > start && line.size() + 1 + w.size() > kWidth) {
      llvm::outs() << line << "\n";
      line.assign(kColumn, ' ');
    }
    if (line.size() > start)
      line += ' ';
    line += w.str();
  }
  llvm::outs() << line << "\n";
}

/// `zero-opt --help`: zero-opt's own options by group, in a screen or two.
/// (`--help-hidden` is LLVM's full list: every LLVM and MLIR option and pass.)
void printHelp() {
  llvm::outs()
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
    llvm::outs() << "\n" << order[g]->getName() << ":\n";
    if (order[g] == &outputCategory)
      printOptionHelp("-o FILE", "Output file: a .zplan plan, or IR for --emit "
                                 "(default: stdout)");
    for (cl::Option *o : groups[g]) {
      std::string flag = "--" + o->ArgStr.str();
      if (o->getValueExpectedFlag() != cl::ValueDisallowed && !o->ValueStr.empty() &&
          o->ValueStr != "bool")
        flag += "=<" + o->ValueStr.str() + ">";
      printOptionHelp(flag, o->HelpStr);
    }
  }
  llvm::outs() << "\nEvery LLVM and MLIR option (passes for .mlir input, --mlir-*): "
                  "--help-hidden\n";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  for (int i = 1; i < argc; ++i) {
    StringRef a(argv[i]);
    if (a == "--help" || a == "-help" || a == "-h") {
      printHelp();
      return 0;
    }
    if (a == "--list-onnx-ops") {
      for (const auto &[op, versions] : zero::supportedOnnxOps()) {
        llvm::outs() << op;
        for (int v : versions)
          llvm::outs() << " " << v;
        llvm::outs() << "\n";
      }
      return 0;
    }
  }
  DialectRegistry registry;
  zero::registerAllDialects(registry);
  zero::registerAllPasses();
  auto [inputFile, outputFile] =
      registerAndParseCLIOptions(argc, argv, "zero-opt: ZeRO training compiler\n",
                                 registry);

  if (!isOnnx(inputFile) && emitLevel.empty() && !report.getNumOccurrences())
    return asMainReturnCode(MlirOptMain(argc, argv, inputFile, outputFile, registry));

  std::string level = emitLevel;
  if (level.empty())
    level = StringRef(outputFile).ends_with(".zplan") ? "zplan"
            : report.getNumOccurrences()              ? "plan"
                                                      : "graph";
  if (report.getNumOccurrences() && report != "" && report != "table" &&
      report != "json") {
    llvm::errs() << "zero-opt: error: --report=" << report
                 << " is not one of table, json\n";
    return 1;
  }
  if (report.getNumOccurrences() && level != "plan" && level != "zplan") {
    llvm::errs() << "zero-opt: error: --report needs the plan: it cannot go with "
                    "--emit="
                 << level << "\n";
    return 1;
  }
  if (level != "graph" && level != "step" && level != "plan" && level != "zplan") {
    llvm::errs() << "zero-opt: error: --emit=" << level
                 << " is not one of graph, step, plan, zplan\n";
    return 1;
  }
  std::optional<int64_t> configMicroBatch;
  if (!deepspeedConfig.empty() && !applyDeepSpeedConfig(configMicroBatch))
    return 1;
  {
    zero::ZeroPipelineOptions options;
    pipelineOptions(options, level, {recomputeLevel(), bucketSizeMb, prefetchBuckets});
    if (!validateSettings(options))
      return 1;
  }
  if (level == "zplan" && outputFile == "-") {
    llvm::errs() << "zero-opt: error: a plan file is binary; name it with -o\n";
    return 1;
  }

  if (outputFile != "-") {
    std::string why = zrt::whyNotWritable(outputFile, "-o");
    if (!why.empty()) {
      llvm::errs() << "zero-opt: error: " << why << "\n";
      return 1;
    }
  }

  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module;
  if (isOnnx(inputFile)) {
    ScopedDiagnosticHandler handler(&context, printDiagnostic);
    zero::OnnxImportOptions options;
    if (failed(parseInputShapes(options)))
      return 1;
    options.batch = configMicroBatch; // pins a symbolic batch; a fixed one is checked
    options.fuseAttention = !noAttentionFusion;
    module = zero::importOnnxModel(context, inputFile, options);
    if (!module)
      return 1;
    if (mode != "inference" && level != "graph")
      noteTrainableSet(*module, inputFile);
    if (configMicroBatch && !checkMicroBatch(*module, *configMicroBatch))
      return 1;
    if (failed(compileAndEmit(*module, level, inputFile, outputFile)))
      return 1;
    return 0;
  }
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  module = parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module || failed(compileAndEmit(*module, level, inputFile, outputFile)))
    return 1;
  return 0;
}
