//===- TrainableSet.cpp - Which initializers train ------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// PyTorch trains parameters; buffers and constants stay as they are. The ONNX
// exporter built on torch.export records which inputs were parameters in the
// metadata entry `pkg.torch.export.ExportedProgram.graph_signature` (lines
// "p_x: PARAMETER target='x'"), lifts every other constant to an initializer
// (`val_N`: 0.0, GELU's coefficients, the float minimum) and folds
// parameter-only subgraphs (a Linear's transposed weight, the position rows of an
// embedding) into new initializers whose value metadata
// `pkg.onnxscript.optimizer.folded_from` lists what they came from. Reading that
// metadata is zrt/TorchNames.h's, shared with zero-run's weights by name.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"
#include "zrt/MergedParameters.h"
#include "zrt/OnnxTypes.h"
#include "zrt/TorchNames.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace zero::onnx_import;

namespace {

bool isFloatInitializer(const onnx::TensorProto &t) {
  return zrt::isFloatOnnxType(t.data_type());
}

/// The `zero.trainable` entry: exactly the initializers to train.
FailureOr<std::optional<std::set<std::string>>>
listedSet(Location loc, const onnx::ModelProto &model) {
  const onnx::StringStringEntryProto *entry = nullptr;
  for (const auto &kv : model.metadata_props()) {
    if (kv.key() != "zero.trainable")
      continue;
    if (entry)
      return emitError(loc) << "metadata 'zero.trainable' appears twice", failure();
    entry = &kv;
  }
  if (!entry)
    return std::optional<std::set<std::string>>();
  auto bad = [&](StringRef why) {
    return emitError(loc) << "metadata 'zero.trainable' must be a JSON array of "
                             "initializer names: "
                          << why,
           failure();
  };
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(entry->value());
  if (!json)
    return bad(llvm::toString(json.takeError()));
  const llvm::json::Array *names = json->getAsArray();
  if (!names)
    return bad("it is not an array");
  std::map<std::string, const onnx::TensorProto *> inits;
  for (const auto &t : model.graph().initializer())
    inits[t.name()] = &t;
  std::set<std::string> trainable;
  for (const llvm::json::Value &v : *names) {
    std::optional<StringRef> name = v.getAsString();
    if (!name)
      return bad("an element is not a string");
    auto it = inits.find(name->str());
    if (it == inits.end() || !isFloatInitializer(*it->second))
      return emitError(loc) << "metadata 'zero.trainable' names '" << *name << "', "
                            << (it == inits.end()
                                    ? "which is not an initializer of the model"
                                    : "which is not a float initializer"),
             failure();
    trainable.insert(name->str());
  }
  return std::optional<std::set<std::string>>(std::move(trainable));
}

} // namespace

FailureOr<TrainableSet> zero::onnx_import::findTrainableSet(MLIRContext &ctx,
                                                            StringRef path,
                                                            const onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  TrainableSet set;
  auto listed = listedSet(loc, model);
  if (failed(listed))
    return failure();
  if (*listed) {
    set.source = TrainableSet::kListed;
    set.names = std::move(**listed);
    return set;
  }
  std::string error;
  std::optional<std::vector<std::string>> params = zrt::signatureParameters(model, error);
  if (!error.empty())
    return emitError(loc) << error, failure();
  if (!params) {
    for (const auto &t : model.graph().initializer())
      if (isFloatInitializer(t))
        set.names.insert(t.name());
    return set;
  }
  set.source = TrainableSet::kExporter;
  std::set<std::string> parameters(params->begin(), params->end()), seen;
  for (const auto &t : model.graph().initializer()) {
    if (!isFloatInitializer(t))
      continue;
    if (parameters.count(t.name())) {
      set.names.insert(t.name());
      seen.insert(t.name());
      continue;
    }
    // Folded from exactly one parameter (and constants): it trains in the
    // parameter's place. Folded from several: it mixes parameters, which no
    // single tensor stands for.
    std::vector<std::string> sources;
    for (const std::string &name : zrt::foldedFrom(model, t))
      if (parameters.count(name))
        sources.push_back(name);
    if (sources.size() > 1)
      return emitError(loc) << "initializer '" << t.name()
                            << "' was folded by the exporter from several parameters ("
                            << llvm::join(sources, ", ")
                            << "); export with optimize=False to keep them apart",
             failure();
    if (sources.size() == 1) {
      set.names.insert(t.name());
      set.derivedFrom[t.name()] = sources[0];
      seen.insert(sources[0]);
    }
  }
  std::map<std::string, std::string> placeholderOf;
  if (auto pairs = zrt::signaturePlaceholders(model, error))
    for (const auto &[placeholder, target] : *pairs)
      placeholderOf[target] = placeholder;
  for (const std::string &p : *params) {
    if (seen.count(p))
      continue;
    std::string replacement = zrt::readInstead(model, p, set.names);
    // A tied weight: torch.export reads it through the other parameter's
    // placeholder, and PyTorch trains one tensor for both, as here.
    if (!replacement.empty() && !zrt::fxGraphReads(model, placeholderOf[p]))
      continue;
    InFlightDiagnostic w = emitWarning(loc);
    w << "parameter '" << p << "' (torch.export's graph signature) is not in the ONNX "
                               "graph; ";
    if (!replacement.empty())
      w << "nodes of its module read '" << replacement
        << "', another module's, which trains as one tensor for both: right for tied weights "
           "(an embedding shared with the output layer), wrong where the exporter's "
           "optimizer merged parameters because their values were equal";
    else
      w << "it does not train: the forward pass does not use it, or the exporter's "
           "optimizer dropped it as an all-zero bias";
    w << " (freshly initialized models have such values: export trained or "
         "randomized weights, or with optimize=False)";
  }
  return set;
}
