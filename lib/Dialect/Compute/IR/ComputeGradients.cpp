//===- ComputeGradients.cpp - The gradient rule of each compute op --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each differentiable op's DifferentiableOpInterface::buildGradients: the
// vector-Jacobian product of the op, written with compute ops (and the backward
// ops of ComputeTrainingOps.td where forward ops would be clumsy). Broadcast
// operands get their adjoint summed back to their own shape. A new op declares
// Compute_Differentiable in ODS and defines its rule here.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

#include <cmath>

using namespace mlir;
using namespace zero::compute;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }

/// Small builder of compute ops that works out result types itself.
struct GradBuilder {
  OpBuilder &b;
  Location loc;

  Value scalar(double v, Type elementType) {
    auto t = RankedTensorType::get({}, elementType);
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(t, b.getFloatAttr(elementType, v)));
  }
  Value zerosLike(Type type) {
    auto t = cast<RankedTensorType>(type);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
  }
  RankedTensorType broadcastType(Value x, Value y) {
    auto shape = broadcastShapes(typeOf(x).getShape(), typeOf(y).getShape());
    return RankedTensorType::get(*shape, typeOf(x).getElementType());
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, broadcastType(x, y), x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, broadcastType(x, y), x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, broadcastType(x, y), x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, broadcastType(x, y), x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value exp(Value x) { return ExpOp::create(b, loc, x); }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return ReshapeOp::create(b, loc, typeOf(x).clone(shape), x);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(typeOf(x).getDimSize(p));
    return TransposeOp::create(b, loc, typeOf(x).clone(shape), x,
                               b.getDenseI64ArrayAttr(perm));
  }
  /// Transposes the last two dimensions.
  Value transposeLast2(Value x) {
    int64_t r = typeOf(x).getRank();
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, r));
    std::swap(perm[r - 1], perm[r - 2]);
    return transpose(x, perm);
  }
  Value matmul(Value x, Value y) {
    auto shape = matmulShape(typeOf(x).getShape(), typeOf(y).getShape());
    return MatMulOp::create(b, loc, typeOf(x).clone(*shape), x, y);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < typeOf(x).getRank(); ++d) {
      if (!llvm::is_contained(axes, d))
        shape.push_back(typeOf(x).getDimSize(d));
      else if (keepdims)
        shape.push_back(1);
    }
    return ReduceSumOp::create(b, loc, typeOf(x).clone(shape), x,
                               b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdims));
  }
  /// Sums `g` (shaped like a broadcast result) back to `shape`: over its extra
  /// leading dimensions and over dimensions where `shape` has a stretched 1.
  Value unbroadcast(Value g, ArrayRef<int64_t> shape) {
    ArrayRef<int64_t> gs = typeOf(g).getShape();
    if (gs == shape)
      return g;
    int64_t extra = gs.size() - shape.size();
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < (int64_t)gs.size(); ++d)
      if (d < extra || (shape[d - extra] == 1 && gs[d] != 1))
        axes.push_back(d);
    Value r = axes.empty() ? g : reduceSum(g, axes, /*keepdims=*/false);
    return reshape(r, shape);
  }
  /// Broadcasts `g` from the reduced shape back to `shape` (the adjoint of a
  /// reduction over `axes`).
  Value expandFromReduction(Value g, ArrayRef<int64_t> shape, ArrayRef<int64_t> axes) {
    SmallVector<int64_t> kept(shape);
    for (int64_t a : axes)
      kept[a] = 1;
    Value k = reshape(g, kept);
    return ExpandOp::create(b, loc, typeOf(k).clone(shape), k);
  }
};

/// Every rule has this shape: fill `grads` (operand order) from result adjoints.
using Grads = SmallVectorImpl<Value>;

LogicalResult matmulGrad(GradBuilder &gb, MatMulOp op, Value g, ArrayRef<bool> need,
                         Grads &grads) {
  // Promote 1-D operands to matrices, as the forward did, and g with them.
  Value a = op.getLhs(), bm = op.getRhs();
  SmallVector<int64_t> as(typeOf(a).getShape()), bs(typeOf(bm).getShape());
  SmallVector<int64_t> gs(typeOf(g).getShape());
  if (as.size() == 1) {
    as.insert(as.begin(), 1);
    gs.insert(gs.end() - (bs.size() == 1 ? 0 : 1), 1);
  }
  if (bs.size() == 1) {
    bs.push_back(1);
    gs.push_back(1);
  }
  Value a2 = gb.reshape(a, as), b2 = gb.reshape(bm, bs), g2 = gb.reshape(g, gs);
  if (need[0]) // dA = g @ B^T, summed over broadcast batch dimensions
    grads[0] = gb.reshape(gb.unbroadcast(gb.matmul(g2, gb.transposeLast2(b2)), as),
                          typeOf(a).getShape());
  if (need[1] && bs.size() == 2 && as.size() > 2) {
    // One B for every batch of A (a linear layer): dB = A^T @ g with the batch
    // folded into the rows, one product instead of a product per batch and a sum.
    int64_t rows = 1;
    for (int64_t d : ArrayRef<int64_t>(as).drop_back())
      rows *= d;
    Value aRows = gb.reshape(a2, {rows, as.back()}),
          gRows = gb.reshape(g2, {rows, bs.back()});
    grads[1] =
        gb.reshape(gb.matmul(gb.transposeLast2(aRows), gRows), typeOf(bm).getShape());
  } else if (need[1]) { // dB = A^T @ g, summed over broadcast batch dimensions
    grads[1] = gb.reshape(gb.unbroadcast(gb.matmul(gb.transposeLast2(a2), g2), bs),
                          typeOf(bm).getShape());
  }
  return success();
}

LogicalResult powGrad(GradBuilder &gb, PowOp op, Value g, ArrayRef<bool> need,
                      Grads &grads) {
  Value x = op.getLhs(), e = op.getRhs(), y = op.getResult();
  Type et = typeOf(x).getElementType();
  if (!isa<FloatType>(et))
    return op.emitOpError("has no gradient for an integer base");
  Value ef = e;
  if (typeOf(e).getElementType() != et)
    ef = CastOp::create(gb.b, gb.loc, typeOf(e).clone(et), e);
  if (need[0]) { // d/dx = e * x^(e-1)
    Value em1 = gb.sub(ef, gb.scalar(1.0, et));
    Value xp = PowOp::create(gb.b, gb.loc, gb.broadcastType(x, em1), x, em1);
    grads[0] = gb.unbroadcast(gb.mul(gb.mul(g, ef), xp), typeOf(x).getShape());
  }
  if (need[1]) { // d/de = y * log(x)
    Value t = gb.mul(gb.mul(g, y), LogOp::create(gb.b, gb.loc, x));
    grads[1] = gb.unbroadcast(t, typeOf(e).getShape());
  }
  return success();
}

LogicalResult layerNormGrad(GradBuilder &gb, LayerNormOp op, ArrayRef<Value> rg,
                            ArrayRef<bool> need, Grads &grads) {
  if (rg[1] || rg[2])
    return op.emitOpError("has no gradient through its mean and inv_std_dev results");
  if (!rg[0])
    return success();
  auto x = typeOf(op.getInput());
  SmallVector<int64_t> norm(x.getShape().drop_front(op.getAxisAttr().getInt()));
  auto normType = x.clone(norm);
  auto lng = LayerNormGradOp::create(
      gb.b, gb.loc, TypeRange{x, normType, normType}, op.getInput(), op.getScale(),
      op.getMean(), op.getInvStdDev(), rg[0], /*accumulate=*/Value(), op.getAxisAttr());
  if (need[0])
    grads[0] = lng.getInputGrad();
  if (need[1])
    grads[1] = gb.unbroadcast(lng.getScaleGrad(), typeOf(op.getScale()).getShape());
  if (need[2])
    grads[2] = gb.unbroadcast(lng.getBiasGrad(), typeOf(op.getBias()).getShape());
  return success();
}

LogicalResult crossEntropyGrad(GradBuilder &gb, SoftmaxCrossEntropyOp op,
                               ArrayRef<Value> rg, ArrayRef<bool> need, Grads &grads) {
  if (op.getWeights() && need.size() > 2 && need[2])
    return op.emitOpError("has no gradient with respect to its class weights");
  if (!need[0])
    return success();
  Value ds;
  Type scores = op.getScores().getType();
  if (rg[0])
    ds = SoftmaxCrossEntropyGradOp::create(gb.b, gb.loc, scores, op.getLogProb(),
                                           op.getLabels(), rg[0], op.getWeights(),
                                           op.getReductionAttr(), op.getIgnoreIndexAttr());
  if (rg[1]) { // log_prob = log_softmax(scores) along dimension 1
    Value s = gb.reduceSum(rg[1], {1}, /*keepdims=*/true);
    Value d = gb.sub(rg[1], gb.mul(gb.exp(op.getLogProb()), s));
    if (d.getType() != scores) // f32 log-probabilities of 16-bit scores
      d = CastOp::create(gb.b, gb.loc, scores, d);
    ds = ds ? gb.add(ds, d) : d;
  }
  grads[0] = ds;
  return success();
}

/// A one-operand rule's result: `v` (null unless needed) as operand 0's adjoint.
LogicalResult firstOnly(ArrayRef<bool> need, Grads &grads, Value v) {
  if (need[0])
    grads[0] = v;
  return success();
}

} // namespace

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  AddOp o = *this;
  if (need[0])
    grads[0] = gb.unbroadcast(g, shapeOf(o.getLhs()));
  if (need[1])
    grads[1] = gb.unbroadcast(g, shapeOf(o.getRhs()));
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  SubOp o = *this;
  if (need[0])
    grads[0] = gb.unbroadcast(g, shapeOf(o.getLhs()));
  if (need[1])
    grads[1] = gb.unbroadcast(gb.neg(g), shapeOf(o.getRhs()));
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  MulOp o = *this;
  if (need[0])
    grads[0] = gb.unbroadcast(gb.mul(g, o.getRhs()), shapeOf(o.getLhs()));
  if (need[1])
    grads[1] = gb.unbroadcast(gb.mul(g, o.getLhs()), shapeOf(o.getRhs()));
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  DivOp o = *this;
  if (need[0])
    grads[0] = gb.unbroadcast(gb.div(g, o.getRhs()), shapeOf(o.getLhs()));
  if (need[1]) // d(x/y)/dy = -(x/y)/y
    grads[1] = gb.unbroadcast(gb.neg(gb.div(gb.mul(g, o.getResult()), o.getRhs())),
                              shapeOf(o.getRhs()));
  return success();
}

LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  PowOp o = *this;
  return powGrad(gb, o, g, need, grads);
}

LogicalResult NegOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  return firstOnly(need, grads, need[0] ? gb.neg(g) : Value());
}

LogicalResult SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                     ArrayRef<bool> need, SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  SqrtOp o = *this;
  // 1 / (2 sqrt(x))
  Type et = typeOf(g).getElementType();
  return firstOnly(need, grads,
                   need[0] ? gb.div(g, gb.mul(gb.scalar(2.0, et), o.getResult()))
                           : Value());
}

LogicalResult ReciprocalOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                           ArrayRef<bool> need,
                                           SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ReciprocalOp o = *this;
  // -1/x^2 = -y^2
  Value y = o.getResult();
  return firstOnly(need, grads, need[0] ? gb.neg(gb.mul(g, gb.mul(y, y))) : Value());
}

LogicalResult ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ExpOp o = *this;
  return firstOnly(need, grads, need[0] ? gb.mul(g, o.getResult()) : Value());
}

LogicalResult LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  LogOp o = *this;
  return firstOnly(need, grads, need[0] ? gb.div(g, o.getInput()) : Value());
}

LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                     ArrayRef<bool> need, SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ReluOp o = *this;
  return firstOnly(need, grads,
                   need[0] ? Value(ReluGradOp::create(b, gb.loc, o.getInput(), g))
                           : Value());
}

LogicalResult TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                     ArrayRef<bool> need, SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  TanhOp o = *this;
  // 1 - y^2
  Value y = o.getResult();
  Type et = typeOf(g).getElementType();
  return firstOnly(need, grads,
                   need[0] ? gb.mul(g, gb.sub(gb.scalar(1.0, et), gb.mul(y, y)))
                           : Value());
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                        ArrayRef<bool> need,
                                        SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  SigmoidOp o = *this;
  // y (1 - y)
  Value y = o.getResult();
  Type et = typeOf(g).getElementType();
  return firstOnly(need, grads,
                   need[0] ? gb.mul(g, gb.mul(y, gb.sub(gb.scalar(1.0, et), y)))
                           : Value());
}

LogicalResult SoftplusOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                         ArrayRef<bool> need,
                                         SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  // sigmoid(x)
  Value s = SigmoidOp::create(b, gb.loc, getInput());
  return firstOnly(need, grads, need[0] ? gb.mul(g, s) : Value());
}

LogicalResult ErfOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg, ArrayRef<bool> need,
                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ErfOp o = *this;
  // 2/sqrt(pi) exp(-x^2)
  Value x = o.getInput();
  Type et = typeOf(g).getElementType();
  Value d = gb.mul(gb.scalar(2.0 / std::sqrt(M_PI), et), gb.exp(gb.neg(gb.mul(x, x))));
  return firstOnly(need, grads, need[0] ? gb.mul(g, d) : Value());
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                     ArrayRef<bool> need, SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  GeluOp o = *this;
  return firstOnly(need, grads,
                   need[0] ? Value(GeluGradOp::create(b, gb.loc, o.getInput(), g))
                           : Value());
}

LogicalResult GeluTanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                         ArrayRef<bool> need, SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  GeluTanhOp o = *this;
  return firstOnly(need, grads,
                   need[0] ? Value(GeluTanhGradOp::create(b, gb.loc, o.getInput(), g))
                           : Value());
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                     ArrayRef<bool> need, SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  CastOp o = *this;
  if (!need[0])
    return success();
  if (!isa<FloatType>(typeOf(o.getInput()).getElementType()))
    return success();
  grads[0] = CastOp::create(b, gb.loc, o.getInput().getType(), g);
  return success();
}

LogicalResult WhereOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                      ArrayRef<bool> need,
                                      SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  WhereOp o = *this;
  Value zero = gb.scalar(0.0, typeOf(g).getElementType());
  if (need[1])
    grads[1] =
        gb.unbroadcast(WhereOp::create(b, gb.loc, g.getType(), o.getCondition(), g, zero),
                       shapeOf(o.getLhs()));
  if (need[2])
    grads[2] =
        gb.unbroadcast(WhereOp::create(b, gb.loc, g.getType(), o.getCondition(), zero, g),
                       shapeOf(o.getRhs()));
  return success();
}

LogicalResult MatMulOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                       ArrayRef<bool> need,
                                       SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  MatMulOp o = *this;
  return matmulGrad(gb, o, g, need, grads);
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                        ArrayRef<bool> need,
                                        SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  SoftmaxOp o = *this;
  // y (g - sum(g y)), one kernel
  // With a folded scale s and bias: the input's gradient is s times that, the
  // bias's that summed to its shape.
  auto softmaxGrad = [&](FloatAttr scale) {
    return SoftmaxGradOp::create(b, gb.loc, g.getType(), o.getResult(), g,
                                 o.getAxisAttr(), scale)
        .getResult();
  };
  if (need[0])
    grads[0] = softmaxGrad(o.getScaleAttr());
  if (o.getBias() && need[1])
    grads[1] = gb.unbroadcast(softmaxGrad(FloatAttr()), shapeOf(o.getBias()));
  return success();
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                           ArrayRef<bool> need,
                                           SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  LogSoftmaxOp o = *this;
  // g - exp(y) sum(g)
  Value s = gb.reduceSum(g, {(int64_t)o.getAxis()}, true);
  return firstOnly(need, grads,
                   need[0] ? gb.sub(g, gb.mul(gb.exp(o.getResult()), s)) : Value());
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                          ArrayRef<bool> need,
                                          SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  LayerNormOp o = *this;
  return layerNormGrad(gb, o, rg, need, grads);
}

LogicalResult SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                                    ArrayRef<bool> need,
                                                    SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  SoftmaxCrossEntropyOp o = *this;
  return crossEntropyGrad(gb, o, rg, need, grads);
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                          ArrayRef<bool> need,
                                          SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ReduceSumOp o = *this;
  return firstOnly(need, grads,
                   need[0] ? gb.expandFromReduction(g, shapeOf(o.getInput()), o.getAxes())
                           : Value());
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                           ArrayRef<bool> need,
                                           SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ReduceMeanOp o = *this;
  if (!need[0])
    return success();
  int64_t count = 1;
  for (int64_t a : o.getAxes())
    count *= typeOf(o.getInput()).getDimSize(a);
  Value e = gb.expandFromReduction(g, shapeOf(o.getInput()), o.getAxes());
  grads[0] = gb.div(e, gb.scalar((double)count, typeOf(g).getElementType()));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                        ArrayRef<bool> need,
                                        SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ReshapeOp o = *this;
  return firstOnly(need, grads, need[0] ? gb.reshape(g, shapeOf(o.getInput())) : Value());
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                          ArrayRef<bool> need,
                                          SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  TransposeOp o = *this;
  ArrayRef<int64_t> perm = o.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  // A transposed weight's gradient (a linear layer's W^T): (A B)^T is made as
  // B^T A^T, whose transposes the matmul kernel reads as flags, instead of a
  // product and a transpose kernel.
  auto product = g.getDefiningOp<MatMulOp>();
  if (need[0] && product && perm.size() == 2 && perm[0] == 1 && g.use_empty() &&
      typeOf(product.getLhs()).getRank() == 2 &&
      typeOf(product.getRhs()).getRank() == 2) {
    auto transposed = [&](Value v) -> Value { // v^T, reading through a transpose of v
      if (auto t = v.getDefiningOp<TransposeOp>(); t && t.getPerm().size() == 2)
        return t.getInput();
      return gb.transposeLast2(v);
    };
    grads[0] = gb.matmul(transposed(product.getRhs()), transposed(product.getLhs()));
    return success();
  }
  return firstOnly(need, grads, need[0] ? gb.transpose(g, inverse) : Value());
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                      ArrayRef<bool> need,
                                      SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  SliceOp o = *this;
  return firstOnly(need, grads,
                   need[0]
                       ? Value(SliceGradOp::create(b, gb.loc, o.getInput().getType(), g,
                                                   o.getStartsAttr(), o.getStepsAttr()))
                       : Value());
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                       ArrayRef<bool> need,
                                       SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ConcatOp o = *this;
  int64_t axis = o.getAxisAttr().getInt(), offset = 0;
  int64_t rank = typeOf(g).getRank();
  for (auto [i, in] : llvm::enumerate(o.getInputs())) {
    if (need[i]) {
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[axis] = offset;
      grads[i] =
          SliceOp::create(b, gb.loc, in.getType(), g, b.getDenseI64ArrayAttr(starts),
                          b.getDenseI64ArrayAttr(steps));
    }
    offset += typeOf(in).getDimSize(axis);
  }
  return success();
}

LogicalResult ExpandOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                       ArrayRef<bool> need,
                                       SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  ExpandOp o = *this;
  return firstOnly(need, grads,
                   need[0] ? gb.unbroadcast(g, shapeOf(o.getInput())) : Value());
}

LogicalResult GatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                       ArrayRef<bool> need,
                                       SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  GatherOp o = *this;
  if (need[0])
    grads[0] = GatherGradOp::create(b, gb.loc, o.getData().getType(), o.getIndices(), g,
                                    o.getAxisAttr());
  return success();
}

LogicalResult TriluOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                      ArrayRef<bool> need,
                                      SmallVectorImpl<Value> &grads) {
  GradBuilder gb{b, getLoc()};
  Value g = rg.empty() ? Value() : rg[0];
  TriluOp o = *this;
  return firstOnly(
      need, grads,
      need[0] ? Value(TriluOp::create(b, gb.loc, g, o.getUpperAttr(), o.getKAttr()))
              : Value());
}

LogicalResult AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> rg,
                                          ArrayRef<bool> need,
                                          SmallVectorImpl<Value> &grads) {
  // The log-sum-exp is saved for the backward, never read by the model.
  if (rg.size() > 1 && rg[1])
    return emitOpError("has no gradient with respect to its log-sum-exp");
  if (getMask() && need.size() > 3 && need[3])
    return emitOpError("has no gradient with respect to its mask");
  Value g = rg.empty() ? Value() : rg[0];
  if (!g || !(need[0] || need[1] || need[2]))
    return success();
  auto grad = AttentionGradOp::create(
      b, getLoc(), getQuery().getType(), getKey().getType(), getValue().getType(),
      getQuery(), getKey(), getValue(), getResult(), getLse(), g, getMask(), getScaleAttr(),
      getCausalAttr());
  for (int i = 0; i < 3; ++i)
    if (need[i])
      grads[i] = grad->getResult(i);
  return success();
}
