//===- RecomposeGelu.cpp - GELU's chains as one compute.gelu(_tanh) -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Matches from the last product of the chain: its factors (through products only
// it reads) must be x, 1/2 and erf(x / sqrt 2) + 1 (the exact form), or x, 1/2
// and tanh(sqrt(2/pi) (x + 0.044715 x^3)) + 1 (the tanh form). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>

namespace zero {
#define GEN_PASS_DEF_RECOMPOSEGELUPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero::compute;

namespace {

/// The value of `v` when it is a one-element float constant of element type `et`.
std::optional<double> scalarOf(Value v, Type et) {
  if (cast<ShapedType>(v.getType()).getElementType() != et)
    return std::nullopt;
  return scalarConstant(v);
}

/// `want` as an exporter writes it in element type `et`: rounded to `et`, or
/// within f32's rounding of it.
bool near(std::optional<double> v, double want, Type et) {
  if (!v)
    return false;
  APFloat rounded(want);
  bool lost;
  rounded.convert(cast<FloatType>(et).getFloatSemantics(), APFloat::rmNearestTiesToEven,
                  &lost);
  return *v == rounded.convertToDouble() || std::fabs(*v - want) <= 1e-6 * std::fabs(want);
}

/// `v` when it has type `type` and the chain is its only reader.
template <typename OpTy> OpTy chainOp(Value v, Type type) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op || !op->hasOneUse() || op->getResult(0).getType() != type)
    return nullptr;
  return op;
}

/// The pieces of a matched chain: the input and the ops the gelu replaces.
struct GeluChain {
  Value x;
  bool tanh = false; // GELU's tanh form (compute.gelu_tanh)
  SmallVector<Operation *> ops; // every op of the chain but the root
};

/// Appends the factors of the product `mul` to `factors`, looking through products
/// of the same type that only it reads; their ops go to `ops`.
void collectFactors(MulOp mul, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> &ops) {
  for (Value v : {mul.getLhs(), mul.getRhs()}) {
    if (auto inner = chainOp<MulOp>(v, mul.getType())) {
      ops.push_back(inner);
      collectFactors(inner, factors, ops);
    } else {
      factors.push_back(v);
    }
  }
}

/// `a` = erf(x / sqrt 2) + 1 (or erf(x * 1/sqrt 2) + 1), with x of `type`: x.
Value erfPlusOneInput(Value a, Type type, Type et, SmallVectorImpl<Operation *> &ops) {
  auto add = chainOp<AddOp>(a, type);
  if (!add)
    return nullptr;
  for (auto [e, one] : bothOrders(add.getLhs(), add.getRhs())) {
    auto erf = chainOp<ErfOp>(e, type);
    if (!erf || scalarOf(one, et) != 1.0)
      continue;
    Value x;
    Operation *scale = nullptr;
    if (auto div = chainOp<DivOp>(erf.getInput(), type)) {
      if (near(scalarOf(div.getRhs(), et), std::sqrt(2.0), et))
        x = div.getLhs(), scale = div;
    } else if (auto mul = chainOp<MulOp>(erf.getInput(), type)) {
      if (near(scalarOf(mul.getRhs(), et), std::sqrt(0.5), et))
        x = mul.getLhs(), scale = mul;
      else if (near(scalarOf(mul.getLhs(), et), std::sqrt(0.5), et))
        x = mul.getRhs(), scale = mul;
    }
    if (!x || x.getType() != type)
      continue;
    ops.append({add, erf, scale});
    return x;
  }
  return nullptr;
}

/// Whether `v` is x^3 (pow(x, 3), x * x * x in any grouping) of `type`, read by
/// the chain only; its ops go to `ops`.
bool isCube(Value v, Value x, Type type, SmallVectorImpl<Operation *> &ops) {
  if (auto pow = chainOp<PowOp>(v, type)) {
    if (pow.getLhs() != x || scalarConstant(pow.getRhs()) != 3.0)
      return false;
    ops.push_back(pow);
    return true;
  }
  auto mul = chainOp<MulOp>(v, type);
  if (!mul)
    return false;
  for (auto [p, q] : bothOrders(mul.getLhs(), mul.getRhs())) {
    auto square = chainOp<MulOp>(p, type);
    if (q != x || !square || square.getLhs() != x || square.getRhs() != x)
      continue;
    ops.append({mul, square});
    return true;
  }
  return false;
}

/// `a` = tanh(k (x + c x^3)) + 1, k = sqrt(2/pi), c = 0.044715, with x of `type`:
/// x (null when `a` is not that).
Value tanhPlusOneInput(Value a, Type type, Type et, SmallVectorImpl<Operation *> &ops) {
  auto add = chainOp<AddOp>(a, type);
  if (!add)
    return nullptr;
  for (auto [t, one] : bothOrders(add.getLhs(), add.getRhs())) {
    auto tanh = chainOp<TanhOp>(t, type);
    if (!tanh || scalarOf(one, et) != 1.0)
      continue;
    auto scaled = chainOp<MulOp>(tanh.getInput(), type);
    if (!scaled)
      continue;
    for (auto [k, innerValue] : bothOrders(scaled.getLhs(), scaled.getRhs())) {
      auto inner = chainOp<AddOp>(innerValue, type);
      if (!inner || !near(scalarOf(k, et), std::sqrt(2.0 / M_PI), et))
        continue;
      for (auto [x, term] : bothOrders(inner.getLhs(), inner.getRhs())) {
        auto cubic = chainOp<MulOp>(term, type);
        if (!cubic || x.getType() != type)
          continue;
        for (auto [c, cube] : bothOrders(cubic.getLhs(), cubic.getRhs())) {
          SmallVector<Operation *> cubeOps;
          if (!near(scalarOf(c, et), 0.044715, et) || !isCube(cube, x, type, cubeOps))
            continue;
          ops.append({add, tanh, scaled, inner, cubic});
          ops.append(cubeOps);
          return x;
        }
      }
    }
  }
  return nullptr;
}

/// The chain ending in `root`, if it is GELU's.
std::optional<GeluChain> matchGelu(MulOp root) {
  auto type = dyn_cast<RankedTensorType>(root.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  Type et = type.getElementType();
  SmallVector<Value> factors;
  GeluChain chain;
  collectFactors(root, factors, chain.ops);
  if (factors.size() != 3)
    return std::nullopt;
  Block *block = root->getBlock();
  // Which factor is 1/2, which erf(...) + 1; the third must be that erf's x.
  for (int half = 0; half < 3; ++half) {
    if (scalarOf(factors[half], et) != 0.5)
      continue;
    for (int sum = 0; sum < 3; ++sum) {
      if (sum == half)
        continue;
      Value x = factors[3 - half - sum];
      SmallVector<Operation *> ops;
      chain.tanh = erfPlusOneInput(factors[sum], type, et, ops) != x;
      if (chain.tanh) {
        ops.clear();
        if (tanhPlusOneInput(factors[sum], type, et, ops) != x)
          continue;
      }
      chain.ops.append(ops);
      if (!llvm::all_of(chain.ops, [&](Operation *op) { return op->getBlock() == block; }))
        return std::nullopt;
      chain.x = x;
      return chain;
    }
  }
  return std::nullopt;
}

struct RecomposeGeluPass : zero::impl::RecomposeGeluPassBase<RecomposeGeluPass> {
  void runOnOperation() override {
    SmallVector<std::pair<MulOp, GeluChain>> found;
    getOperation().walk([&](MulOp mul) {
      if (std::optional<GeluChain> chain = matchGelu(mul))
        found.push_back({mul, std::move(*chain)});
    });
    for (auto &[root, chain] : found) {
      OpBuilder b(root);
      chain.ops.push_back(root);
      Value gelu = chain.tanh ? GeluTanhOp::create(b, root.getLoc(), chain.x).getResult()
                              : GeluOp::create(b, root.getLoc(), chain.x).getResult();
      root.getResult().replaceAllUsesWith(gelu);
      // Readers first: each op of the chain is dead once the ones after it are gone.
      llvm::sort(chain.ops, [](Operation *p, Operation *q) { return q->isBeforeInBlock(p); });
      llvm::SmallSetVector<Operation *, 4> constants;
      for (Operation *op : chain.ops) {
        for (Value v : op->getOperands())
          if (auto cst = v.getDefiningOp<ConstantOp>())
            constants.insert(cst);
        op->erase();
      }
      // The chain's constants, unless something else reads them too.
      for (Operation *cst : constants)
        if (cst->use_empty())
          cst->erase();
    }
  }
};

} // namespace
