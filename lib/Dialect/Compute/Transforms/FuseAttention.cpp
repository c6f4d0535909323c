//===- FuseAttention.cpp - Attention written as its parts, fused ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Matches from the product of the probabilities with the values: see Passes.td.
// Also the torch exporters' SDPA decomposition: the root of the scale applied to
// the queries and to the transposed keys, and a NaN guard after the softmax.
// Every value between the two products must be read by the chain only, and the
// scale must come before the mask (softmax(QKᵀ·c + M)); anything else is left
// as it is.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace zero {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::compute;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `x * c` (or `c * x`) with c a scalar constant and x of the product's type:
/// c and x.
std::optional<std::pair<double, Value>> scaling(MulOp mul) {
  for (auto [factor, x] : {std::pair{mul.getRhs(), mul.getLhs()},
                           std::pair{mul.getLhs(), mul.getRhs()}})
    if (std::optional<double> c = scalarConstant(factor);
        c && x.getType() == mul.getResult().getType())
      return std::pair{*c, x};
  return std::nullopt;
}

/// Whether the constant `mask` (additive floats, or booleans that keep where
/// true) is the causal mask of [tq, tk] scores in every batch and head (its leading
/// dimensions any size: the exporters repeat it per sample): key j hidden from
/// query i exactly when j > i.
bool isCausal(Value mask, int64_t tq, int64_t tk, bool additive) {
  auto cst = mask.getDefiningOp<ConstantOp>();
  auto type = typeOf(mask);
  if (!cst || type.getRank() < 2 || type.getDimSize(type.getRank() - 2) != tq ||
      type.getDimSize(type.getRank() - 1) != tk)
    return false;
  auto attr = dyn_cast<DenseElementsAttr>(cst.getValue());
  if (!attr || attr.isSplat())
    return false;
  if (additive) {
    auto values = dyn_cast<DenseFPElementsAttr>(attr);
    if (!values)
      return false;
    auto it = values.value_begin<APFloat>();
    return isCausalMask(values.getNumElements(), tq, tk, true,
                        [&](int64_t k) { return (*(it + k)).convertToDouble(); });
  }
  auto it = attr.value_begin<bool>();
  return isCausalMask(attr.getNumElements(), tq, tk, false,
                      [&](int64_t k) { return *(it + k) ? 1.0 : 0.0; });
}

/// `v`'s defining op when it is an OpTy that only the chain reads.
template <typename OpTy> OpTy single(Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && op->hasOneUse() ? op : OpTy();
}

/// Whether `v` is computed from a parameter that trains.
bool readsTrainedParameter(Value v) {
  SmallVector<Value> work = {v};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (func && func.getArgAttr(arg.getArgNumber(), compute::attr::kParam) &&
          !func.getArgAttr(arg.getArgNumber(), compute::attr::kFrozen))
        return true;
      continue;
    }
    Operation *def = x.getDefiningOp();
    if (def && seen.insert(def).second)
      work.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

struct Match {
  Value query, keyT, value, mask;
  double scale = 1.0;
  SmallVector<Operation *> ops; // the chain, to erase once the fused op replaces it
};

/// The attention whose output is `out` = matmul(softmax(...), V), if it is one.
/// The softmax of a NaN guard `where(isnan(p), 0, p)` (isnan written as
/// `(p == p) == false`, as the torch exporters' SDPA decomposition does): a row
/// whose every key is masked becomes zeros, as the fused op's rows do anyway.
/// The guard's ops go to `ops`.
SoftmaxOp guardedSoftmax(Value v, SmallVectorImpl<Operation *> &ops) {
  auto guard = single<WhereOp>(v);
  std::optional<double> zero = guard ? scalarConstant(guard.getLhs()) : std::nullopt;
  if (!guard || !zero || *zero != 0.0)
    return SoftmaxOp();
  Value p = guard.getRhs();
  auto notEqual = single<EqualOp>(guard.getCondition());
  if (!notEqual)
    return SoftmaxOp();
  auto isFalse = [](Value c) {
    auto cst = c.getDefiningOp<ConstantOp>();
    auto attr = cst ? dyn_cast<DenseIntElementsAttr>(cst.getValue()) : nullptr;
    return attr && attr.getNumElements() == 1 && attr.getElementType().isInteger(1) &&
           !(*attr.value_begin<APInt>()).getBoolValue();
  };
  Value selfEqual = isFalse(notEqual.getRhs())   ? notEqual.getLhs()
                    : isFalse(notEqual.getLhs()) ? notEqual.getRhs()
                                                 : Value();
  auto eq = selfEqual ? single<EqualOp>(selfEqual) : EqualOp();
  auto probs = p.getDefiningOp<SoftmaxOp>();
  // The probabilities feed the guard only: its where and its self-comparison.
  if (!eq || eq.getLhs() != p || eq.getRhs() != p || !probs ||
      llvm::any_of(p.getUsers(), [&](Operation *u) { return u != eq && u != guard; }))
    return SoftmaxOp();
  ops.append({guard, notEqual, eq});
  return probs;
}

std::optional<Match> matchAttention(MatMulOp out) {
  Match m;
  auto probs = single<SoftmaxOp>(out.getLhs());
  if (!probs)
    probs = guardedSoftmax(out.getLhs(), m.ops);
  if (!probs || typeOf(out.getLhs()).getRank() != 4 ||
      probs.getAxis() != 3 || typeOf(out.getRhs()).getRank() != 4)
    return std::nullopt;
  Type et = typeOf(out.getLhs()).getElementType();
  m.ops.push_back(probs);
  if (probs.getScale())
    m.scale = probs.getScale()->convertToDouble();
  if (probs.getBias())
    m.mask = probs.getBias();
  // Back from the softmax to the scores' product: masks, then scales.
  Value s = probs.getInput();
  bool scaled = probs.getScale().has_value();
  while (true) {
    if (auto add = single<AddOp>(s)) {
      if (scaled || m.mask)
        return std::nullopt; // a mask before a scale, or two masks
      bool lhsIsChain = typeOf(add.getLhs()) == typeOf(add.getResult());
      Value chain = lhsIsChain ? add.getLhs() : add.getRhs();
      m.mask = lhsIsChain ? add.getRhs() : add.getLhs();
      if (typeOf(chain) != typeOf(add.getResult()))
        return std::nullopt;
      m.ops.push_back(add);
      s = chain;
      continue;
    }
    if (auto where = single<WhereOp>(s)) {
      std::optional<double> fill = scalarConstant(where.getRhs());
      if (!fill) {
        // masked_fill(hidden, -inf): where(hidden, fill, scores), its constant
        // condition the keys to hide; the op keeps where true, so inverted (the
        // inverted constant is left dead when the match fails).
        std::optional<double> hiddenFill = scalarConstant(where.getLhs());
        auto hidden = where.getCondition().getDefiningOp<ConstantOp>();
        auto bits = hidden ? dyn_cast<DenseIntElementsAttr>(hidden.getValue()) : nullptr;
        if (scaled || m.mask || !hiddenFill || *hiddenFill > kAttentionHidden || !bits ||
            !bits.getElementType().isInteger(1) ||
            where.getRhs().getType() != where.getResult().getType())
          return std::nullopt;
        SmallVector<bool> keep;
        for (const APInt &v : bits.getValues<APInt>())
          keep.push_back(!v.getBoolValue());
        OpBuilder b(where);
        auto type = cast<ShapedType>(bits.getType());
        m.mask = ConstantOp::create(b, hidden.getLoc(), DenseElementsAttr::get(type, ArrayRef<bool>(keep)));
        m.ops.push_back(where);
        s = where.getRhs();
        continue;
      }
      if (scaled || m.mask || *fill > kAttentionHidden ||
          where.getLhs().getType() != where.getResult().getType())
        return std::nullopt;
      m.mask = where.getCondition();
      m.ops.push_back(where);
      s = where.getLhs();
      continue;
    }
    if (auto mul = single<MulOp>(s)) {
      auto factored = scaling(mul);
      if (!factored)
        return std::nullopt;
      m.scale *= factored->first;
      scaled = true;
      m.ops.push_back(mul);
      s = factored->second;
      continue;
    }
    if (auto div = single<DivOp>(s)) {
      std::optional<double> c = scalarConstant(div.getRhs());
      if (!c || *c == 0 || div.getLhs().getType() != div.getResult().getType())
        return std::nullopt;
      m.scale /= *c;
      scaled = true;
      m.ops.push_back(div);
      s = div.getLhs();
      continue;
    }
    break;
  }
  auto scores = single<MatMulOp>(s);
  if (!scores)
    return std::nullopt;
  m.ops.push_back(scores);
  m.query = scores.getLhs();
  m.keyT = scores.getRhs();
  // A scale applied to the queries or the transposed keys before their product
  // (the exporters' SDPA scales both by the root of the scale).
  for (Value *operand : {&m.query, &m.keyT})
    if (auto mul = single<MulOp>(*operand))
      if (auto factored = scaling(mul)) {
        m.scale *= factored->first;
        m.ops.push_back(mul);
        *operand = factored->second;
      }
  m.value = out.getRhs();
  auto q = typeOf(m.query), kT = typeOf(m.keyT), v = typeOf(m.value);
  if (q.getRank() != 4 || kT.getRank() != 4 || q.getElementType() != et ||
      kT.getElementType() != et || v.getElementType() != et)
    return std::nullopt;
  // One batch and head per product (no broadcasting between them).
  if (q.getShape().take_front(2) != kT.getShape().take_front(2) ||
      v.getShape().take_front(2) != q.getShape().take_front(2) ||
      kT.getDimSize(3) != v.getDimSize(2))
    return std::nullopt;
  if (m.mask) {
    // A mask computed from a parameter that trains (a float initializer trained
    // for want of a recorded trainable set) needs its gradient, which the fused op
    // does not give.
    if (readsTrainedParameter(m.mask))
      return std::nullopt;
    // A causal one becomes the op's flag afterwards (maskAsCausal).
    Type mt = typeOf(m.mask).getElementType();
    if (mt != et && !mt.isInteger(1))
      return std::nullopt;
  }
  return m;
}

/// Key as [B, H, Tk, D] from its transpose: the transpose it came from, permuted
/// once more (no op when that is the identity).
Value keyOf(OpBuilder &b, Location loc, Value keyT) {
  SmallVector<int64_t> swap = {0, 1, 3, 2}, perm = swap;
  Value source = keyT;
  if (auto t = keyT.getDefiningOp<TransposeOp>()) {
    source = t.getInput();
    for (int i = 0; i < 4; ++i)
      perm[i] = t.getPerm()[swap[i]];
  }
  if (perm == SmallVector<int64_t>{0, 1, 2, 3})
    return source;
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(typeOf(source).getDimSize(p));
  return TransposeOp::create(b, loc, typeOf(source).clone(shape), source,
                             b.getDenseI64ArrayAttr(perm));
}

/// The [B, H, T, D] tensor x reshaped into, when `key` is transpose(reshape(
/// transpose(reshape(x)))) as torch.export's SDPA writes Kᵀ: x's leading
/// dimensions merged into one, [N, T, D] transposed to [N, D, T], split into
/// [B, H, D, T] (B·H = N), and its last two swapped back. Null otherwise.
Value mergedHeadsSource(Value key) {
  auto swapBack = key.getDefiningOp<TransposeOp>();
  if (!swapBack || swapBack.getPerm() != ArrayRef<int64_t>{0, 1, 3, 2})
    return Value();
  auto split = swapBack.getInput().getDefiningOp<ReshapeOp>();
  auto swap = split ? split.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
  auto merge = swap ? swap.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!merge || swap.getPerm() != ArrayRef<int64_t>{0, 2, 1})
    return Value();
  auto x = typeOf(merge.getInput()), merged = typeOf(merge.getResult()),
       swapped = typeOf(swap.getResult()), heads = typeOf(split.getResult());
  // x [..., T, D] -> [N, T, D] -> [N, D, T] -> [B, H, D, T]: the reshapes keep the
  // last two dimensions, so N is x's leading ones and B·H is N, both row-major.
  if (merged.getRank() != 3 || x.getRank() < 3 || heads.getRank() != 4 ||
      x.getShape().take_back(2) != merged.getShape().take_back(2) ||
      heads.getShape().take_back(2) != swapped.getShape().take_back(2))
    return Value();
  return merge.getInput();
}

/// The key or value tensor [B, Hkv, T, D] that `kv` repeats, when `kv` is
/// reshape(expand(reshape(src))) as Hugging Face's repeat_kv writes it: src
/// [B, Hkv, T, D] given a group axis [B, Hkv, 1, T, D], expanded to g copies and
/// merged to [B, Hkv·g, T, D], head h being src's head h / g. Null otherwise.
Value repeatedSource(Value kv) {
  auto merge = kv.getDefiningOp<ReshapeOp>();
  auto expand = merge ? merge.getInput().getDefiningOp<ExpandOp>() : ExpandOp();
  auto axis = expand ? expand.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!axis)
    return Value();
  auto src = typeOf(axis.getInput()), grouped = typeOf(axis.getResult()),
       expanded = typeOf(expand.getResult()), out = typeOf(kv);
  if (src.getRank() != 4 || grouped.getRank() != 5 || expanded.getRank() != 5 ||
      out.getRank() != 4)
    return Value();
  ArrayRef<int64_t> s = src.getShape(), e = expanded.getShape(), o = out.getShape();
  bool fits = grouped.getShape() == ArrayRef<int64_t>{s[0], s[1], 1, s[2], s[3]} &&
              e[0] == s[0] && e[1] == s[1] && e[3] == s[2] && e[4] == s[3] &&
              o == ArrayRef<int64_t>{s[0], s[1] * e[2], s[2], s[3]};
  return fits ? axis.getInput() : Value();
}

/// Erases `op` and, in turn, the ops only it read, while they are pure and
/// unused.
void eraseIfDead(Operation *op) {
  SmallVector<Operation *> work = {op};
  while (!work.empty()) {
    Operation *next = work.pop_back_val();
    if (!next->use_empty() || !isPure(next))
      continue;
    SmallVector<Value> operands(next->getOperands());
    next->erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
  }
}
void eraseIfDead(Value v) {
  if (Operation *def = v.getDefiningOp())
    eraseIfDead(def);
}

/// Grouped-query attention reads each key/value head once: when the key and
/// the value both repeat heads of the same [B, Hkv, T, D] tensors, the attention
/// takes those (the op maps query head h to key/value head h / (H / Hkv)), and
/// the repeated copies are gone.
void readGroupedHeadsOnce(AttentionOp att) {
  Value key = att.getKey();
  OpBuilder b(att);
  Value keySource = repeatedSource(key);
  ReshapeOp keyMerge;
  if (!keySource)
    if (Value x = mergedHeadsSource(key)) {
      keyMerge = ReshapeOp::create(b, att.getLoc(), typeOf(key), x);
      keySource = repeatedSource(keyMerge);
    }
  Value valueSource = repeatedSource(att.getValue());
  if (!keySource || !valueSource ||
      typeOf(keySource).getDimSize(1) != typeOf(valueSource).getDimSize(1)) {
    if (keyMerge)
      keyMerge->erase();
    return;
  }
  Value value = att.getValue();
  att.getKeyMutable().assign(keySource);
  att.getValueMutable().assign(valueSource);
  if (keyMerge)
    eraseIfDead(keyMerge.getOperation());
  eraseIfDead(key);
  eraseIfDead(value);
}

/// Masks already judged, by constant and shape: every layer of a model reads the
/// same (uniqued) mask, and judging one reads all of its elements (4M at 2048).
using CausalVerdicts = DenseMap<std::tuple<Attribute, int64_t, int64_t>, bool>;

/// An imported attention's constant causal mask becomes the op's `causal` (the
/// kernels then skip the keys after each query instead of reading a mask).
void maskAsCausal(AttentionOp att, CausalVerdicts &verdicts) {
  Value mask = att.getMask();
  if (!mask)
    return;
  Type mt = typeOf(mask).getElementType();
  if (!isa<FloatType>(mt) && !mt.isInteger(1))
    return;
  int64_t tq = typeOf(att.getQuery()).getDimSize(2), tk = typeOf(att.getKey()).getDimSize(2);
  auto cst = mask.getDefiningOp<ConstantOp>();
  std::tuple<Attribute, int64_t, int64_t> key{cst ? cst.getValue() : Attribute(), tq, tk};
  auto [it, fresh] = verdicts.try_emplace(key, false);
  if (fresh || !cst) // the attribute's type holds the element type: float or i1
    it->second = isCausal(mask, tq, tk, isa<FloatType>(mt));
  if (!it->second)
    return;
  att.getMaskMutable().clear();
  att.setCausal(true);
  eraseIfDead(mask);
}

struct FuseAttentionPass : public zero::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<std::pair<MatMulOp, Match>> found;
    getOperation().walk([&](MatMulOp out) {
      if (std::optional<Match> m = matchAttention(out))
        found.push_back({out, std::move(*m)});
    });
    for (auto &[out, m] : found) {
      OpBuilder b(out);
      Location loc = out.getLoc();
      Value key = keyOf(b, loc, m.keyT);
      auto q = typeOf(m.query);
      Type et = q.getElementType();
      Type lseType = et.isF64() ? et : b.getF32Type();
      auto fused = AttentionOp::create(
          b, loc, out.getType(),
          RankedTensorType::get(q.getShape().take_front(3), lseType), m.query, key,
          m.value, m.mask, b.getF64FloatAttr(m.scale), b.getBoolAttr(false));
      out.getResult().replaceAllUsesWith(fused.getResult());
      out->erase();
      // Readers first: each op of the chain is dead once the ones after it are gone.
      llvm::SmallPtrSet<Operation *, 8> chain(m.ops.begin(), m.ops.end());
      llvm::SmallSetVector<Operation *, 4> inputs;
      for (Operation *op : m.ops)
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp(); def && !chain.count(def))
            inputs.insert(def);
      for (Operation *op : m.ops)
        op->erase();
      // What only the chain read (constants, the key's transpose).
      for (Operation *def : inputs)
        eraseIfDead(def);
    }
    // Every attention op, fused here or imported (ONNX's Attention).
    CausalVerdicts verdicts;
    getOperation().walk([&](AttentionOp att) {
      readGroupedHeadsOnce(att);
      maskAsCausal(att, verdicts);
    });
  }
};

} // namespace
