//===- CheckModel.cpp - A model's structure, checked before inference -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// ONNX's shape inference trusts its input: a node without a required attribute, an
// axis of 2^31 or a value defined twice can crash it. So before it runs, the model
// must be SSA and in topological order, use only ops the importer knows, pass the
// ONNX checker, and keep axes and ranks within bounds. Each failure names the
// value, node or attribute at fault.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/StringExtras.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <map>
#include <vector>
#include <set>

using namespace mlir;
using namespace zero::onnx_import;

namespace {

/// Ranks beyond this are refused everywhere (tensors, axes, permutations).
constexpr int64_t kMaxRank = 64;

std::string describe(const onnx::NodeProto &node) {
  std::string name = !node.name().empty() ? node.name()
                     : node.output_size() ? node.output(0)
                                          : "<unnamed>";
  return "node '" + name + "' (" + node.op_type() + ")";
}

/// Every value is defined once (SSA), and every node reads only values defined
/// before it: graph inputs, initializers, or outputs of earlier nodes.
LogicalResult checkDefinitions(Location loc, const onnx::GraphProto &g) {
  std::map<std::string, std::string> definedBy;
  auto define = [&](const std::string &name, const std::string &by) -> LogicalResult {
    if (name.empty())
      return success();
    auto [it, fresh] = definedBy.emplace(name, by);
    if (!fresh)
      return emitError(loc) << "value '" << name << "' is defined twice, by "
                            << it->second << " and by " << by
                            << " (ONNX graphs are in SSA form)",
             failure();
    return success();
  };
  std::map<std::string, bool> initializer;
  for (const auto &t : g.initializer()) {
    if (failed(define(t.name(), "initializer '" + t.name() + "'")))
      return failure();
    initializer[t.name()] = true;
  }
  for (const auto &in : g.input()) {
    // An initializer may also be listed as a graph input (its default value).
    if (initializer.count(in.name()))
      continue;
    if (failed(define(in.name(), "graph input '" + in.name() + "'")))
      return failure();
  }
  std::map<std::string, const onnx::NodeProto *> laterOutputs;
  for (const auto &node : g.node())
    for (const std::string &out : node.output())
      if (!out.empty())
        laterOutputs.emplace(out, &node);
  for (const auto &node : g.node()) {
    for (const std::string &in : node.input()) {
      if (in.empty() || definedBy.count(in))
        continue;
      auto later = laterOutputs.find(in);
      if (later != laterOutputs.end())
        return emitError(loc) << describe(node) << " reads '" << in
                              << "' before " << describe(*later->second)
                              << " computes it: the graph is not in topological "
                                 "order, or has a cycle",
               failure();
      return emitError(loc) << describe(node) << " reads '" << in
                            << "', which nothing defines",
             failure();
    }
    for (const std::string &out : node.output())
      if (failed(define(out, describe(node))))
        return failure();
  }
  for (const auto &out : g.output())
    if (!definedBy.count(out.name()))
      return emitError(loc) << "graph output '" << out.name()
                            << "' is not defined by any node, input or initializer",
             failure();
  return success();
}

/// Only ops the importer builds or folds, from the default domain, at schema
/// versions it handles; anything else would reach shape inference code the
/// importer never needs. The error names the op, its domain and version, and the
/// node.
LogicalResult checkOps(Location loc, const onnx::ModelProto &model, int64_t opset) {
  std::map<std::string, int64_t> domainVersions;
  for (const auto &o : model.opset_import())
    domainVersions[o.domain()] = o.version();
  for (const auto &node : model.graph().node()) {
    std::string d = describe(node);
    d = d.substr(0, d.size() - 1);
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      auto v = domainVersions.find(node.domain());
      InFlightDiagnostic diag = emitError(loc);
      diag << d << ", domain '" << node.domain() << "'";
      if (v != domainVersions.end())
        diag << " version " << v->second;
      diag << "): the domain is not supported (only ONNX's default domain is)";
      return failure();
    }
    const std::vector<int> *versions = supportedVersions(node.op_type());
    if (!versions)
      return emitError(loc) << d << ", domain 'ai.onnx', opset " << opset
                            << "): op type '" << node.op_type() << "' is not supported",
             failure();
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), (int)opset, "");
    if (!schema)
      return emitError(loc) << d << ", domain 'ai.onnx', opset " << opset
                            << "): ONNX defines no '" << node.op_type()
                            << "' at this opset",
             failure();
    int since = schema->SinceVersion();
    if (!llvm::is_contained(*versions, since)) {
      InFlightDiagnostic diag = emitError(loc);
      diag << d << ", domain 'ai.onnx', opset " << opset << "): " << node.op_type()
           << "-" << since << " (the version opset " << opset
           << " selects) is not supported; supported:";
      for (int v : *versions)
        diag << " " << node.op_type() << "-" << v;
      return failure();
    }
  }
  return success();
}

/// Rank within kMaxRank, dimensions non-negative, element count within int64.
bool shapeInBounds(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  bool ok = (int64_t)dims.size() <= kMaxRank;
  for (int64_t d : dims)
    ok &= d >= 0 && !__builtin_mul_overflow(n, d, &n);
  return ok;
}

/// Axes and permutations within kMaxRank, tensor shapes with non-negative
/// dimensions whose element count fits int64.
LogicalResult checkBounds(Location loc, const onnx::GraphProto &g) {
  for (const auto &node : g.node())
    for (const auto &a : node.attribute()) {
      bool axisLike = a.name() == "axis" || a.name() == "axes" || a.name() == "perm";
      if (!axisLike)
        continue;
      if (a.ints_size() > kMaxRank)
        return emitError(loc) << describe(node) << ": attribute '" << a.name()
                              << "' has " << a.ints_size() << " entries; ranks above "
                              << kMaxRank << " are not supported",
               failure();
      auto inRange = [](int64_t v) { return v >= -kMaxRank && v < kMaxRank; };
      bool ok = inRange(a.i());
      for (int64_t v : a.ints())
        ok &= inRange(v);
      if (!ok)
        return emitError(loc) << describe(node) << ": attribute '" << a.name()
                              << "' is out of range (ranks above " << kMaxRank
                              << " are not supported)",
               failure();
    }
  auto badShape = [&](StringRef what, const std::string &name) {
    return emitError(loc) << what << " '" << name
                          << "' has a bad shape (a negative dimension, rank above "
                          << kMaxRank << ", or more elements than int64 counts)",
           failure();
  };
  for (const auto &t : g.initializer())
    if (!shapeInBounds(std::vector<int64_t>(t.dims().begin(), t.dims().end())))
      return badShape("initializer", t.name());
  auto checkValue = [&](const onnx::ValueInfoProto &v) -> LogicalResult {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
      return success();
    // Symbolic dimensions count as 1 here; --input-shape or inference fixes them.
    std::vector<int64_t> dims;
    for (const auto &d : v.type().tensor_type().shape().dim())
      dims.push_back(d.has_dim_value() ? d.dim_value() : 1);
    return shapeInBounds(dims) ? success() : badShape("value", v.name());
  };
  for (const auto &v : g.input())
    if (failed(checkValue(v)))
      return failure();
  for (const auto &v : g.output())
    if (failed(checkValue(v)))
      return failure();
  for (const auto &v : g.value_info())
    if (failed(checkValue(v)))
      return failure();
  return success();
}

} // namespace

LogicalResult zero::onnx_import::checkModelStructure(MLIRContext &ctx, StringRef path,
                                                     onnx::ModelProto &model,
                                                     int64_t opset) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  const onnx::GraphProto &g = model.graph();
  if (failed(checkDefinitions(loc, g)) || failed(checkOps(loc, model, opset)) ||
      failed(checkBounds(loc, g)))
    return failure();
  // The checker reads initializers' data, external files included, which the
  // compiler does not need (a model's weights may not exist yet); it checks the
  // graph with the initializers declared as inputs instead, then they go back.
  // Their data is checked where it is read (folded constants here, parameters in
  // zero-run).
  auto *graph = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  initializers.Swap(graph->mutable_initializer());
  int inputs = graph->input_size();
  std::set<std::string> listed;
  for (const auto &in : graph->input())
    listed.insert(in.name());
  for (const auto &t : initializers) {
    if (listed.count(t.name()))
      continue;
    auto *in = graph->add_input();
    in->set_name(t.name());
    auto *tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    auto *shape = tt->mutable_shape();
    for (int64_t d : t.dims())
      shape->add_dim()->set_dim_value(d);
  }
  // ONNX 1.12's checker also insists on a shape field for graph outputs, which
  // onnx.helper models often leave out (make_tensor_value_info(name, type, None))
  // and later ONNX releases accept: outputs get their shapes from inference, so
  // for the check a missing one counts as present.
  std::vector<int> shapeless;
  for (int i = 0; i < graph->output_size(); ++i) {
    auto *type = graph->mutable_output(i)->mutable_type();
    if (type->has_tensor_type() && !type->tensor_type().has_shape()) {
      type->mutable_tensor_type()->mutable_shape();
      shapeless.push_back(i);
    }
  }
  std::string error;
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    error = e.what();
  }
  for (int i : shapeless)
    graph->mutable_output(i)->mutable_type()->mutable_tensor_type()->clear_shape();
  graph->mutable_input()->DeleteSubrange(inputs, graph->input_size() - inputs);
  initializers.Swap(graph->mutable_initializer());
  if (!error.empty()) {
    // One line: the checker's messages span several ("...\n\n==> Context: ...").
    std::string line;
    for (StringRef part : llvm::split(StringRef(error).trim(), '\n'))
      if (!part.trim().empty())
        line += (line.empty() ? "" : " ") + part.trim().str();
    return emitError(loc) << "the ONNX checker rejects the model: " << line, failure();
  }
  return success();
}
