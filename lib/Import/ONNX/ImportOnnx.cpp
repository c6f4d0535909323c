//===- ImportOnnx.cpp - ONNX model to the compute dialect -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The import runs in three steps:
//  1. read the model (binary protobuf, or ONNX's text syntax) and pin input shapes;
//  2. alternate ONNX's own shape inference with constant folding of shape
//     subgraphs until nothing changes, so every tensor gets a static shape;
//  3. build `func.func @main` node by node through the op builders.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"

#include "zero/Import/ONNX/ImportOnnx.h"
#include "zrt/Error.h"
#include "zrt/FoldedTransposes.h"
#include "zrt/MergedParameters.h"
#include "zrt/ParameterInputs.h"
#include "zrt/OnnxTypes.h"
#include "zrt/InputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/common/version.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#ifndef ZERO_DEBIAN_ONNX // ONNX 1.16 and later
#include <onnx/inliner/inliner.h>
#endif
#include <onnx/shape_inference/implementation.h>

#include <set>

using namespace mlir;
using namespace zero;
using namespace zero::onnx_import;

//===----------------------------------------------------------------------===//
// Loading, shape pinning, inference and folding
//===----------------------------------------------------------------------===//

namespace {

LogicalResult readModel(MLIRContext &ctx, StringRef path, onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  // A regular file of at most protobuf's 2 GiB, checked before it is read.
  std::string bytes, error;
  if (!zrt::readInputFile(path.str(), "ONNX model", zrt::kMaxProtobufBytes, bytes, error))
    return emitError(loc) << error;
  if (path.ends_with(".onnxtxt")) {
    std::string text = bytes;
    auto status = onnx::OnnxParser::Parse(model, text.c_str());
    if (!status.IsOK())
      return emitError(loc) << "'" << path
                            << "' is not valid ONNX text: " << status.ErrorMessage();
    // ONNX 1.12's text parser drops the shape of a scalar (`float[] loss`), which
    // the checker then rejects: a graph input or output without one is a scalar.
    auto *g = model.mutable_graph();
    for (auto *values : {g->mutable_input(), g->mutable_output()})
      for (auto &v : *values)
        if (v.type().has_tensor_type() && !v.type().tensor_type().has_shape())
          v.mutable_type()->mutable_tensor_type()->mutable_shape();
    return success();
  }
  google::protobuf::io::ArrayInputStream raw(bytes.data(), (int)bytes.size());
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return emitError(loc) << "'" << path << "' is not a valid ONNX model";
  return success();
}

/// The newest default-domain opset the linked ONNX library defines.
int64_t newestOpset() {
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find(onnx::ONNX_DOMAIN);
  return it == ranges.end() ? kMinOpset : it->second.second;
}

/// The opset of the default ONNX domain, checked against the range the importer
/// reads, and the model's IR version against the library's.
FailureOr<int64_t> defaultOpset(MLIRContext &ctx, StringRef path,
                                const onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  if (model.ir_version() > onnx::IR_VERSION)
    return emitError(loc) << "the model's IR version " << model.ir_version()
                          << " is newer than this build's ONNX library reads (IR "
                             "version up to "
                          << (int64_t)onnx::IR_VERSION << ", ONNX " << onnx::LAST_RELEASE_VERSION
                          << ")",
           failure();
  int64_t opset = -1;
  for (const auto &o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  }
  if (opset < 0)
    return emitError(loc) << "model imports no default-domain ONNX opset",
           failure();
  if (opset < kMinOpset || opset > newestOpset())
    return emitError(loc) << "ONNX opset " << opset << " is not supported (supported: "
                          << kMinOpset << " to " << newestOpset() << ")",
           failure();
  return opset;
}

/// Replaces calls of the model's local functions by their bodies, so that the
/// rest of the import sees default-domain ops only.
LogicalResult inlineLocalFunctions(MLIRContext &ctx, StringRef path,
                                   onnx::ModelProto &model) {
  if (model.functions_size() == 0)
    return success();
#ifdef ZERO_DEBIAN_ONNX
  return emitError(FileLineColLoc::get(&ctx, path, 0, 0))
         << "the model has local functions, and this zero-opt links Debian's ONNX "
            "1.12, which cannot inline them (utils/setup.sh builds zero-opt with the "
            "ONNX release that can)";
#else
  try {
    onnx::inliner::InlineLocalFunctions(model, /*convert_version=*/false);
  } catch (const std::exception &e) {
    return emitError(FileLineColLoc::get(&ctx, path, 0, 0))
           << "cannot inline the model's local functions: " << e.what();
  }
  return success();
#endif
}

/// Replaces symbolic input dimensions by `--input-shape` values; an unpinned
/// symbolic dimension is an error naming the input.
LogicalResult pinInputShapes(MLIRContext &ctx, StringRef path,
                             onnx::ModelProto &model,
                             const OnnxImportOptions &options) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  std::set<std::string> initializers;
  for (const auto &t : model.graph().initializer())
    initializers.insert(t.name());
  for (const auto &[name, shape] : options.inputShapes) {
    bool found = false;
    for (const auto &in : model.graph().input())
      found |= in.name() == name;
    if (!found)
      return emitError(loc) << "--input-shape names '" << name
                            << "', which is not a graph input";
  }
  for (auto &in : *model.mutable_graph()->mutable_input()) {
    if (initializers.count(in.name()))
      continue;
    if (!in.type().has_tensor_type())
      return emitError(loc) << "graph input '" << in.name() << "' is not a tensor";
    auto *tt = in.mutable_type()->mutable_tensor_type();
    auto pinned = options.inputShapes.find(in.name());
    if (pinned != options.inputShapes.end()) {
      if (tt->has_shape() && tt->shape().dim_size() != (int)pinned->second.size())
        return emitError(loc) << "--input-shape gives '" << in.name() << "' rank "
                              << pinned->second.size() << ", the model says rank "
                              << tt->shape().dim_size();
      tt->mutable_shape()->clear_dim();
      for (int64_t d : pinned->second)
        tt->mutable_shape()->add_dim()->set_dim_value(d);
      continue;
    }
    if (!tt->has_shape())
      return emitError(loc) << "graph input '" << in.name()
                            << "' has no shape; give one with --input-shape "
                            << in.name() << "=DxDx...";
    // A symbolic batch (the first dimension) takes the batch size asked for (a
    // DeepSpeed config's micro-batch).
    if (options.batch && tt->shape().dim_size() > 0 &&
        !tt->shape().dim(0).has_dim_value())
      tt->mutable_shape()->mutable_dim(0)->set_dim_value(*options.batch);
    for (int i = 0; i < tt->shape().dim_size(); ++i) {
      const auto &d = tt->shape().dim(i);
      if (!d.has_dim_value() || d.dim_value() < 0)
        return emitError(loc)
               << "graph input '" << in.name() << "' has symbolic dimension "
               << (d.has_dim_param() ? "'" + d.dim_param() + "'" : "?") << " (dim "
               << i << "); pin it with --input-shape " << in.name() << "=DxDx...";
    }
  }
  return success();
}

/// The values of float initializer `t` when they are a causal attention mask
/// (see compute::isCausalMask): at least 3-D with its last two dimensions equal
/// (masks are [B or 1, H or 1, T, T]; weights and T x D tables are not read), and
/// within what constFromProto reads.
std::optional<ConstTensor> causalMaskValues(const onnx::TensorProto &t,
                                            const OnnxImporter &imp) {
  int rank = t.dims_size();
  if (rank < 3 || t.dims(rank - 2) != t.dims(rank - 1))
    return std::nullopt;
  std::string error;
  auto value = constFromProto(t, error, &imp.modelDir);
  if (!value || !zero::compute::isCausalMask(value->numel(), t.dims(rank - 2),
                                              t.dims(rank - 1), /*additive=*/true,
                                              [&](int64_t k) { return value->floatAt(k); }))
    return std::nullopt;
  return value;
}

/// Integer and bool initializers that are not graph inputs are constants (ONNX
/// IR): they are read now, inline or external data (from the model's folder), and
/// become Constant nodes at the head of the graph, so that shape inference and
/// folding see their values (Reshape's shape, Slice's starts, ReduceSum's axes).
/// So do one-element float initializers outside a recorded trainable set: the
/// scalars the torch.export-based exporter lifts (attention's scale, a 0), which
/// passes then see as the constants they are; and, outside such a set, float
/// initializers whose values are a causal attention mask (the torch.export-based
/// exporter folds HF models' [B, 1, T, T] mask to one), which --zero-fuse-attention
/// then makes the fused op's own `causal` (the tensor itself is then gone). Such
/// a mask over kMaxFoldedElements stays an initializer, read as any mask.
LogicalResult foldConstantInitializers(MLIRContext &ctx, StringRef path,
                                       onnx::ModelProto &model, OnnxImporter &imp,
                                       const TrainableSet &trainable) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  auto *graph = model.mutable_graph();
  std::vector<onnx::NodeProto> constants;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto &t : *graph->mutable_initializer()) {
    int32_t type = t.data_type();
    bool integer = type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32 ||
                   type == onnx::TensorProto::INT8 || type == onnx::TensorProto::UINT8 ||
                   type == onnx::TensorProto::BOOL;
    bool frozenFloat = zrt::isFloatOnnxType(type) &&
                       trainable.source != TrainableSet::kEveryFloat &&
                       !trainable.names.count(t.name());
    bool liftedScalar =
        frozenFloat && t.dims_size() <= 1 && (t.dims_size() == 0 || t.dims(0) == 1);
    std::optional<ConstTensor> mask;
    if (frozenFloat && !liftedScalar && !imp.graphInputs.count(t.name()))
      mask = causalMaskValues(t, imp);
    if (!(integer || liftedScalar || mask) || imp.graphInputs.count(t.name())) {
      *kept.Add() = std::move(t);
      continue;
    }
    std::string error;
    auto value = mask ? std::move(mask) : constFromProto(t, error, &imp.modelDir);
    if (!value)
      return emitError(loc) << "initializer '" << t.name() << "' is a constant that "
                            << "cannot be read: " << error,
             failure();
    onnx::NodeProto node;
    node.set_op_type("Constant");
    node.set_name(t.name());
    node.add_output(t.name());
    auto *attr = node.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    *attr->mutable_t() = constToProto(*value);
    attr->mutable_t()->set_name(t.name());
    constants.push_back(std::move(node));
  }
  graph->mutable_initializer()->Swap(&kept);
  if (constants.empty())
    return success();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto &n : constants)
    *nodes.Add() = std::move(n);
  for (auto &n : *graph->mutable_node())
    *nodes.Add() = std::move(n);
  graph->mutable_node()->Swap(&nodes);
  return success();
}

/// Replaces each `--constant-input` graph input by a Constant node holding the file's
/// tensor, so that shape inference and folding see its value.
LogicalResult bindConstantInputs(MLIRContext &ctx, StringRef path,
                                 onnx::ModelProto &model,
                                 const OnnxImportOptions &options) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  auto *graph = model.mutable_graph();
  for (const auto &[name, file] : options.constantInputs) {
    int found = -1;
    for (int i = 0; i < graph->input_size(); ++i)
      if (graph->input(i).name() == name)
        found = i;
    if (found < 0)
      return emitError(loc) << "--constant-input names '" << name
                            << "', which is not a graph input";
    std::string bytes, readError;
    if (!zrt::readInputFile(file, "--constant-input " + name, zrt::kMaxProtobufBytes, bytes,
                            readError))
      return emitError(loc) << readError;
    onnx::TensorProto value;
    if (!value.ParseFromArray(bytes.data(), (int)bytes.size()))
      return emitError(loc) << "--constant-input " << name << ": cannot read a "
                            << "TensorProto from '" << file << "'";
    std::string error;
    if (!constFromProto(value, error))
      return emitError(loc) << "--constant-input " << name << ": " << error;
    // The value must be what the input is declared as: its element type, its rank
    // and each fixed dimension (a symbolic one takes any size).
    const onnx::ValueInfoProto &declared = graph->input(found);
    if (declared.type().has_tensor_type()) {
      const auto &t = declared.type().tensor_type();
      auto describe = [](int32_t type, const std::vector<std::string> &dims) {
        std::string text = onnx::TensorProto_DataType_Name(type) + " of shape [";
        for (size_t i = 0; i < dims.size(); ++i)
          text += (i ? ", " : "") + dims[i];
        return text + "]";
      };
      std::vector<std::string> want, got;
      bool fits = !t.has_elem_type() || t.elem_type() == value.data_type();
      if (t.has_shape()) {
        fits &= t.shape().dim_size() == value.dims_size();
        for (int d = 0; d < t.shape().dim_size(); ++d) {
          const auto &dim = t.shape().dim(d);
          want.push_back(dim.has_dim_value() ? std::to_string(dim.dim_value())
                         : dim.has_dim_param() ? dim.dim_param()
                                               : "?");
          if (dim.has_dim_value() && d < value.dims_size())
            fits &= dim.dim_value() == value.dims(d);
        }
      }
      for (int64_t d : value.dims())
        got.push_back(std::to_string(d));
      if (!fits)
        return emitError(loc) << "--constant-input " << name << ": '" << file << "' holds "
                              << describe(value.data_type(), got) << "; graph input '"
                              << name << "' is declared "
                              << describe(t.elem_type(), t.has_shape() ? want
                                                         : std::vector<std::string>{});
    }
    graph->mutable_input()->DeleteSubrange(found, 1);
    onnx::NodeProto node;
    node.set_op_type("Constant");
    node.set_name(name);
    node.add_output(name);
    auto *attr = node.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    *attr->mutable_t() = value;
    attr->mutable_t()->set_name(name);
    // Put it first: nodes must stay in topological order.
    graph->add_node()->Swap(&node);
    for (int i = graph->node_size() - 1; i > 0; --i)
      graph->mutable_node()->SwapElements(i, i - 1);
  }
  return success();
}

/// Runs ONNX shape inference and records every known value type.
LogicalResult inferTypes(MLIRContext &ctx, StringRef path, onnx::ModelProto &model,
                         OnnxImporter &imp) {
  try {
    onnx::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0,
                                     /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       opts);
  } catch (const std::exception &e) {
    return emitError(FileLineColLoc::get(&ctx, path, 0, 0))
           << "ONNX shape inference failed: " << e.what();
  }
  imp.types.clear();
  const auto &g = model.graph();
  for (const auto &v : g.input())
    imp.types[v.name()] = v.type();
  for (const auto &v : g.value_info())
    imp.types[v.name()] = v.type();
  for (const auto &v : g.output())
    imp.types[v.name()] = v.type();
  for (const auto &t : g.initializer()) {
    onnx::TypeProto tp;
    tp.mutable_tensor_type()->set_elem_type(t.data_type());
    auto *shape = tp.mutable_tensor_type()->mutable_shape();
    for (int64_t d : t.dims())
      shape->add_dim()->set_dim_value(d);
    imp.types[t.name()] = tp;
  }
  return success();
}

/// Static shape of `name`, if inference found one.
std::optional<std::vector<int64_t>> staticShape(OnnxImporter &imp,
                                                const std::string &name) {
  auto it = imp.types.find(name);
  if (it == imp.types.end() || !it->second.tensor_type().has_shape())
    return std::nullopt;
  std::vector<int64_t> shape;
  for (const auto &d : it->second.tensor_type().shape().dim()) {
    if (!d.has_dim_value())
      return std::nullopt;
    shape.push_back(d.dim_value());
  }
  return shape;
}

/// Folds every node whose inputs are all known into a Constant node, so that the
/// next round of shape inference sees its value. Returns whether anything changed.
FailureOr<bool> foldConstants(onnx::ModelProto &model, OnnxImporter &imp) {
  bool changed = false;
  for (auto &node : *model.mutable_graph()->mutable_node()) {
    if (node.output_size() != 1 || !isFoldableOp(node.op_type()) ||
        imp.constants.count(node.output(0)))
      continue;
    std::vector<const ConstTensor *> inputs;
    bool allKnown = true;
    for (int i = 0; i < node.input_size(); ++i) {
      const ConstTensor *c = imp.constantInput(node, i);
      inputs.push_back(c);
      if (OnnxImporter::hasInput(node, i) && !c)
        allKnown = false;
    }
    std::optional<std::vector<int64_t>> shape;
    if (node.op_type() == "Shape" && node.input_size() == 1) {
      shape = staticShape(imp, node.input(0));
      if (!shape)
        continue;
    } else if (!allKnown) {
      continue;
    }
    std::string error;
    auto value = evaluateConstant(node, inputs, shape ? &*shape : nullptr, error);
    if (!error.empty()) {
      imp.error(node) << error;
      return failure();
    }
    if (!value)
      continue;
    // Large derived tensors stay ops: folding is for shapes and small constants;
    // except what builds masks (a long sequence's causal mask: ones expanded,
    // Trilu, comparisons, Where, casts and views of them) and the results of ops
    // without a run-time kernel, folded up to kMaxFoldedElements so that
    // attention sees the mask as a constant.
    static const std::set<std::string> kMaskOps = {
        "Expand", "Trilu", "Where", "Equal", "Less", "LessOrEqual", "Greater",
        "GreaterOrEqual", "Not", "And", "Or", "Cast", "Reshape", "Unsqueeze", "Slice"};
    if (value->numel() > (1 << 20) && node.op_type() != "Constant" &&
        node.op_type() != "ConstantOfShape" && hasRunTimeKernel(node.op_type()) &&
        !kMaskOps.count(node.op_type()))
      continue;
    imp.constants[node.output(0)] = *value;
    if (node.op_type() != "Constant") {
      std::string out = node.output(0), name = node.name();
      node.Clear();
      node.set_op_type("Constant");
      node.set_name(name);
      node.add_output(out);
      auto *attr = node.add_attribute();
      attr->set_name("value");
      attr->set_type(onnx::AttributeProto::TENSOR);
      *attr->mutable_t() = constToProto(*value);
    }
    changed = true;
  }
  return changed;
}

LogicalResult buildFunction(ModuleOp module, const onnx::ModelProto &model,
                            const std::map<std::string, int64_t> &inputPositions,
                            const TrainableSet &trainable,
                            OnnxImporter &imp) {
  const auto &g = model.graph();
  MLIRContext *ctx = imp.ctx;
  Location fileLoc = FileLineColLoc::get(ctx, imp.file, 0, 0);
  std::set<std::string> initializers;
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  Builder b(ctx);
  // The remaining initializers (floats, and graph inputs' defaults) become
  // parameters; only their shape and type are read. With the model's trainable
  // set, those outside it are frozen: loaded, never updated.
  for (const auto &t : g.initializer()) {
    initializers.insert(t.name());
    Type et = elementTypeOf(ctx, t.data_type());
    if (!et)
      return emitError(fileLoc) << "initializer '" << t.name()
                                << "' has unsupported data type "
                                << onnx::TensorProto::DataType_Name(
                                       (onnx::TensorProto::DataType)t.data_type());
    SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
    argTypes.push_back(RankedTensorType::get(shape, et));
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(compute::attr::kParam, b.getStringAttr(t.name()))};
    if (!trainable.names.count(t.name()))
      attrs.push_back(b.getNamedAttr(compute::attr::kFrozen, b.getUnitAttr()));
    auto source = trainable.derivedFrom.find(t.name());
    if (source != trainable.derivedFrom.end())
      attrs.push_back(b.getNamedAttr(compute::attr::kFoldedFrom,
                                     b.getStringAttr(source->second)));
    argAttrs.push_back(b.getDictionaryAttr(attrs));
    argNames.push_back(t.name());
  }
  for (const auto &in : g.input()) {
    if (initializers.count(in.name()))
      continue;
    onnx::NodeProto pseudo;
    pseudo.set_name(in.name());
    pseudo.set_op_type("<graph input>");
    auto type = imp.typeOf(pseudo, in.name());
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(compute::attr::kInput,
                        b.getI64IntegerAttr(inputPositions.at(in.name()))),
         b.getNamedAttr(compute::attr::kName, b.getStringAttr(in.name()))}));
    argNames.push_back(in.name());
  }

  imp.builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(imp.builder, fileLoc, "main",
                                   b.getFunctionType(argTypes, {}));
  if (trainable.source != TrainableSet::kEveryFloat)
    func->setAttr(compute::attr::kTrainableListed, b.getUnitAttr());
  func->setAttr(compute::attr::kTrainableSource, b.getStringAttr(trainable.source));
  Block *entry = func.addEntryBlock();
  for (auto [i, attrs] : llvm::enumerate(argAttrs)) {
    func.setArgAttrs(i, attrs);
    imp.define(argNames[i], entry->getArgument(i));
  }
  imp.builder.setInsertionPointToEnd(entry);

  for (const auto &node : g.node())
    for (const std::string &out : node.output())
      imp.producers[out] = &node;
  for (const auto &node : g.node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return imp.error(node) << "domain '" << node.domain() << "' is not supported",
             failure();
    // Folded nodes are known; they are materialized where a real op uses them.
    if (node.output_size() == 1 && imp.constants.count(node.output(0)))
      continue;
    if (failed(buildNode(imp, node)))
      return failure();
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<Attribute> outputNames;
  for (const auto &out : g.output()) {
    if (imp.sequences.count(out.name()))
      return emitError(fileLoc) << "graph output '" << out.name()
                                << "' is a sequence; only tensor outputs are supported",
             failure();
    onnx::NodeProto pseudo;
    pseudo.set_name(out.name());
    pseudo.set_op_type("<graph output>");
    pseudo.add_input(out.name());
    auto v = imp.operand(pseudo, 0);
    if (failed(v))
      return failure();
    results.push_back(*v);
    resultTypes.push_back(v->getType());
    outputNames.push_back(b.getStringAttr(out.name()));
  }
  func::ReturnOp::create(imp.builder, fileLoc, results);
  func.setFunctionType(b.getFunctionType(argTypes, resultTypes));
  func->setAttr(compute::attr::kOutputNames, b.getArrayAttr(outputNames));
  return success();
}

/// A model exported in bf16 or f16 (its weights 16-bit initializers) computes in
/// float32 (elementTypeOf): says so once. Its 16-bit outputs (a language model's
/// logits) come out as float32. 16-bit graph inputs are refused, and 16-bit
/// outputs of a model without 16-bit weights: the caller's bytes or the values it
/// expects (rounded to 16 bits) would not be what the plan reads or writes.
LogicalResult checkHalfPrecision(MLIRContext &ctx, StringRef path,
                                 const onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  auto isHalf = [](int32_t t) {
    return t == onnx::TensorProto::BFLOAT16 || t == onnx::TensorProto::FLOAT16;
  };
  std::set<std::string> inits;
  std::map<int32_t, int64_t> widened;
  for (const auto &t : model.graph().initializer()) {
    inits.insert(t.name());
    if (isHalf(t.data_type()))
      ++widened[t.data_type()];
  }
  for (const auto *values : {&model.graph().input(), &model.graph().output()}) {
    bool input = values == &model.graph().input();
    if (!input && !widened.empty())
      continue;
    for (const auto &v : *values) {
      if (inits.count(v.name()) || !v.type().has_tensor_type())
        continue;
      int32_t t = v.type().tensor_type().elem_type();
      if (isHalf(t))
        return emitError(loc) << "graph " << (input ? "input" : "output") << " '" << v.name()
                              << "' is "
                              << onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)t)
                              << ": zero-opt computes 16-bit floats as float32, and "
                              << (input ? "takes float32 inputs" : "returns float32 outputs")
                              << " (16-bit outputs only of a model exported with 16-bit "
                                 "weights, as float32)",
               failure();
    }
  }
  if (widened.empty())
    return success();
  std::string what;
  for (const auto &[type, n] : widened)
    what += (what.empty() ? "" : " and ") + std::to_string(n) + " " +
            onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)type);
  emitRemark(loc) << "the model was exported in 16-bit floats (" << what
                  << " initializers): it computes in float32, its weights train as "
                     "float32 master weights and its float outputs are float32; "
                     "--precision=bf16 or fp16 for 16-bit matrix products";
  return success();
}

/// Reads the TorchScript exporter's transposed copies of named weights as
/// Transpose nodes (zrt/FoldedTransposes.h), saying so; warns of anonymous
/// initializers left, which train under names PyTorch does not know.
LogicalResult readTransposedCopies(MLIRContext &ctx, StringRef path,
                                   onnx::ModelProto &model, const std::string &modelDir) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  zrt::TransposedCopies copies;
  try {
    copies = zrt::unfoldTransposedCopies(model, modelDir);
  } catch (const zrt::Error &e) {
    return emitError(loc) << e.what(), failure();
  }
  auto plural = [](size_t n) { return n == 1 ? " initializer" : " initializers"; };
  if (!copies.sourceOf.empty()) {
    const auto &[copy, source] = *copies.sourceOf.begin();
    emitRemark(loc) << copies.sourceOf.size() << plural(copies.sourceOf.size())
                    << " made by constant folding at export: a named weight transposed ('"
                    << copy << "' is '" << source
                    << "' transposed), read as Transpose of the weight, which trains "
                       "itself (a tied weight stays one tensor)";
  }
  if (!copies.unmatched.empty())
    emitWarning(loc) << copies.unmatched.size() << plural(copies.unmatched.size())
                     << " made by constant folding at export ('" << copies.unmatched[0]
                     << "'" << (copies.unmatched.size() > 1 ? ", ..." : "")
                     << ") and no named weight transposed: trained under these names; "
                        "export with do_constant_folding=False so that weights keep "
                        "their PyTorch names";
  return success();
}

} // namespace

OwningOpRef<ModuleOp> zero::importOnnxModel(MLIRContext &context, StringRef path,
                                            const OnnxImportOptions &options) {
  onnx::ModelProto model;
  if (failed(readModel(context, path, model)))
    return nullptr;
  return importOnnxModel(context, std::move(model), path, options);
}

OwningOpRef<ModuleOp> zero::importOnnxModel(MLIRContext &context,
                                            onnx::ModelProto &&model, StringRef path,
                                            const OnnxImportOptions &options) {
  context.loadDialect<compute::ComputeDialect, func::FuncDialect>();
  auto opset = defaultOpset(context, path, model);
  if (failed(opset) || failed(inlineLocalFunctions(context, path, model)) ||
      failed(checkModelStructure(context, path, model, *opset)))
    return nullptr;
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  std::string modelDir = llvm::sys::path::parent_path(path).str();
  if (modelDir.empty())
    modelDir = ".";
  if (failed(readTransposedCopies(context, path, model, modelDir)))
    return nullptr;
  // A model exported without its weights has its parameters as graph inputs: they
  // are parameters (zrt/ParameterInputs.h), zero-run gives their values.
  std::vector<std::string> fromInputs = zrt::parametersFromInputs(model);
  if (!fromInputs.empty())
    emitRemark(fileLoc) << fromInputs.size() << " graph inputs are parameters of the graph "
                        << "signature (a model exported without its weights, e.g. '"
                        << fromInputs.front() << "'): they train, their values from "
                        << "zero-run --init CHECKPOINT";
  if (failed(checkHalfPrecision(context, path, model)))
    return nullptr;
  // Parameters the exporter's optimizer merged because their values were equal
  // train apart, as in PyTorch (zrt/MergedParameters.h); zero-run reads the
  // model the same way.
  std::map<std::string, std::string> merged = zrt::splitMergedParameters(model);
  int64_t dropped = 0;
  const std::pair<const std::string, std::string> *example = nullptr;
  for (const auto &kv : merged) {
    dropped += kv.second.empty();
    if (!kv.second.empty() && !example)
      example = &kv;
  }
  if (example)
    emitRemark(fileLoc) << merged.size() - dropped << " parameters the exporter merged with "
                        << "another of equal value train as their own tensors, as in "
                        << "PyTorch (e.g. '" << example->first << "', merged into '"
                        << example->second << "')";
  if (dropped)
    emitRemark(fileLoc) << dropped << " zero biases the exporter dropped train again, "
                        << "from zero, as in PyTorch";
  // Graph inputs keep the positions they had in the file, whatever is bound.
  std::set<std::string> inits;
  for (const auto &t : model.graph().initializer())
    inits.insert(t.name());
  std::map<std::string, int64_t> inputPositions;
  int64_t position = 0;
  for (const auto &in : model.graph().input())
    if (!inits.count(in.name()))
      inputPositions[in.name()] = position++;
  if (failed(bindConstantInputs(context, path, model, options)) ||
      failed(pinInputShapes(context, path, model, options)))
    return nullptr;
  auto trainable = findTrainableSet(context, path, model);
  if (failed(trainable))
    return nullptr;

  OnnxImporter imp(context, llvm::sys::path::filename(path).str(), *opset, options);
  imp.modelDir = modelDir;
  // The graph inputs left once --constant-input has bound some.
  for (const auto &in : model.graph().input())
    if (!inits.count(in.name()))
      imp.graphInputs.insert(in.name());
  if (failed(foldConstantInitializers(context, path, model, imp, *trainable)))
    return nullptr;
  for (const auto &t : model.graph().initializer()) {
    if (zrt::isFloatOnnxType(t.data_type()) && trainable->names.count(t.name()))
      imp.trainedInitializers.insert(t.name());
    else
      imp.untrainedInitializers[t.name()] = &t;
  }
  // Shape inference and folding feed each other: a folded shape lets inference
  // type a Reshape, whose static shape lets a later Shape node fold.
  for (int round = 0;; ++round) {
    if (failed(inferTypes(context, path, model, imp)))
      return nullptr;
    auto changed = foldConstants(model, imp);
    if (failed(changed))
      return nullptr;
    if (!*changed)
      break;
    if (round > 1000) {
      emitError(fileLoc) << "constant folding did not converge";
      return nullptr;
    }
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  if (failed(buildFunction(*module, model, inputPositions, *trainable, imp)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
