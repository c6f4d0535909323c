//===- CompileSession.cpp - One zero-opt compilation ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/CompileSession.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Driver/OptionSettings.h"
#include "zero/Driver/MemoryBudget.h"

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
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include <cmath>
#include <map>
#include <optional>
#include <type_traits>

using namespace mlir;
using namespace zero;

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

} // namespace

bool zero::isOnnxFile(StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtxt");
}

namespace {

LogicalResult parseInputShapes(const CompileOptions &o, zero::OnnxImportOptions &options) {
  for (const std::string &spec : o.inputShapes) {
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
  for (const std::string &spec : o.constantInputs) {
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

/// The passes from the imported graph (or the module's level) down to `level`, as
/// zero-opt's flags choose them.
void buildPipeline(const CompileOptions &o, PassManager &pm, bool isGraph, StringRef level,
                   const zero::PlanSettings &s) {
  if (!isGraph)
    return; // a module already at the plan level is written as it is
  zero::ZeroPipelineOptions p;
  zero::pipelineOptionsFrom(o, p, level, s);
  zero::buildZeroPipeline(pm, p);
}

/// What trains, counted on the imported graph (after --freeze), for --report.
struct TrainableSummary {
  int64_t tensors = 0, elements = 0;
  std::string source;
};

/// Counts the trainable set and where it came from (the importer's
/// compute.trainable_source). A model whose set is every float initializer
/// (buffers included: PyTorch's older exporter writes rotary tables and masks as
/// initializers too) gets one line that says so, and how many.
std::optional<TrainableSummary> noteTrainableSet(const CompileOptions &o, ModuleOp module,
                                                StringRef input) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return std::nullopt;
  llvm::Regex frozen(o.freeze);
  TrainableSummary summary;
  if (auto source = func->getAttrOfType<StringAttr>(compute::attr::kTrainableSource))
    summary.source = source.str();
  int64_t all = 0;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    all += !zero::trainedParameterName(func, i, nullptr).empty();
    if (zero::trainedParameterName(func, i, o.freeze.empty() ? nullptr : &frozen).empty())
      continue;
    ++summary.tensors;
    summary.elements +=
        cast<RankedTensorType>(func.getArgument(i).getType()).getNumElements();
  }
  if (func->hasAttr(compute::attr::kTrainableListed))
    return summary;
  llvm::errs() << input << ": note: no zero.trainable metadata and no torch.export "
               << "graph signature: training every float initializer ("
               << summary.tensors << " of " << all
               << (o.freeze.empty() ? "" : " after --freeze")
               << "); utils/zero_export.py exports a model with the entry\n";
  return summary;
}

/// The shard group sizes --auto-tune tries besides the flag's: around the
/// machine's ranks per node (a group inside a node keeps the gathers and
/// reduce-scatters off the network), when the world spans nodes, the step shards
/// (stages 1-3, no offload: what hybrid sharding supports) and
/// --zero-shard-group-size was not given.
SmallVector<int64_t> shardGroupCandidates(const CompileOptions &o, const zero::MachineModel &m) {
  SmallVector<int64_t> sizes;
  int64_t n = o.worldSize, p = m.ranksPerNode;
  if (o.shardGroupSize.given || o.mode != "train" || o.zeroStage == 0 ||
      o.offloadOptimizer != "none" || o.offloadParam != "none" || p >= n)
    return sizes;
  for (int64_t g : {p / 2, p, 2 * p})
    if (g >= 1 && g < n && n % g == 0)
      sizes.push_back(g);
  return sizes;
}

/// Compiles clones of the module for bucket sizes and prefetch depths (those not
/// given as flags) and predicts each one's step, flat and, estimated from that
/// plan, with each shard group size (shardGroupCandidates; predictStep's
/// asShardGroupSize); keeps the fastest whose gathered buckets fit --max-live-mb
/// (the fastest of all when none does: the limit is soft).
/// Estimating instead of compiling each group size keeps a model of GPT-3's size
/// to one compilation per bucket candidate.
LogicalResult chooseByCostModel(const CompileOptions &o, ModuleOp module,
                                const zero::MachineModel &m, zero::PlanSettings &settings) {
  SmallVector<int64_t> groups = shardGroupCandidates(o, m);
  double best = -1, bestFlat = -1;
  std::optional<bool> bestOver;
  int tried = 0;
  // The winner's flat step and group estimates, for the user.
  SmallVector<std::pair<int64_t, double>> estimates;
  auto consider = [&](const zero::PlanSettings &s) {
    OwningOpRef<ModuleOp> clone = module.clone();
    PassManager pm(module.getContext());
    buildPipeline(o, pm, true, "plan", s);
    // A candidate that does not fit is skipped, silently: the others may.
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(pm.run(*clone)))
      return;
    auto flat = zero::predictStep(*clone, m);
    if (failed(flat))
      return;
    ++tried;
    // The live-parameter limit is soft (a larger bucket is gathered alone):
    // candidates whose buckets all fit it come first.
    bool over = false;
    if (o.maxLiveMb > 0)
      if (auto r = zero::computeZeroReport(*clone, o.zeroStage); succeeded(r)) {
        r->liveLimitBytes = (int64_t)(o.maxLiveMb * 1024 * 1024);
        over = r->stage == 3 && r->bucketsOverLiveLimit() > 0;
      }
    if (bestOver.has_value() && over && !*bestOver)
      return;
    if (bestOver.has_value() && !over && *bestOver)
      best = -1; // the first that fits beats every one that does not
    SmallVector<std::pair<int64_t, double>> mine = {{0, flat->stepS}};
    for (int64_t g : groups)
      if (auto p = zero::predictStep(*clone, m, g); succeeded(p)) {
        ++tried;
        mine.push_back({g, p->stepS});
      }
    for (auto [g, t] : mine)
      if (best < 0 || t < best) {
        best = t;
        bestOver = over;
        bestFlat = flat->stepS;
        settings = s;
        settings.shardGroupSize = g;
        estimates = mine;
      }
  };
  SmallVector<double> bucketSizes = {1.0, 5.0, 25.0, 100.0};
  SmallVector<int64_t> depths = {1, 2, 4, 8};
  if (o.bucketSizeMb.given)
    bucketSizes = {(double)o.bucketSizeMb};
  if (o.prefetchBuckets.given)
    depths = {(int64_t)o.prefetchBuckets};
  zero::PlanSettings base = settings;
  for (double b : bucketSizes)
    for (int64_t k : depths) {
      zero::PlanSettings s = base;
      s.bucketMb = b;
      s.prefetch = k;
      consider(s);
    }
  if (best < 0) {
    llvm::errs() << "zero-opt: error: --auto-tune: no candidate bucket size and prefetch "
                    "depth compiled\n";
    return failure();
  }
  if (bestOver.value_or(false))
    llvm::errs() << "zero-opt: note: --auto-tune: every candidate gathers a bucket over "
                    "--max-live-mb="
                 << o.maxLiveMb << " (a soft limit: each such bucket is gathered alone)\n";
  if (!std::isfinite(best)) {
    llvm::errs() << "zero-opt: error: --auto-tune: the machine's figures predict no finite "
                    "step for any candidate; nothing to choose from\n";
    return failure();
  }
  for (auto [g, t] : estimates)
    if (g)
      llvm::errs() << "zero-opt: auto-tune: --zero-shard-group-size=" << g
                   << llvm::format(" estimated at %.3f ms per step (flat: %.3f ms)\n",
                                   t * 1e3, bestFlat * 1e3);
  llvm::errs() << "zero-opt: auto-tune on " << m.name
               << ": --bucket-size-mb=" << llvm::format("%g", settings.bucketMb)
               << " --prefetch-buckets=" << settings.prefetch;
  if (settings.shardGroupSize > 0)
    llvm::errs() << " --zero-shard-group-size=" << settings.shardGroupSize;
  llvm::errs() << " (predicted step " << llvm::format("%.3f", best * 1e3) << " ms"
               << (settings.shardGroupSize > 0 ? ", estimated from the flat plan" : "")
               << ", best of " << tried << " candidates)\n";
  return success();
}

/// The settings zero-run needs (the loss scaler's, the learning-rate schedule's,
/// how often to print), on the module for the plan writer.
void recordRuntimeSettings(const CompileOptions &o, ModuleOp module) {
  if (o.mode != "train")
    return;
  Builder b(module.getContext());
  if (o.stepsPerPrint > 0)
    module->setAttr(zops::attr::kPrintEvery, b.getI64IntegerAttr(o.stepsPerPrint));
  if (o.wallClockBreakdown)
    module->setAttr(zops::attr::kProfile, b.getUnitAttr());
  if (o.lrSchedule != "constant")
    module->setAttr(
        zops::attr::kLrSchedule,
        b.getDictionaryAttr(
            {b.getNamedAttr("kind", b.getStringAttr(o.lrSchedule)),
             b.getNamedAttr("min_lr", b.getF64FloatAttr(o.warmupMinLr)),
             b.getNamedAttr("max_lr",
                            b.getF64FloatAttr(o.warmupMaxLr < 0 ? (double)o.lr : o.warmupMaxLr)),
             b.getNamedAttr("warmup_steps", b.getF64FloatAttr((double)o.warmupSteps)),
             b.getNamedAttr("warmup_type", b.getStringAttr(o.warmupType)),
             b.getNamedAttr("total_steps", b.getF64FloatAttr((double)o.totalSteps)),
             b.getNamedAttr("base_lr", b.getF64FloatAttr(o.lr)),
             b.getNamedAttr("cos_min_ratio", b.getF64FloatAttr(o.cosMinRatio)),
             b.getNamedAttr("warmup_min_ratio", b.getF64FloatAttr(o.warmupMinRatio))}));
  if (o.precision == "fp32")
    return;
  module->setAttr(zops::attr::kPrecision, b.getStringAttr(o.precision));
  if (o.precision != "fp16")
    return;
  module->setAttr(zops::attr::kLossScaling,
                  b.getDictionaryAttr(
                      {b.getNamedAttr("scale", b.getF64FloatAttr(o.lossScale)),
                       b.getNamedAttr("initial_scale_power",
                                      b.getF64FloatAttr(o.initialScalePower)),
                       b.getNamedAttr("window", b.getF64FloatAttr(o.lossScaleWindow)),
                       b.getNamedAttr("hysteresis", b.getF64FloatAttr(o.hysteresis)),
                       b.getNamedAttr("min_scale", b.getF64FloatAttr(o.minLossScale))}));
}

/// The config's micro-batch must be the model's batch: the first dimension of
/// graph input 0.
bool checkMicroBatch(const CompileOptions &o, ModuleOp module, int64_t micro) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return true;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto index = func.getArgAttrOfType<IntegerAttr>(i, compute::attr::kInput);
    auto t = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!index || index.getInt() != 0 || !t || t.getRank() == 0)
      continue;
    if (t.getDimSize(0) != micro) {
      llvm::errs() << "zero-opt: error: " << o.deepspeedConfig
                   << ": train_micro_batch_size_per_gpu is " << micro
                   << ", but the model's batch (graph input 0) is " << t.getDimSize(0)
                   << " (export it with batch " << micro << ")\n";
      return false;
    }
  }
  return true;
}

/// Compiles from the module's current level down to `level` and writes it.
LogicalResult compileAndEmit(const CompileOptions &o, ModuleOp module, StringRef level,
                             StringRef input, StringRef output,
                             const std::optional<TrainableSummary> &trainableSummary,
                             const PassManagerSetup &setupPassManager) {
  bool isGraph = !module.getBody()->empty() &&
                 !isa<zero::plan::ProgramOp>(module.getBody()->front());
  std::optional<zero::MachineModel> m;
  if (o.report.given || o.autoTune) {
    std::string error;
    auto loaded = zero::loadMachineModel(o.machine, error);
    if (failed(loaded)) {
      llvm::errs() << "zero-opt: error: --machine: " << error << "\n";
      return failure();
    }
    m = *loaded;
  }
  zero::PlanSettings settings{zero::recomputeLevelOf(o), o.bucketSizeMb, o.prefetchBuckets};
  if (o.autoTune && isGraph && o.mode == "train" &&
      failed(chooseByCostModel(o, module, *m, settings)))
    return failure();
  // The memory budget: the cheapest settings whose plan fits.
  int64_t noRecomputePeak = -1;
  auto buildPlan = [&](PassManager &pm, const zero::PlanSettings &s) {
    buildPipeline(o, pm, true, "plan", s);
  };
  if (o.maxMemoryGb > 0 && isGraph && o.mode == "train") {
    SmallVector<int64_t> levels = {settings.recomputeLevel};
    if (o.recompute == "auto")
      levels = {0, 1, 2, 3, 4, 5, 6};
    // With --recompute=auto the budget may also keep the saved activations in
    // host memory, unless --offload-activations says where they go.
    bool mayOffload = o.recompute == "auto" && !o.offloadActivations.given;
    auto choice = zero::fitMemoryBudget(module, (int64_t)(o.maxMemoryGb * 1073741824.0),
                                        settings, levels, mayOffload, o.zeroStage, buildPlan);
    if (failed(choice))
      return failure();
    settings = choice->settings;
    noRecomputePeak = choice->noRecomputePeak;
    llvm::errs() << llvm::format("zero-opt: --max-memory-gb=%g: peak %s per rank",
                                 (double)o.maxMemoryGb, zero::formatBytes(choice->peak).c_str());
    if (noRecomputePeak >= 0 && settings.recomputeLevel)
      llvm::errs() << " (" << zero::formatBytes(noRecomputePeak) << " without recomputation)";
    llvm::errs() << " with recompute level " << settings.recomputeLevel
                 << llvm::format(", --bucket-size-mb=%g", settings.bucketMb)
                 << ", --prefetch-buckets=" << settings.prefetch
                 << (settings.offloadActivations ? ", --offload-activations=cpu" : "") << "\n";
  }
  if (o.report.given && settings.recomputeLevel && noRecomputePeak < 0 &&
      isGraph && o.mode == "train") {
    zero::PlanSettings none = settings;
    none.recomputeLevel = 0;
    noRecomputePeak = zero::planPeak(module, none, buildPlan);
  }
  PassManager pm(module.getContext());
  if (setupPassManager && failed(setupPassManager(pm)))
    return failure();
  buildPipeline(o, pm, isGraph, level, settings);
  if (failed(pm.run(module)))
    return failure();
  recordRuntimeSettings(o, module);
  if (o.report.given) {
    auto r = zero::computeZeroReport(module, o.zeroStage);
    if (failed(r))
      return failure();
    auto p = zero::predictStep(module, *m);
    if (failed(p))
      return failure();
    r->predicted = *p;
    r->machine = m->name;
    r->liveLimitBytes = (int64_t)(o.maxLiveMb * 1024 * 1024);
    if (trainableSummary) {
      r->trainableTensors = trainableSummary->tensors;
      r->trainableElements = trainableSummary->elements;
      r->trainableSource = trainableSummary->source;
    }
    if (noRecomputePeak >= 0 && r->recomputeLevel)
      r->recomputeSavedBytes = noRecomputePeak - r->totalPeak;
    if (o.report == "json") {
      // Printed whole or not at all: a number JSON cannot hold is an error.
      std::string text;
      llvm::raw_string_ostream json(text);
      if (std::string why = zero::printReportJson(*r, json); !why.empty()) {
        llvm::errs() << "zero-opt: error: " << why << "\n";
        return failure();
      }
      llvm::outs() << text;
    } else
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

} // namespace

zero::CompileSession::CompileSession(CompileOptions options, DialectRegistry &registry,
                                     PassManagerSetup setupPassManager)
    : options(std::move(options)), registry(registry),
      setupPassManager(std::move(setupPassManager)) {}

int zero::CompileSession::run(StringRef input, StringRef output) {
  CompileOptions &o = options;
  std::string inputFile = input.str(), outputFile = output.str();
  std::string level = o.emitLevel;
  if (level.empty())
    level = StringRef(outputFile).ends_with(".zplan") ? "zplan"
            : o.report.given              ? "plan"
                                                      : "graph";
  if (o.report.given && o.report != "" && o.report != "table" &&
      o.report != "json") {
    llvm::errs() << "zero-opt: error: --report=" << o.report
                 << " is not one of table, json\n";
    return 1;
  }
  if (o.report.given && level != "plan" && level != "zplan") {
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
  if (!o.deepspeedConfig.empty() && !zero::applyDeepSpeedConfig(o, configMicroBatch))
    return 1;
  {
    zero::ZeroPipelineOptions options;
    zero::pipelineOptionsFrom(o, options, level,
                              {zero::recomputeLevelOf(o), o.bucketSizeMb, o.prefetchBuckets});
    if (!zero::validateSettings(o, options))
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
  std::optional<TrainableSummary> trainable;
  if (zero::isOnnxFile(inputFile)) {
    ScopedDiagnosticHandler handler(&context, printDiagnostic);
    zero::OnnxImportOptions options;
    if (failed(parseInputShapes(o, options)))
      return 1;
    options.batch = configMicroBatch; // pins a symbolic batch; a fixed one is checked
    options.fuseAttention = !o.noAttentionFusion;
    module = zero::importOnnxModel(context, inputFile, options);
    if (!module)
      return 1;
    if (o.mode != "inference" && level != "graph")
      trainable = noteTrainableSet(o, *module, inputFile);
    if (configMicroBatch && !checkMicroBatch(o, *module, *configMicroBatch))
      return 1;
    if (failed(compileAndEmit(o, *module, level, inputFile, outputFile, trainable,
                              setupPassManager)))
      return 1;
    return 0;
  }
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  module = parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module || failed(compileAndEmit(o, *module, level, inputFile, outputFile, trainable,
                                       setupPassManager)))
    return 1;
  return 0;
}
