//===- OpBuilders.cpp - One builder per ONNX op ---------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A table keyed by ONNX op type dispatches to one builder each. Which schema
// versions of each op the importer accepts is SupportedOps.cpp's list, checked
// before any builder runs; a builder reads the signature changes between those
// versions (axes as an attribute or an input, say). Result types come from ONNX
// shape inference; the compute verifiers check them again.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"
#include "zero/Support/ShapeRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace zero;
using namespace zero::compute;
using namespace zero::onnx_import;
using onnx::NodeProto;

namespace {

using Builder = LogicalResult (*)(OnnxImporter &, const NodeProto &);

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

/// Builds a single-result op of type OpTy from all of the node's inputs, typed as
/// ONNX inference typed output 0.
template <typename OpTy>
LogicalResult buildSimple(OnnxImporter &imp, const NodeProto &node) {
  SmallVector<Value> operands;
  for (int i = 0; i < node.input_size(); ++i) {
    auto v = imp.operand(node, i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  auto type = imp.outputType(node, 0);
  if (failed(type))
    return failure();
  auto op = OpTy::create(imp.builder, imp.locOf(node), TypeRange{*type}, operands,
                         ArrayRef<NamedAttribute>{});
  imp.define(node.output(0), op->getResult(0));
  return success();
}

/// Unary ops have SameOperandsAndResultType: the type is the operand's.
template <typename OpTy>
LogicalResult buildUnary(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  imp.define(node.output(0), OpTy::create(imp.builder, imp.locOf(node), *x));
  return success();
}

LogicalResult buildIdentity(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  imp.define(node.output(0), *x);
  return success();
}

/// Gemm is alpha * op(A) * op(B) + beta * C: built from transpose, matmul, mul, add.
LogicalResult buildGemm(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto a = imp.operand(node, 0), b = imp.operand(node, 1);
  auto type = imp.outputType(node, 0);
  if (failed(a) || failed(b) || failed(type))
    return failure();
  if (rankOf(*a) != 2 || rankOf(*b) != 2)
    return imp.error(node) << "A and B must be matrices", failure();
  auto transpose = [&](Value v) -> Value {
    auto t = cast<RankedTensorType>(v.getType());
    auto tt = RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)},
                                    t.getElementType());
    return TransposeOp::create(imp.builder, loc, tt, v,
                               imp.builder.getDenseI64ArrayAttr({1, 0}));
  };
  Value lhs = OnnxImporter::intAttr(node, "transA", 0) ? transpose(*a) : *a;
  Value rhs = OnnxImporter::intAttr(node, "transB", 0) ? transpose(*b) : *b;
  Value y = MatMulOp::create(imp.builder, loc, *type, lhs, rhs);
  Type et = type->getElementType();
  auto scalar = [&](float v) {
    ConstTensor c;
    c.dtype = et.isF64() ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
    c.floats = {v};
    return imp.materialize(c, loc);
  };
  float alpha = OnnxImporter::floatAttr(node, "alpha", 1.0f);
  float beta = OnnxImporter::floatAttr(node, "beta", 1.0f);
  if (alpha != 1.0f) {
    auto s = scalar(alpha);
    if (failed(s))
      return failure();
    y = MulOp::create(imp.builder, loc, *type, y, *s);
  }
  if (OnnxImporter::hasInput(node, 2) && beta != 0.0f) {
    auto c = imp.operand(node, 2);
    if (failed(c))
      return failure();
    Value cv = *c;
    if (beta != 1.0f) {
      auto s = scalar(beta);
      if (failed(s))
        return failure();
      cv = MulOp::create(imp.builder, loc, cv.getType(), cv, *s);
    }
    y = AddOp::create(imp.builder, loc, *type, y, cv);
  }
  imp.define(node.output(0), y);
  return success();
}

template <typename OpTy>
LogicalResult buildAxisOp(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  int64_t rank = rankOf(*x);
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", -1), rank);
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return imp.error(node) << "axis out of range", failure();
  imp.define(node.output(0), OpTy::create(imp.builder, imp.locOf(node), *x, axis));
  return success();
}

LogicalResult buildLayerNorm(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto x = imp.operand(node, 0), scale = imp.operand(node, 1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", -1), xt.getRank());
  if (axis < 0 || axis >= xt.getRank())
    return imp.error(node) << "axis out of range", failure();
  if (OnnxImporter::intAttr(node, "stash_type", 1) != 1)
    return imp.error(node) << "stash_type other than 1 (float) is not supported",
           failure();
  Value bias;
  if (OnnxImporter::hasInput(node, 2)) {
    auto b = imp.operand(node, 2);
    if (failed(b))
      return failure();
    bias = *b;
  } else {
    ConstTensor zero;
    auto st = cast<RankedTensorType>(scale->getType());
    zero.dtype = xt.getElementType().isF64() ? onnx::TensorProto::DOUBLE
                                             : onnx::TensorProto::FLOAT;
    zero.shape.assign(st.getShape().begin(), st.getShape().end());
    zero.floats.assign(st.getNumElements(), 0.0);
    auto z = imp.materialize(zero, loc);
    if (failed(z))
      return failure();
    bias = *z;
  }
  SmallVector<int64_t> statShape(xt.getShape());
  for (int64_t i = axis; i < xt.getRank(); ++i)
    statShape[i] = 1;
  // Mean and inv-std-dev are float (stash_type 1) whatever the input type.
  auto statType = RankedTensorType::get(statShape, xt.getElementType());
  float eps = OnnxImporter::floatAttr(node, "epsilon", 1e-5f);
  auto op = LayerNormOp::create(imp.builder, loc, TypeRange{xt, statType, statType},
                                *x, *scale, bias,
                                imp.builder.getI64IntegerAttr(axis),
                                imp.builder.getF64FloatAttr(eps));
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      imp.define(node.output(i), op->getResult(i));
  return success();
}

LogicalResult buildSoftmaxCrossEntropy(OnnxImporter &imp, const NodeProto &node) {
  auto scores = imp.operand(node, 0);
  if (failed(scores))
    return failure();
  return buildCrossEntropyOf(imp, node, *scores);
}

} // namespace

LogicalResult zero::onnx_import::buildCrossEntropyOf(OnnxImporter &imp,
                                                     const NodeProto &node, Value scores) {
  Location loc = imp.locOf(node);
  auto labels = imp.operand(node, 1);
  if (failed(labels))
    return failure();
  Value weights;
  if (OnnxImporter::hasInput(node, 2)) {
    auto w = imp.operand(node, 2);
    if (failed(w))
      return failure();
    weights = *w;
  }
  std::string reduction = OnnxImporter::stringAttr(node, "reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return imp.error(node) << "reduction '" << reduction << "' is not supported",
           failure();
  auto lossType = imp.outputType(node, 0);
  if (failed(lossType))
    return failure();
  IntegerAttr ignore;
  for (const auto &a : node.attribute())
    if (a.name() == "ignore_index")
      ignore = imp.builder.getI64IntegerAttr(a.i());
  auto op = SoftmaxCrossEntropyOp::create(
      imp.builder, loc, TypeRange{*lossType, scores.getType()}, scores, *labels,
      weights, imp.builder.getStringAttr(reduction), ignore);
  imp.define(node.output(0), op.getLoss());
  if (node.output_size() > 1 && !node.output(1).empty())
    imp.define(node.output(1), op.getLogProb());
  return success();
}

namespace {


LogicalResult buildGather(OnnxImporter &imp, const NodeProto &node) {
  auto data = imp.operand(node, 0), indices = imp.operand(node, 1);
  auto type = imp.outputType(node, 0);
  if (failed(data) || failed(indices) || failed(type))
    return failure();
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", 0), rankOf(*data));
  if (axis < 0 || axis >= rankOf(*data))
    return imp.error(node) << "axis out of range", failure();
  imp.define(node.output(0), GatherOp::create(imp.builder, imp.locOf(node), *type,
                                              *data, *indices, axis));
  return success();
}

/// Reshape, Squeeze, Unsqueeze and Flatten only change the static type, which ONNX shape
/// inference has computed (allowzero included).
LogicalResult buildReshape(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  // Every extra input (shape, axes) must be known, or the shape is not static.
  for (int i = 1; i < node.input_size(); ++i)
    if (OnnxImporter::hasInput(node, i) && !imp.requireConstant(node, i))
      return failure();
  imp.define(node.output(0),
             ReshapeOp::create(imp.builder, imp.locOf(node), *type, *x));
  return success();
}

LogicalResult buildTranspose(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  int64_t rank = rankOf(*x);
  std::vector<int64_t> perm;
  if (auto p = OnnxImporter::intsAttr(node, "perm"))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  imp.define(node.output(0),
             TransposeOp::create(imp.builder, imp.locOf(node), *type, *x,
                                 imp.builder.getDenseI64ArrayAttr(perm)));
  return success();
}

/// A static slice: start and step per dimension, the size from the result type.
Value createSlice(OnnxImporter &imp, Location loc, Value x, RankedTensorType type,
                  ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
  return SliceOp::create(imp.builder, loc, type, x,
                         imp.builder.getDenseI64ArrayAttr(starts),
                         imp.builder.getDenseI64ArrayAttr(steps));
}

LogicalResult buildSlice(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t rank = xt.getRank();
  const ConstTensor *starts = imp.requireConstant(node, 1);
  const ConstTensor *ends = starts ? imp.requireConstant(node, 2) : nullptr;
  if (!starts || !ends)
    return failure();
  const ConstTensor *axes = nullptr, *steps = nullptr;
  if (OnnxImporter::hasInput(node, 3) && !(axes = imp.requireConstant(node, 3)))
    return failure();
  if (OnnxImporter::hasInput(node, 4) && !(steps = imp.requireConstant(node, 4)))
    return failure();
  int64_t n = starts->numel();
  for (const ConstTensor *c : {starts, ends, axes, steps})
    if (c && (c->isFloat() || c->numel() != n || c->shape.size() > 1))
      return imp.error(node) << "starts, ends, axes and steps must be 1-D integer "
                                "tensors of one length",
             failure();
  SmallVector<int64_t> st(rank, 0), sp(rank, 1);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = axes ? normalizeAxis(axes->ints[i], rank) : i;
    if (a < 0 || a >= rank)
      return imp.error(node) << "axis out of range", failure();
    int64_t step = steps ? steps->ints[i] : 1;
    auto bounds = sliceBounds(starts->ints[i], ends->ints[i], step, xt.getDimSize(a));
    if (!bounds)
      return imp.error(node) << "step is zero or out of range", failure();
    // An empty slice (start -1 going down) starts anywhere: 0 keeps it in bounds.
    st[a] = std::max<int64_t>(bounds->start, 0);
    sp[a] = step;
  }
  imp.define(node.output(0), createSlice(imp, imp.locOf(node), *x, *type, st, sp));
  return success();
}

LogicalResult buildSplit(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", 0), xt.getRank());
  if (axis < 0 || axis >= xt.getRank())
    return imp.error(node) << "axis out of range", failure();
  if (OnnxImporter::hasInput(node, 1) && !imp.requireConstant(node, 1))
    return failure();
  int64_t start = 0;
  for (int i = 0; i < node.output_size(); ++i) {
    auto type = imp.outputType(node, i);
    if (failed(type))
      return failure();
    // Each part is the input but along the axis (inference says how long).
    bool fits = type->getRank() == xt.getRank();
    for (int64_t d = 0; fits && d < xt.getRank(); ++d)
      fits = d == axis || type->getDimSize(d) == xt.getDimSize(d);
    if (!fits)
      return imp.error(node) << "output " << i << " of type " << *type
                             << " is not a part of the input " << xt,
             failure();
    SmallVector<int64_t> st(xt.getRank(), 0), sp(xt.getRank(), 1);
    st[axis] = std::max<int64_t>(0, std::min(start, xt.getDimSize(axis) - 1));
    imp.define(node.output(i), createSlice(imp, imp.locOf(node), *x, *type, st, sp));
    start += type->getDimSize(axis);
  }
  if (start != xt.getDimSize(axis))
    return imp.error(node) << "split sizes do not add up to the axis size",
           failure();
  return success();
}

LogicalResult buildConcat(OnnxImporter &imp, const NodeProto &node) {
  SmallVector<Value> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    auto v = imp.operand(node, i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  auto type = imp.outputType(node, 0);
  if (failed(type) || inputs.empty())
    return failure();
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", 0), type->getRank());
  imp.define(node.output(0), ConcatOp::create(imp.builder, imp.locOf(node), *type,
                                              inputs, axis));
  return success();
}

LogicalResult buildCast(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  imp.define(node.output(0), CastOp::create(imp.builder, imp.locOf(node), *type, *x));
  return success();
}

LogicalResult buildExpand(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  if (!imp.requireConstant(node, 1))
    return failure();
  imp.define(node.output(0), ExpandOp::create(imp.builder, imp.locOf(node), *type, *x));
  return success();
}

LogicalResult buildTrilu(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  int64_t k = 0;
  if (OnnxImporter::hasInput(node, 1)) {
    const ConstTensor *kc = imp.requireConstant(node, 1);
    if (!kc)
      return failure();
    if (kc->numel() != 1 || kc->isFloat())
      return imp.error(node) << "k must be an integer scalar", failure();
    k = kc->ints[0];
  }
  bool upper = OnnxImporter::intAttr(node, "upper", 1) != 0;
  imp.define(node.output(0), TriluOp::create(imp.builder, imp.locOf(node), *x,
                                             imp.builder.getBoolAttr(upper),
                                             imp.builder.getI64IntegerAttr(k)));
  return success();
}

/// ReduceMean (opset <= 17) takes axes as an attribute, ReduceSum (13+) as an
/// input; both reduce every axis when none are given, unless noop_with_empty_axes.
template <typename OpTy>
LogicalResult buildReduce(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  int64_t rank = rankOf(*x);
  std::optional<std::vector<int64_t>> axes = OnnxImporter::intsAttr(node, "axes");
  if (OnnxImporter::hasInput(node, 1)) {
    const ConstTensor *c = imp.requireConstant(node, 1);
    if (!c)
      return failure();
    if (c->isFloat())
      return imp.error(node) << "axes must be integers", failure();
    axes = c->ints;
  }
  SmallVector<int64_t> norm;
  if (!axes || axes->empty()) {
    if (OnnxImporter::intAttr(node, "noop_with_empty_axes", 0)) {
      imp.define(node.output(0), *x);
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      norm.push_back(i);
  } else {
    for (int64_t a : *axes) {
      a = normalizeAxis(a, rank);
      if (a < 0 || a >= rank)
        return imp.error(node) << "axis out of range", failure();
      norm.push_back(a);
    }
    llvm::sort(norm);
    norm.erase(std::unique(norm.begin(), norm.end()), norm.end());
  }
  bool keep = OnnxImporter::intAttr(node, "keepdims", 1) != 0;
  imp.define(node.output(0),
             OpTy::create(imp.builder, imp.locOf(node), *type, *x,
                          imp.builder.getDenseI64ArrayAttr(norm),
                          imp.builder.getBoolAttr(keep)));
  return success();
}

/// Dropout is the identity when its ratio is 0 or training_mode is false (the
/// default); the mask output, if used, is all true.
LogicalResult buildDropout(OnnxImporter &imp, const NodeProto &node) {
  auto ratioInput = imp.scalarInput(node, 1, 0.5, "ratio");
  auto trainingInput = imp.scalarInput(node, 2, 0.0, "training_mode");
  if (failed(ratioInput) || failed(trainingInput))
    return failure();
  float ratio = (float)*ratioInput;
  bool training = *trainingInput != 0;
  if (training && ratio != 0.0f)
    return imp.error(node) << "random dropout (ratio " << std::to_string(ratio).substr(0, 6)
                           << ", training_mode true) is not supported; export with "
                              "dropout 0 or in eval mode",
           failure();
  if (failed(buildIdentity(imp, node)))
    return failure();
  if (node.output_size() > 1 && !node.output(1).empty()) {
    auto type = imp.outputType(node, 1);
    if (failed(type))
      return failure();
    ConstTensor mask;
    mask.dtype = onnx::TensorProto::BOOL;
    mask.shape.assign(type->getShape().begin(), type->getShape().end());
    mask.ints.assign(type->getNumElements(), 1);
    auto m = imp.materialize(mask, imp.locOf(node));
    if (failed(m))
      return failure();
    imp.define(node.output(1), *m);
  }
  return success();
}

const llvm::StringMap<Builder> &builderTable() {
  static const llvm::StringMap<Builder> table = [] {
    // The unary ops ONNX has come from their records, below.
    llvm::StringMap<Builder> t = {
      {"MatMul", buildSimple<MatMulOp>},
      {"Gemm", buildGemm},
      {"Add", buildSimple<AddOp>},
      {"Sub", buildSimple<SubOp>},
      {"Mul", buildSimple<MulOp>},
      {"Div", buildSimple<DivOp>},
      {"Pow", buildSimple<PowOp>},
      {"Equal", buildSimple<EqualOp>},
      {"Where", buildSimple<WhereOp>},
      {"Softmax", buildAxisOp<SoftmaxOp>},
      {"LogSoftmax", buildAxisOp<LogSoftmaxOp>},
      {"LayerNormalization", buildLayerNorm},
      {"SoftmaxCrossEntropyLoss", buildSoftmaxCrossEntropy},
      {"Gather", buildGather},
      {"Reshape", buildReshape},
      {"Squeeze", buildReshape},
      {"Unsqueeze", buildReshape},
      {"Flatten", buildReshape},
      {"Transpose", buildTranspose},
      {"Slice", buildSlice},
      {"Split", buildSplit},
      {"Concat", buildConcat},
      {"Cast", buildCast},
      {"Expand", buildExpand},
      {"Trilu", buildTrilu},
      {"ReduceMean", buildReduce<ReduceMeanOp>},
      {"ReduceSum", buildReduce<ReduceSumOp>},
      {"Identity", buildIdentity},
      {"Dropout", buildDropout},
      {"IsNaN", buildIsNaN},
      {"Not", buildNot},
      {"And", buildAndOr},
      {"Or", buildAndOr},
      {"Pad", buildPad},
      {"CastLike", buildCastLike},
      {"Gelu", buildGelu},
      {"RMSNormalization", buildRmsNorm},
      {"Attention", buildAttention},
      {"NegativeLogLikelihoodLoss", buildNllLoss},
      {"SplitToSequence", buildSplitToSequence},
      {"SequenceAt", buildSequenceAt},
    };
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, COST, FUSION, ONNX, ...)                    \
  if (*ONNX)                                                                            \
    t[ONNX] = buildUnary<ID##Op>;
#include "zplan/UnaryOps.def"
    return t;
  }();
  return table;
}

} // namespace

bool zero::onnx_import::hasRunTimeKernel(const std::string &op) {
  return builderTable().count(op) != 0;
}

LogicalResult zero::onnx_import::buildNode(OnnxImporter &imp, const NodeProto &node) {
  // Constant, Shape and ConstantOfShape are always folded before this point; one
  // that reaches here could not be (an unsupported value attribute, say).
  auto it = builderTable().find(node.op_type());
  if (it == builderTable().end()) {
    if (isFoldableOp(node.op_type()))
      return imp.error(node) << "could not be evaluated at compile time: '"
                             << node.op_type()
                             << "' is folded from compile-time constants only (it has "
                                "no run-time kernel), and not every input is one",
             failure();
    return imp.error(node) << "op type '" << node.op_type() << "' is not supported",
           failure();
  }
  return it->second(imp, node);
}
