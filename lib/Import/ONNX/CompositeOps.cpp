//===- CompositeOps.cpp - ONNX ops built from several compute ops ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Ops that newer exporters write and whose meaning is a short composition of ops
// the compute dialect already has (with their gradients, kernels and fusion):
// the logic ops and IsNaN as comparisons, Pad as a concatenation, RMSNormalization
// and opset 23's Attention as their reference formulas, Gelu's tanh form, and
// NegativeLogLikelihoodLoss after a LogSoftmax as one softmax cross-entropy. Each
// follows the arithmetic order of ONNX's reference implementation (and PyTorch's,
// which it matches), so results round as theirs do.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"
#include "zero/Support/ShapeRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace zero;
using namespace zero::compute;
using namespace zero::onnx_import;
using onnx::NodeProto;

namespace {

RankedTensorType typeOfValue(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A scalar constant of element type `et` (float, i64 or bool), or null.
FailureOr<Value> scalar(OnnxImporter &imp, const NodeProto &node, Type et, double v) {
  ConstTensor c;
  if (et.isF32() || et.isF64()) {
    c.dtype = et.isF64() ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
    c.floats = {v};
  } else if (et.isInteger(1)) {
    c.dtype = onnx::TensorProto::BOOL;
    c.ints = {v != 0};
  } else if (et.isInteger(64)) {
    c.dtype = onnx::TensorProto::INT64;
    c.ints = {(int64_t)v};
  } else {
    imp.error(node) << "element type " << et << " is not supported here";
    return failure();
  }
  return imp.materialize(c, imp.locOf(node));
}

/// The broadcast type of two values with element type `et`.
RankedTensorType broadcastType(Value a, Value b, Type et) {
  auto shape = zero::broadcastShapes(typeOfValue(a).getShape(), typeOfValue(b).getShape());
  return RankedTensorType::get(shape ? *shape : SmallVector<int64_t>{}, et);
}

template <typename OpTy> Value binary(OnnxImporter &imp, Location loc, Value a, Value b) {
  return OpTy::create(imp.builder, loc,
                      broadcastType(a, b, typeOfValue(a).getElementType()), a, b);
}

Value equal(OnnxImporter &imp, Location loc, Value a, Value b) {
  return EqualOp::create(imp.builder, loc,
                         broadcastType(a, b, imp.builder.getI1Type()), a, b);
}

Value where(OnnxImporter &imp, Location loc, Value c, Value a, Value b) {
  auto ab = broadcastType(a, b, typeOfValue(a).getElementType());
  auto shape = zero::broadcastShapes(typeOfValue(c).getShape(), ab.getShape());
  return WhereOp::create(imp.builder, loc,
                         RankedTensorType::get(*shape, ab.getElementType()), c, a, b);
}

Value transpose(OnnxImporter &imp, Location loc, Value x, ArrayRef<int64_t> perm) {
  auto t = typeOfValue(x);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return TransposeOp::create(imp.builder, loc,
                             RankedTensorType::get(shape, t.getElementType()), x,
                             imp.builder.getDenseI64ArrayAttr(perm));
}

Value reshape(OnnxImporter &imp, Location loc, Value x, ArrayRef<int64_t> shape) {
  return ReshapeOp::create(
      imp.builder, loc, RankedTensorType::get(shape, typeOfValue(x).getElementType()), x);
}

/// Defines output 0 as `v` after checking it has the type inference gave it.
LogicalResult defineChecked(OnnxImporter &imp, const NodeProto &node, Value v) {
  auto type = imp.outputType(node, 0);
  if (failed(type))
    return failure();
  if (*type != v.getType())
    return imp.error(node) << "built a result of type " << v.getType()
                           << " where ONNX inference says " << *type,
           failure();
  imp.define(node.output(0), v);
  return success();
}

/// Every output after the first must be absent or unused: the composition builds
/// only the first.
LogicalResult onlyFirstOutput(OnnxImporter &imp, const NodeProto &node) {
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return imp.error(node) << "output " << i << " ('" << node.output(i)
                             << "') is not supported; only the first output is",
             failure();
  return success();
}

} // namespace

/// IsNaN(x) = not (x == x).
LogicalResult zero::onnx_import::buildIsNaN(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  auto no = scalar(imp, node, imp.builder.getI1Type(), 0);
  if (failed(no))
    return failure();
  return defineChecked(imp, node, equal(imp, loc, equal(imp, loc, *x, *x), *no));
}

/// Not(x) = (x == false).
LogicalResult zero::onnx_import::buildNot(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto no = scalar(imp, node, imp.builder.getI1Type(), 0);
  if (failed(x) || failed(no))
    return failure();
  return defineChecked(imp, node, equal(imp, imp.locOf(node), *x, *no));
}

/// And(a, b) = a ? b : false; Or(a, b) = a ? true : b (broadcast).
LogicalResult zero::onnx_import::buildAndOr(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto a = imp.operand(node, 0), b = imp.operand(node, 1);
  bool isAnd = node.op_type() == "And";
  auto constant = scalar(imp, node, imp.builder.getI1Type(), isAnd ? 0 : 1);
  if (failed(a) || failed(b) || failed(constant))
    return failure();
  if (!zero::broadcastShapes(typeOfValue(*a).getShape(), typeOfValue(*b).getShape()))
    return imp.error(node) << "operands do not broadcast", failure();
  Value result = isAnd ? where(imp, loc, *a, *b, *constant)
                       : where(imp, loc, *a, *constant, *b);
  return defineChecked(imp, node, result);
}

/// Pad (constant mode): each padded axis becomes a concatenation of blocks of the
/// pad value around the input; negative pads slice instead.
LogicalResult zero::onnx_import::buildPad(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  std::string mode = OnnxImporter::stringAttr(node, "mode", "constant");
  if (mode != "constant")
    return imp.error(node) << "mode '" << mode
                           << "' is not supported (only 'constant' is)",
           failure();
  auto xt = typeOfValue(*x);
  int64_t rank = xt.getRank();
  const ConstTensor *pads = imp.requireConstant(node, 1);
  if (!pads)
    return failure();
  std::vector<int64_t> axes;
  if (OnnxImporter::hasInput(node, 3)) {
    const ConstTensor *a = imp.requireConstant(node, 3);
    if (!a)
      return failure();
    for (int64_t k = 0; k < a->numel(); ++k) {
      int64_t axis = normalizeAxis(a->intAt(k), rank);
      if (axis < 0 || axis >= rank)
        return imp.error(node) << "axis out of range", failure();
      axes.push_back(axis);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (pads->isFloat() || pads->numel() != 2 * (int64_t)axes.size())
    return imp.error(node) << "pads must be " << 2 * axes.size() << " integers",
           failure();
  // The pad value: input 2 (a scalar of the input's type), 0 when absent.
  auto fillInput = imp.scalarInput(node, 2, 0.0, "the constant value");
  if (failed(fillInput))
    return failure();
  double fill = *fillInput;
  Value y = *x;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = axes[k], before = pads->intAt(k), after = pads->intAt(k + axes.size());
    auto yt = typeOfValue(y);
    int64_t size = yt.getDimSize(axis);
    // Negative pads remove elements: a slice first.
    int64_t cutBefore = std::max<int64_t>(-before, 0), cutAfter = std::max<int64_t>(-after, 0);
    if (cutBefore + cutAfter > size)
      return imp.error(node) << "negative pads remove more than axis " << axis << " has",
             failure();
    if (cutBefore || cutAfter) {
      SmallVector<int64_t> shape(yt.getShape()), starts(rank, 0), steps(rank, 1);
      shape[axis] = size - cutBefore - cutAfter;
      starts[axis] = cutBefore;
      y = SliceOp::create(imp.builder, loc,
                          RankedTensorType::get(shape, yt.getElementType()), y,
                          imp.builder.getDenseI64ArrayAttr(starts),
                          imp.builder.getDenseI64ArrayAttr(steps));
      yt = typeOfValue(y);
    }
    SmallVector<Value> parts;
    auto block = [&](int64_t n) -> LogicalResult {
      ConstTensor c;
      c.shape.assign(yt.getShape().begin(), yt.getShape().end());
      c.shape[axis] = n;
      int64_t count = checkedNumel(c.shape);
      if (count < 0)
        return imp.error(node) << "the padding is too large", failure();
      Type et = yt.getElementType();
      if (et.isF32() || et.isF64()) {
        c.dtype = et.isF64() ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
        c.floats.assign(count, fill);
      } else if (et.isInteger(64) || et.isInteger(32) || et.isInteger(1)) {
        c.dtype = et.isInteger(64)   ? onnx::TensorProto::INT64
                  : et.isInteger(32) ? onnx::TensorProto::INT32
                                     : onnx::TensorProto::BOOL;
        c.ints.assign(count, (int64_t)fill);
      } else {
        return imp.error(node) << "element type " << et << " is not supported",
               failure();
      }
      auto v = imp.materialize(c, loc);
      if (failed(v))
        return failure();
      parts.push_back(*v);
      return success();
    };
    int64_t padBefore = std::max<int64_t>(before, 0), padAfter = std::max<int64_t>(after, 0);
    if (!padBefore && !padAfter)
      continue;
    if (padBefore && failed(block(padBefore)))
      return failure();
    parts.push_back(y);
    if (padAfter && failed(block(padAfter)))
      return failure();
    SmallVector<int64_t> shape(yt.getShape());
    shape[axis] += padBefore + padAfter;
    y = ConcatOp::create(imp.builder, loc, RankedTensorType::get(shape, yt.getElementType()),
                         parts, axis);
  }
  return defineChecked(imp, node, y);
}

/// CastLike(x, like) = Cast(x, to = like's element type).
LogicalResult zero::onnx_import::buildCastLike(OnnxImporter &imp, const NodeProto &node) {
  auto x = imp.operand(node, 0);
  auto type = imp.outputType(node, 0);
  if (failed(x) || failed(type))
    return failure();
  Value y = x->getType() == *type
                ? *x
                : CastOp::create(imp.builder, imp.locOf(node), *type, *x).getResult();
  imp.define(node.output(0), y);
  return success();
}

/// Gelu-20: the exact (erf) form is compute.gelu; approximate="tanh" is
/// compute.gelu_tanh.
LogicalResult zero::onnx_import::buildGelu(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  std::string approximate = OnnxImporter::stringAttr(node, "approximate", "none");
  if (approximate == "none")
    return defineChecked(imp, node, GeluOp::create(imp.builder, loc, *x));
  if (approximate == "tanh")
    return defineChecked(imp, node, GeluTanhOp::create(imp.builder, loc, *x));
  return imp.error(node) << "approximate '" << approximate << "' is not supported",
         failure();
}

/// RMSNormalization-23: x / sqrt(mean(x^2 over axis..last) + epsilon) * scale.
LogicalResult zero::onnx_import::buildRmsNorm(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto x = imp.operand(node, 0), scale = imp.operand(node, 1);
  if (failed(x) || failed(scale) || failed(onlyFirstOutput(imp, node)))
    return failure();
  auto xt = typeOfValue(*x);
  if (OnnxImporter::intAttr(node, "stash_type", 1) != 1 ||
      !(xt.getElementType().isF32() || xt.getElementType().isF64()))
    return imp.error(node) << "only f32 or f64 inputs with stash_type 1 (float) are "
                              "supported",
           failure();
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", -1), xt.getRank());
  if (axis < 0 || axis >= xt.getRank())
    return imp.error(node) << "axis out of range", failure();
  Type et = xt.getElementType();
  auto two = scalar(imp, node, et, 2.0);
  auto eps = scalar(imp, node, et, OnnxImporter::floatAttr(node, "epsilon", 1e-5f));
  if (failed(two) || failed(eps))
    return failure();
  SmallVector<int64_t> axes, statShape(xt.getShape());
  for (int64_t i = axis; i < xt.getRank(); ++i) {
    axes.push_back(i);
    statShape[i] = 1;
  }
  Value square = binary<PowOp>(imp, loc, *x, *two);
  Value mean = ReduceMeanOp::create(imp.builder, loc, RankedTensorType::get(statShape, et),
                                    square, imp.builder.getDenseI64ArrayAttr(axes),
                                    imp.builder.getBoolAttr(true));
  Value rms = SqrtOp::create(imp.builder, loc, binary<AddOp>(imp, loc, mean, *eps));
  Value normalized = binary<MulOp>(imp, loc, *x, ReciprocalOp::create(imp.builder, loc, rms));
  return defineChecked(imp, node, binary<MulOp>(imp, loc, normalized, *scale));
}

/// Attention-23 (and 24, 25 without their added inputs): softmax(Q Kᵀ · scale +
/// mask) V per head, K and V heads shared by groups of query heads. Q and K are
/// each scaled by sqrt(scale), as ONNX's reference and PyTorch's math path do.
LogicalResult zero::onnx_import::buildAttention(OnnxImporter &imp, const NodeProto &node) {
  Location loc = imp.locOf(node);
  if (failed(onlyFirstOutput(imp, node)))
    return failure();
  for (int i = 4; i < node.input_size(); ++i)
    if (OnnxImporter::hasInput(node, i))
      return imp.error(node) << "input " << i << " ('" << node.input(i)
                             << "': past key/value or sequence lengths) is not "
                                "supported",
             failure();
  if (OnnxImporter::floatAttr(node, "softcap", 0.0f) != 0.0f)
    return imp.error(node) << "softcap is not supported", failure();
  for (const char *window : {"left_window_size", "right_window_size"})
    if (OnnxImporter::intAttr(node, window, -1) != -1)
      return imp.error(node) << "a sliding window (" << window << ") is not supported",
             failure();
  auto q = imp.operand(node, 0), k = imp.operand(node, 1), v = imp.operand(node, 2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  auto qt = typeOfValue(*q);
  Type et = qt.getElementType();
  if (!(et.isF32() || et.isF64()))
    return imp.error(node) << "element type " << et << " is not supported", failure();
  bool threeD = qt.getRank() == 3;
  if (!threeD && qt.getRank() != 4)
    return imp.error(node) << "Q must be 3-D or 4-D", failure();
  // 3-D inputs are [B, S, heads * size]: split the heads out, as [B, heads, S, size].
  auto heads = [&](Value x, const char *attr) -> FailureOr<Value> {
    if (!threeD)
      return x;
    auto t = typeOfValue(x);
    int64_t n = OnnxImporter::intAttr(node, attr, 0);
    if (t.getRank() != 3 || n <= 0 || t.getDimSize(2) % n)
      return imp.error(node) << "3-D inputs need attribute " << attr
                             << " dividing their last dimension",
             failure();
    Value r = reshape(imp, loc, x, {t.getDimSize(0), t.getDimSize(1), n, t.getDimSize(2) / n});
    return transpose(imp, loc, r, {0, 2, 1, 3});
  };
  auto q4 = heads(*q, "q_num_heads"), k4 = heads(*k, "kv_num_heads"),
       v4 = heads(*v, "kv_num_heads");
  if (failed(q4) || failed(k4) || failed(v4))
    return failure();
  auto q4t = typeOfValue(*q4), k4t = typeOfValue(*k4), v4t = typeOfValue(*v4);
  if (k4t.getRank() != 4 || v4t.getRank() != 4)
    return imp.error(node) << "K and V must have Q's rank", failure();
  int64_t batch = q4t.getDimSize(0), qHeads = q4t.getDimSize(1), qLen = q4t.getDimSize(2),
          size = q4t.getDimSize(3), kvHeads = k4t.getDimSize(1), kvLen = k4t.getDimSize(2);
  if (kvHeads <= 0 || qHeads % kvHeads || v4t.getDimSize(1) != kvHeads ||
      k4t.getDimSize(3) != size || v4t.getDimSize(2) != kvLen)
    return imp.error(node) << "Q " << q4t << ", K " << k4t << " and V " << v4t
                           << " do not fit (query heads must be a multiple of key "
                              "heads)",
           failure();
  float scale = OnnxImporter::floatAttr(node, "scale", 1.0f / std::sqrt((float)size));
  bool causal = OnnxImporter::intAttr(node, "is_causal", 0) != 0;
  int64_t vSize = v4t.getDimSize(3);
  auto restoreLayout = [&](Value y) {
    if (threeD)
      y = reshape(imp, loc, transpose(imp, loc, y, {0, 2, 1, 3}),
                  {batch, qLen, qHeads * vSize});
    return y;
  };
  if (imp.options.fuseAttention) {
    // One fused op (its kernels keep no score matrix); the mask as it is.
    Value mask;
    if (OnnxImporter::hasInput(node, 3)) {
      auto m = imp.operand(node, 3);
      if (failed(m))
        return failure();
      mask = *m;
    }
    Type lseType = et.isF64() ? et : imp.builder.getF32Type();
    auto fused = AttentionOp::create(
        imp.builder, loc, RankedTensorType::get({batch, qHeads, qLen, vSize}, et),
        RankedTensorType::get({batch, qHeads, qLen}, lseType), *q4, *k4, *v4, mask,
        imp.builder.getF64FloatAttr(scale), imp.builder.getBoolAttr(causal));
    if (failed(mlir::verify(fused)))
      return imp.error(node) << "the fused attention does not fit its operands", failure();
    return defineChecked(imp, node, restoreLayout(fused.getResult()));
  }
  // Grouped-query attention: each K/V head serves qHeads / kvHeads query heads.
  auto repeat = [&](Value x) -> Value {
    if (kvHeads == qHeads)
      return x;
    auto t = typeOfValue(x);
    int64_t group = qHeads / kvHeads;
    Value r = reshape(imp, loc, x, {batch, kvHeads, 1, t.getDimSize(2), t.getDimSize(3)});
    Value e = ExpandOp::create(
        imp.builder, loc,
        RankedTensorType::get({batch, kvHeads, group, t.getDimSize(2), t.getDimSize(3)}, et),
        r);
    return reshape(imp, loc, e, {batch, qHeads, t.getDimSize(2), t.getDimSize(3)});
  };
  Value keys = repeat(*k4), values = repeat(*v4);
  auto rootScale = scalar(imp, node, et, std::sqrt((double)scale));
  if (failed(rootScale))
    return failure();
  Value qs = binary<MulOp>(imp, loc, *q4, *rootScale);
  Value ks = binary<MulOp>(imp, loc, transpose(imp, loc, keys, {0, 1, 3, 2}), *rootScale);
  Value scores = MatMulOp::create(imp.builder, loc,
                                  RankedTensorType::get({batch, qHeads, qLen, kvLen}, et),
                                  qs, ks);
  auto lowest = scalar(imp, node, et, -std::numeric_limits<double>::infinity());
  if (failed(lowest))
    return failure();
  bool masked = false;
  if (causal) {
    masked = true;
    // Query i sees keys 0..i (the mask's top-left corner, as the reference).
    ConstTensor causal;
    causal.dtype = onnx::TensorProto::BOOL;
    causal.shape = {qLen, kvLen};
    if (checkedNumel(causal.shape) < 0)
      return imp.error(node) << "the causal mask is too large", failure();
    for (int64_t i = 0; i < qLen; ++i)
      for (int64_t j = 0; j < kvLen; ++j)
        causal.ints.push_back(j <= i);
    auto c = imp.materialize(causal, loc);
    if (failed(c))
      return failure();
    scores = where(imp, loc, *c, scores, *lowest);
  }
  if (OnnxImporter::hasInput(node, 3)) {
    auto mask = imp.operand(node, 3);
    if (failed(mask))
      return failure();
    Type mt = typeOfValue(*mask).getElementType();
    masked = true;
    if (mt.isInteger(1))
      scores = where(imp, loc, *mask, scores, *lowest);
    else if (mt == et)
      scores = binary<AddOp>(imp, loc, scores, *mask);
    else
      return imp.error(node) << "the mask's element type " << mt
                             << " is neither bool nor Q's",
             failure();
    if (typeOfValue(scores).getShape() !=
        ArrayRef<int64_t>({batch, qHeads, qLen, kvLen}))
      return imp.error(node) << "the mask does not broadcast to the scores", failure();
  }
  Value probs = SoftmaxOp::create(imp.builder, loc, scores, 3);
  if (masked) {
    // A row with every key masked is all -inf, whose softmax is NaN; ONNX (and
    // PyTorch's exported SDPA) make it zeros.
    auto zero = scalar(imp, node, et, 0.0);
    if (failed(zero))
      return failure();
    probs = where(imp, loc, equal(imp, loc, probs, probs), probs, *zero);
  }
  Value y = MatMulOp::create(imp.builder, loc,
                             RankedTensorType::get({batch, qHeads, qLen, vSize}, et), probs,
                             values);
  return defineChecked(imp, node, restoreLayout(y));
}

/// NegativeLogLikelihoodLoss of a LogSoftmax over the class axis is softmax
/// cross-entropy of the LogSoftmax's input (what PyTorch's cross_entropy is).
LogicalResult zero::onnx_import::buildNllLoss(OnnxImporter &imp, const NodeProto &node) {
  auto producer = imp.producers.find(node.input(0));
  const NodeProto *logSoftmax =
      producer == imp.producers.end() ? nullptr : producer->second;
  auto x = logSoftmax && logSoftmax->op_type() == "LogSoftmax"
               ? imp.operand(*logSoftmax, 0)
               : FailureOr<Value>(failure());
  if (failed(x) ||
      normalizeAxis(OnnxImporter::intAttr(*logSoftmax, "axis", -1), typeOfValue(*x).getRank()) !=
          1)
    return imp.error(node) << "input 0 must be a LogSoftmax over axis 1 (log-"
                              "probabilities from any other source are not supported)",
           failure();
  return buildCrossEntropyOf(imp, node, *x);
}

/// SplitToSequence: the parts as Split makes them, kept as a sequence value that
/// SequenceAt reads with a constant position.
LogicalResult zero::onnx_import::buildSplitToSequence(OnnxImporter &imp,
                                                      const NodeProto &node) {
  Location loc = imp.locOf(node);
  auto x = imp.operand(node, 0);
  if (failed(x))
    return failure();
  auto xt = typeOfValue(*x);
  int64_t axis = normalizeAxis(OnnxImporter::intAttr(node, "axis", 0), xt.getRank());
  if (axis < 0 || axis >= xt.getRank())
    return imp.error(node) << "axis out of range", failure();
  int64_t size = xt.getDimSize(axis);
  std::vector<int64_t> lengths;
  if (OnnxImporter::hasInput(node, 1)) {
    const ConstTensor *split = imp.requireConstant(node, 1);
    if (!split)
      return failure();
    if (split->shape.empty()) {
      int64_t n = split->intAt(0);
      if (n <= 0)
        return imp.error(node) << "split must be positive", failure();
      for (int64_t at = 0; at < size; at += n)
        lengths.push_back(std::min(n, size - at));
    } else {
      for (int64_t k = 0; k < split->numel(); ++k)
        lengths.push_back(split->intAt(k));
    }
  } else {
    lengths.assign(size, 1);
  }
  bool keep = OnnxImporter::intAttr(node, "keepdims", 1) != 0 ||
              OnnxImporter::hasInput(node, 1);
  std::vector<Value> parts;
  int64_t start = 0;
  for (int64_t len : lengths) {
    if (len < 0 || start + len > size)
      return imp.error(node) << "split lengths exceed the axis", failure();
    SmallVector<int64_t> shape(xt.getShape()), starts(xt.getRank(), 0), steps(xt.getRank(), 1);
    shape[axis] = len;
    starts[axis] = std::min(start, std::max<int64_t>(size - 1, 0));
    Value part = SliceOp::create(imp.builder, loc,
                                 RankedTensorType::get(shape, xt.getElementType()), *x,
                                 imp.builder.getDenseI64ArrayAttr(starts),
                                 imp.builder.getDenseI64ArrayAttr(steps));
    if (!keep) {
      shape.erase(shape.begin() + axis);
      part = reshape(imp, loc, part, shape);
    }
    parts.push_back(part);
    start += len;
  }
  if (start != size)
    return imp.error(node) << "split lengths do not add up to the axis size", failure();
  imp.sequences[node.output(0)] = std::move(parts);
  return success();
}

LogicalResult zero::onnx_import::buildSequenceAt(OnnxImporter &imp, const NodeProto &node) {
  auto seq = imp.sequences.find(node.input(0));
  if (seq == imp.sequences.end())
    return imp.error(node) << "input 0 must come from SplitToSequence", failure();
  const ConstTensor *position = imp.requireConstant(node, 1);
  if (!position)
    return failure();
  int64_t n = seq->second.size(), at = position->intAt(0);
  if (position->numel() != 1 || at < -n || at >= n)
    return imp.error(node) << "position out of range", failure();
  // ONNX inference gives a sequence's elements one shape, unknown where the parts
  // differ; the part itself has its static type.
  imp.define(node.output(0), seq->second[at < 0 ? at + n : at]);
  return success();
}
