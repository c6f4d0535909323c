//===- TorchNames.cpp - PyTorch's names for a model's initializers --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/TorchNames.h"
#include "zrt/OnnxTypes.h"

#include <cstring>

using namespace zrt;

namespace {

constexpr const char *kSignatureKey = "pkg.torch.export.ExportedProgram.graph_signature";
constexpr const char *kFoldedFromKey = "pkg.onnxscript.optimizer.folded_from";
constexpr const char *kParameter = ": PARAMETER ";

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool isFloat(const onnx::TensorProto &t) { return isFloatOnnxType(t.data_type()); }

} // namespace

std::optional<std::vector<std::string>>
zrt::signatureParameters(const onnx::ModelProto &model, std::string &error) {
  auto placeholders = signaturePlaceholders(model, error);
  if (!placeholders)
    return std::nullopt;
  std::vector<std::string> params;
  for (const auto &[placeholder, target] : *placeholders)
    params.push_back(target);
  return params;
}

std::optional<std::vector<std::pair<std::string, std::string>>>
zrt::signaturePlaceholders(const onnx::ModelProto &model, std::string &error) {
  const std::string *text = nullptr;
  for (const auto &kv : metadataOf(model.graph()))
    if (kv.key() == kSignatureKey)
      text = &kv.value();
  for (const auto &kv : model.metadata_props())
    if (kv.key() == kSignatureKey)
      text = &kv.value();
  if (!text)
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> params;
  size_t start = 0;
  while (start <= text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos)
      end = text->size();
    std::string line = trim(text->substr(start, end - start));
    start = end + 1;
    size_t kind = line.find(kParameter);
    if (kind == std::string::npos)
      continue;
    std::string rest = line.substr(kind + std::strlen(kParameter));
    const std::string prefix = "target='";
    if (rest.compare(0, prefix.size(), prefix) != 0 || rest.size() <= prefix.size() + 1 ||
        rest.back() != '\'') {
      error = "metadata '" + std::string(kSignatureKey) +
              "' has a PARAMETER line that is not \"NAME: PARAMETER target='TARGET'\": '" +
              line + "'";
      return std::nullopt;
    }
    params.emplace_back(trim(line.substr(0, line.find(':'))),
                        rest.substr(prefix.size(), rest.size() - prefix.size() - 1));
  }
  return params;
}

std::vector<std::string> zrt::foldedFrom(const onnx::ModelProto &model,
                                         const onnx::TensorProto &t) {
  const std::string *text = nullptr;
  for (const auto &kv : metadataOf(t))
    if (kv.key() == kFoldedFromKey)
      text = &kv.value();
  for (const auto &v : model.graph().value_info())
    if (v.name() == t.name())
      for (const auto &kv : metadataOf(v))
        if (kv.key() == kFoldedFromKey)
          text = &kv.value();
  std::vector<std::string> names;
  if (!text)
    return names;
  // A Python list of strings: ['a', 'b'].
  std::string list = trim(*text);
  if (list.size() < 2 || list.front() != '[' || list.back() != ']')
    return names;
  list = list.substr(1, list.size() - 2);
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos)
      end = list.size();
    std::string part = trim(list.substr(start, end - start));
    start = end + 1;
    if (part.size() >= 2 && (part.front() == '\'' || part.front() == '"'))
      names.push_back(part.substr(1, part.size() - 2));
  }
  return names;
}

std::string zrt::readInstead(const onnx::ModelProto &model, const std::string &param,
                             const std::set<std::string> &candidates) {
  size_t dot = param.rfind('.');
  if (dot == std::string::npos)
    return "";
  std::string module = "'" + param.substr(0, dot) + "'", own = param.substr(0, dot + 1);
  for (const auto &node : model.graph().node())
    for (const auto &kv : metadataOf(node)) {
      if (kv.key() != "pkg.torch.onnx.name_scopes" ||
          kv.value().find(module) == std::string::npos)
        continue;
      for (const std::string &in : node.input())
        if (candidates.count(in) && in.compare(0, own.size(), own) != 0)
          return in;
    }
  return "";
}

TorchNameMap zrt::torchNames(const onnx::ModelProto &model) {
  TorchNameMap map;
  std::set<std::string> floats;
  for (const auto &t : model.graph().initializer())
    if (isFloat(t)) {
      floats.insert(t.name());
      map.names[t.name()].push_back({t.name(), false});
    }
  std::string error;
  auto params = signatureParameters(model, error);
  if (!params)
    return map;
  map.hasSignature = true;
  std::set<std::string> parameters(params->begin(), params->end()), seen;
  for (const auto &t : model.graph().initializer()) {
    if (!floats.count(t.name()))
      continue;
    if (parameters.count(t.name())) {
      seen.insert(t.name());
      map.parameters.insert(t.name());
      map.ownNameIsTorch.insert(t.name());
      continue;
    }
    std::vector<std::string> sources;
    for (const std::string &name : foldedFrom(model, t))
      if (parameters.count(name))
        sources.push_back(name);
    if (sources.size() != 1)
      continue;
    seen.insert(sources[0]);
    map.parameters.insert(t.name());
    if (t.dims_size() == 2)
      map.names[t.name()].push_back({sources[0], true});
    else
      map.unmapped[t.name()] = "folded from parameter '" + sources[0] +
                               "' by an operation other than a transpose";
  }
  for (const std::string &p : *params) {
    if (seen.count(p))
      continue;
    std::string holder = readInstead(model, p, parameters);
    if (!holder.empty())
      map.names[holder].push_back({p, false});
  }
  return map;
}
