//===- MergedParameters.cpp - Parameters the exporter merged by value -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/MergedParameters.h"
#include "zrt/OnnxTypes.h"
#include "zrt/TorchNames.h"

#include <cctype>
#include <set>
#include <vector>

using namespace zrt;

namespace {

const char *const kFxNodeKey = "pkg.torch.onnx.fx_node";

/// The placeholders ("p_x") FX node text `fx` reads: each "%p_x" followed by a
/// character that cannot continue a name.
bool readsPlaceholder(const std::string &fx, const std::string &placeholder) {
  std::string token = "%" + placeholder;
  for (size_t at = fx.find(token); at != std::string::npos; at = fx.find(token, at + 1)) {
    size_t end = at + token.size();
    if (end == fx.size() || !(std::isalnum((unsigned char)fx[end]) || fx[end] == '_'))
      return true;
  }
  return false;
}

/// The arguments of FX node text `fx` ("... args = (%a, %p_b, [64]), kwargs ..."),
/// split at top-level commas.
std::vector<std::string> fxArgs(const std::string &fx) {
  std::vector<std::string> args;
  size_t at = fx.find("args = (");
  if (at == std::string::npos)
    return args;
  int depth = 0;
  std::string cur;
  for (size_t i = at + 8; i < fx.size(); ++i) {
    char c = fx[i];
    if (depth == 0 && (c == ',' || c == ')')) {
      size_t b = cur.find_first_not_of(' ');
      args.push_back(b == std::string::npos ? "" : cur.substr(b));
      cur.clear();
      if (c == ')')
        break;
      continue;
    }
    depth += (c == '[' || c == '(') - (c == ']' || c == ')');
    cur += c;
  }
  return args;
}

/// "weight" of "h.0.ln_1.weight".
std::string lastComponent(const std::string &name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

/// A zero bias of a Linear (aten.addmm as GPT-2's Conv1D writes it; ONNX Gemm)
/// that the exporter's optimizer dropped (adding zero changes nothing, so Gemm
/// lost its C): the parameter gets a zero initializer of its shape back, and the
/// Gemm its C. Recorded in `merged` as "" (no initializer held it).
void restoreDroppedBiases(onnx::ModelProto &model,
                          const std::vector<std::pair<std::string, std::string>> &placeholders,
                          std::map<std::string, std::string> &merged) {
  auto *graph = model.mutable_graph();
  std::map<std::string, const onnx::TensorProto *> inits;
  for (const auto &t : graph->initializer())
    inits[t.name()] = &t;
  std::map<std::string, std::string> targetOf(placeholders.begin(), placeholders.end());
  std::vector<onnx::TensorProto> zeros;
  for (auto &node : *graph->mutable_node()) {
    if (node.op_type() != "Gemm" || node.input_size() != 2)
      continue;
    const std::string *fx = nullptr;
    for (const auto &kv : metadataOf(node))
      if (kv.key() == kFxNodeKey)
        fx = &kv.value();
    if (!fx || fx->find("target=torch.ops.aten.addmm.default") == std::string::npos)
      continue;
    // addmm(bias, x, weight): the bias a parameter with no initializer, the
    // weight one the Gemm reads as its B.
    std::vector<std::string> args = fxArgs(*fx);
    if (args.size() != 3 || args[0].rfind("%", 0) != 0 || args[2].rfind("%", 0) != 0)
      continue;
    auto bias = targetOf.find(args[0].substr(1)), weight = targetOf.find(args[2].substr(1));
    if (bias == targetOf.end() || weight == targetOf.end() || inits.count(bias->second) ||
        node.input(1) != weight->second || !inits.count(weight->second))
      continue;
    const onnx::TensorProto &w = *inits.at(weight->second);
    bool transB = false;
    for (const auto &a : node.attribute())
      if (a.name() == "transB")
        transB = a.i() != 0;
    if (w.dims_size() != 2)
      continue;
    int64_t n = w.dims(transB ? 0 : 1);
    onnx::TensorProto zero;
    zero.set_name(bias->second);
    zero.set_data_type(w.data_type());
    zero.add_dims(n);
    int64_t size = w.data_type() == onnx::TensorProto::DOUBLE ? 8
                   : w.data_type() == onnx::TensorProto::FLOAT ? 4
                                                               : 2;
    zero.set_raw_data(std::string(n * size, '\0'));
    node.add_input(bias->second);
    inits[bias->second] = nullptr; // restored once
    merged[bias->second] = "";
    zeros.push_back(std::move(zero));
  }
  for (auto &z : zeros)
    *graph->add_initializer() = std::move(z);
}

} // namespace

bool zrt::fxGraphReads(const onnx::ModelProto &model, const std::string &placeholder) {
  for (const auto &node : model.graph().node())
    for (const auto &kv : metadataOf(node))
      if (kv.key() == kFxNodeKey && readsPlaceholder(kv.value(), placeholder))
        return true;
  return false;
}

std::map<std::string, std::string> zrt::splitMergedParameters(onnx::ModelProto &model) {
  std::map<std::string, std::string> merged;
  std::string error;
  auto placeholders = signaturePlaceholders(model, error);
  if (!placeholders)
    return merged; // no signature (or a malformed one, which the importer names)
  auto *graph = model.mutable_graph();
  std::map<std::string, const onnx::TensorProto *> inits;
  for (const auto &t : graph->initializer())
    inits[t.name()] = &t;
  std::set<std::string> targets;
  for (const auto &[placeholder, target] : *placeholders)
    targets.insert(target);
  std::vector<onnx::TensorProto> copies;
  for (const auto &[placeholder, target] : *placeholders) {
    if (inits.count(target))
      continue;
    // The nodes PyTorch's FX node for this parameter became, and the parameter
    // initializer they read instead (one other signature parameter's).
    std::vector<onnx::NodeProto *> readers;
    std::set<std::string> readInstead;
    for (auto &node : *graph->mutable_node()) {
      const std::string *fx = nullptr;
      for (const auto &kv : metadataOf(node))
        if (kv.key() == kFxNodeKey)
          fx = &kv.value();
      if (!fx || !readsPlaceholder(*fx, placeholder))
        continue;
      bool reads = false;
      for (const std::string &in : node.input())
        if (targets.count(in) && inits.count(in)) {
          // Only an initializer the FX node does not read under its own name.
          std::string other;
          for (const auto &[p, t] : *placeholders)
            if (t == in)
              other = p;
          if (!other.empty() && readsPlaceholder(*fx, other))
            continue;
          readInstead.insert(in);
          reads = true;
        }
      if (reads)
        readers.push_back(&node);
    }
    // A node may read several merged parameters (a LayerNorm's weight and
    // bias, merged into another LayerNorm's): the one of the same kind.
    if (readInstead.size() > 1) {
      std::set<std::string> sameKind;
      for (const std::string &name : readInstead)
        if (lastComponent(name) == lastComponent(target))
          sameKind.insert(name);
      readInstead = sameKind;
    }
    // Unread by any FX node: a tied alias (torch.export reads it through the
    // other placeholder) or unused; two candidates: nothing says which.
    if (readers.empty() || readInstead.size() != 1)
      continue;
    const std::string &shared = *readInstead.begin();
    for (onnx::NodeProto *node : readers)
      for (auto &in : *node->mutable_input())
        if (in == shared)
          in = target;
    // (A node that read the shared one for two of its merged parameters reads
    // the first's copy for both; the second finds no reader left and stays
    // merged, named by the importer's warning.)
    onnx::TensorProto copy = *inits.at(shared);
    copy.set_name(target);
    copies.push_back(std::move(copy));
    merged[target] = shared;
  }
  for (auto &copy : copies)
    *graph->add_initializer() = std::move(copy);
  restoreDroppedBiases(model, *placeholders, merged);
  return merged;
}
