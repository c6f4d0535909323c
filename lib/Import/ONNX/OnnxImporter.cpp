//===- OnnxImporter.cpp - What the op builders read a node with ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// OnnxImporter's per-node helpers (OnnxImporter.h): locations and errors, constant
// and scalar inputs, static types, operands and attributes. The model-level steps
// of the import are ImportOnnx.cpp.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <onnx/defs/schema.h>

using namespace mlir;
using namespace zero;
using namespace zero::onnx_import;

Location OnnxImporter::locOf(const onnx::NodeProto &node) {
  std::string name = !node.name().empty() ? node.name()
                     : node.output_size() ? node.output(0)
                                          : node.op_type();
  return FusedLoc::get(ctx, {NameLoc::get(StringAttr::get(ctx, name)),
                             FileLineColLoc::get(ctx, file, 0, 0)});
}

InFlightDiagnostic OnnxImporter::error(const onnx::NodeProto &node) {
  std::string name = !node.name().empty() ? node.name()
                     : node.output_size() ? node.output(0)
                                          : "<unnamed>";
  InFlightDiagnostic d = emitError(locOf(node));
  d << "node '" << name << "' (" << node.op_type() << ", opset " << opset << "): ";
  return d;
}

const ConstTensor *OnnxImporter::constantInput(const onnx::NodeProto &node, int i) {
  if (!hasInput(node, i))
    return nullptr;
  const std::string &name = node.input(i);
  auto it = constants.find(name);
  if (it != constants.end())
    return &it->second;
  // An untrained float initializer an op needs now: read it (once).
  auto init = untrainedInitializers.find(name);
  if (init == untrainedInitializers.end() || unreadable.count(name))
    return nullptr;
  std::string why;
  auto value = constFromProto(*init->second, why, &modelDir);
  if (!value) {
    unreadable[name] = why;
    return nullptr;
  }
  return &(constants[name] = *value);
}

const ConstTensor *OnnxImporter::requireConstant(const onnx::NodeProto &node, int i) {
  if (const ConstTensor *c = constantInput(node, i))
    return c;
  std::string operand = "input " + std::to_string(i);
  if (const auto *schema = onnx::OpSchemaRegistry::Schema(node.op_type(), (int)opset, ""))
    if (!schema->inputs().empty())
      operand += " ('" +
                 schema->inputs()[std::min<size_t>(i, schema->inputs().size() - 1)]
                     .GetName() +
                 "')";
  InFlightDiagnostic d = error(node);
  d << operand << " must be a compile-time constant: ";
  if (!hasInput(node, i)) {
    d << "it is missing";
    return nullptr;
  }
  const std::string &name = node.input(i);
  if (graphInputs.count(name))
    d << "it is graph input '" << name << "'; bind it with --constant-input " << name
      << "=FILE.pb";
  else if (trainedInitializers.count(name))
    d << "it is initializer '" << name << "', which is trained: leave it out of the "
      << "model's zero.trainable metadata to make it a constant";
  else if (unreadable.count(name))
    d << "initializer '" << name << "' cannot be read: " << unreadable[name];
  else if (producers.count(name))
    d << "'" << name << "' is computed at run time by node '"
      << (producers[name]->name().empty() ? name : producers[name]->name()) << "' ("
      << producers[name]->op_type() << ")";
  else
    d << "'" << name << "' is not known at compile time";
  return nullptr;
}

FailureOr<double> OnnxImporter::scalarInput(const onnx::NodeProto &node, int i,
                                            double dflt, const char *what) {
  if (!hasInput(node, i))
    return dflt;
  const ConstTensor *c = requireConstant(node, i);
  if (!c)
    return failure();
  if (c->numel() != 1)
    return error(node) << what << " must be a scalar", failure();
  return c->floatAt(0);
}

FailureOr<RankedTensorType> OnnxImporter::typeOf(const onnx::NodeProto &node,
                                                 const std::string &name) {
  auto it = types.find(name);
  if (it == types.end() || !it->second.has_tensor_type() ||
      !it->second.tensor_type().has_shape()) {
    error(node) << "shape inference gave value '" << name << "' no shape";
    return failure();
  }
  const auto &tt = it->second.tensor_type();
  Type et = elementTypeOf(ctx, tt.elem_type());
  if (!et) {
    error(node) << "value '" << name << "' has unsupported element type "
                << onnx::TensorProto::DataType_Name(
                       (onnx::TensorProto::DataType)tt.elem_type());
    return failure();
  }
  SmallVector<int64_t> shape;
  for (const auto &d : tt.shape().dim()) {
    if (!d.has_dim_value()) {
      error(node) << "value '" << name << "' has no static shape (dimension "
                  << shape.size() << " is "
                  << (d.has_dim_param() ? "'" + d.dim_param() + "'" : "unknown")
                  << ")";
      return failure();
    }
    if (d.dim_value() < 0 || shape.size() >= 64) {
      error(node) << "value '" << name << "' has a negative dimension or a rank "
                  << "above 64";
      return failure();
    }
    shape.push_back(d.dim_value());
  }
  return RankedTensorType::get(shape, et);
}

FailureOr<Value> OnnxImporter::materialize(const ConstTensor &c, Location loc) {
  Type et = elementTypeOf(ctx, c.dtype);
  if (!et)
    return emitError(loc) << "constant of unsupported data type", failure();
  auto type = RankedTensorType::get(c.shape, et);
  DenseElementsAttr attr;
  if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> vals;
    for (double v : c.floats) {
      APFloat f(v);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(f);
    }
    attr = DenseElementsAttr::get(type, vals);
  } else {
    unsigned bits = et.getIntOrFloatBitWidth();
    SmallVector<APInt> vals;
    for (int64_t v : c.ints)
      vals.push_back(APInt(bits, (uint64_t)v, /*isSigned=*/bits > 1 &&
                                                  !et.isUnsignedInteger(),
                           /*implicitTrunc=*/true));
    attr = DenseElementsAttr::get(type, vals);
  }
  return compute::ConstantOp::create(builder, loc, attr).getResult();
}

FailureOr<Value> OnnxImporter::operand(const onnx::NodeProto &node, int i) {
  if (!hasInput(node, i)) {
    error(node) << "input " << i << " is missing";
    return failure();
  }
  const std::string &name = node.input(i);
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  if (const ConstTensor *c = constantInput(node, i)) {
    auto v = materialize(*c, locOf(node));
    if (failed(v))
      return failure();
    values[name] = *v;
    return *v;
  }
  error(node) << "input '" << name << "' is not defined before its use";
  return failure();
}

int64_t OnnxImporter::intAttr(const onnx::NodeProto &node, const std::string &name,
                              int64_t dflt) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return a.i();
  return dflt;
}

float OnnxImporter::floatAttr(const onnx::NodeProto &node, const std::string &name,
                              float dflt) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return a.f();
  return dflt;
}

std::string OnnxImporter::stringAttr(const onnx::NodeProto &node,
                                     const std::string &name,
                                     const std::string &dflt) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return a.s();
  return dflt;
}

std::optional<std::vector<int64_t>>
OnnxImporter::intsAttr(const onnx::NodeProto &node, const std::string &name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  return std::nullopt;
}
