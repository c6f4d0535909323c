//===- ComputeAttention.cpp - Verifiers of the fused attention ops --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// compute.attention and compute.attention_grad check the same geometry: query
// [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] with Hkv dividing
// Hq, a mask broadcasting to the scores [B, Hq, Tq, Tk], a finite scale.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

#include <cmath>

using namespace mlir;
using namespace zero::compute;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The log-sum-exp's element type: f32, or f64 for f64 queries.
Type lseElementType(Value q) {
  Type et = typeOf(q).getElementType();
  return et.isF64() ? et : Float32Type::get(q.getContext());
}

/// The shared checks; on success `out` is the result's shape [B, Hq, Tq, Dv] and
/// `rows` the log-sum-exp's [B, Hq, Tq].
LogicalResult verifyGeometry(Operation *op, Value q, Value k, Value v, Value mask,
                             double scale, SmallVectorImpl<int64_t> &out,
                             SmallVectorImpl<int64_t> &rows) {
  auto qt = typeOf(q), kt = typeOf(k), vt = typeOf(v);
  if (qt.getRank() != 4 || kt.getRank() != 4 || vt.getRank() != 4)
    return op->emitOpError("query, key and value must be 4-D [batch, heads, length, size]");
  if (kt.getElementType() != qt.getElementType() ||
      vt.getElementType() != qt.getElementType())
    return op->emitOpError("query, key and value must have one element type");
  int64_t batch = qt.getDimSize(0), qHeads = qt.getDimSize(1), qLen = qt.getDimSize(2),
          size = qt.getDimSize(3), kvHeads = kt.getDimSize(1), kvLen = kt.getDimSize(2);
  if (kt.getDimSize(0) != batch || vt.getDimSize(0) != batch)
    return op->emitOpError("query, key and value must have one batch size");
  if (kt.getDimSize(3) != size)
    return op->emitOpError("key's size per head (") << kt.getDimSize(3)
                                                    << ") is not query's (" << size << ")";
  if (vt.getDimSize(1) != kvHeads || vt.getDimSize(2) != kvLen)
    return op->emitOpError("value's heads and length must be key's");
  if (kvHeads <= 0 || qHeads % kvHeads)
    return op->emitOpError("key/value heads (")
           << kvHeads << ") must divide query heads (" << qHeads << ")";
  if (!std::isfinite(scale))
    return op->emitOpError("scale must be finite");
  if (mask) {
    auto mt = typeOf(mask);
    if (!mt.getElementType().isInteger(1) && mt.getElementType() != qt.getElementType())
      return op->emitOpError("mask must be boolean or of the query's element type");
    SmallVector<int64_t> scores = {batch, qHeads, qLen, kvLen};
    auto b = broadcastShapes(mt.getShape(), scores);
    if (mt.getRank() > 4 || failed(b) || ArrayRef<int64_t>(*b) != ArrayRef(scores))
      return op->emitOpError("mask must broadcast to the scores [")
             << batch << ", " << qHeads << ", " << qLen << ", " << kvLen << "]";
  }
  out.assign({batch, qHeads, qLen, vt.getDimSize(3)});
  rows.assign({batch, qHeads, qLen});
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  SmallVector<int64_t> out, rows;
  if (failed(verifyGeometry(*this, getQuery(), getKey(), getValue(), getMask(),
                            getScale().convertToDouble(), out, rows)))
    return failure();
  auto et = typeOf(getQuery()).getElementType();
  if (typeOf(getResult()) != RankedTensorType::get(out, et))
    return emitOpError("result must be ") << RankedTensorType::get(out, et);
  auto lse = RankedTensorType::get(rows, lseElementType(getQuery()));
  if (typeOf(getLse()) != lse)
    return emitOpError("lse must be ") << lse;
  return success();
}

LogicalResult AttentionGradOp::verify() {
  SmallVector<int64_t> out, rows;
  if (failed(verifyGeometry(*this, getQuery(), getKey(), getValue(), getMask(),
                            getScale().convertToDouble(), out, rows)))
    return failure();
  auto et = typeOf(getQuery()).getElementType();
  auto outType = RankedTensorType::get(out, et);
  if (typeOf(getOutput()) != outType || typeOf(getGrad()) != outType)
    return emitOpError("output and grad must be ") << outType;
  auto lse = RankedTensorType::get(rows, lseElementType(getQuery()));
  if (typeOf(getLse()) != lse)
    return emitOpError("lse must be ") << lse;
  if (getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError("each gradient must have its operand's type");
  return success();
}

bool zero::compute::isCausalMask(int64_t count, int64_t tq, int64_t tk, bool additive,
                                 llvm::function_ref<double(int64_t)> at) {
  if (tq <= 0 || tk <= 0 || count <= 0 || count % (tq * tk) != 0)
    return false;
  for (int64_t k = 0; k < count; ++k) {
    int64_t i = k / tk % tq, j = k % tk;
    double x = at(k);
    bool kept = additive ? x == 0.0 : x != 0.0;
    bool hidden = additive ? x <= kAttentionHidden : x == 0.0;
    if (j > i ? !hidden : !kept)
      return false;
  }
  return true;
}
