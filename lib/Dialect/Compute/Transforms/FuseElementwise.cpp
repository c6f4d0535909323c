//===- FuseElementwise.cpp - Elementwise chains as compute.fused ops ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Grows each chain backwards from its last op, latest producer first, so that a
// producer is judged once every op of the chain after it is known: it joins when
// all its readers are in the chain. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeDialect.h"
#include "zero/Dialect/Compute/Transforms/Passes.h"
#include "zplan/FusedProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <queue>

namespace zero {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "zero/Dialect/Compute/Transforms/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero::compute;

namespace {

// The fused kernel's bounds.
constexpr size_t kMaxInputs = zrt::fused::kMaxInputs;
constexpr size_t kMaxInstructions = zrt::fused::kMaxInstructions;

/// The `zero.*` marks of an op (host work, recomputation, phases): ops fuse only
/// with ops marked alike.
DictionaryAttr marksOf(Operation *op) {
  SmallVector<NamedAttribute> marks;
  for (NamedAttribute a : op->getDiscardableAttrs())
    if (a.getName().strref().starts_with("zero."))
      marks.push_back(a);
  return DictionaryAttr::get(op->getContext(), marks);
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// Whether `op` is a unary op whose record (zplan/UnaryOps.def) says fusion stores
/// it rather than computing it again in each chain that reads it.
bool storedByFusion(Operation *op) {
  constexpr bool Stored = true, Recomputed = false;
  (void)Stored, (void)Recomputed;
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, COST, FUSION, ...)                          \
  if (isa<ID##Op>(op))                                                                  \
    return FUSION;
#include "zplan/UnaryOps.def"
  return false;
}

/// Whether `v` reads a collective's result (a stage-3 parameter gathered for
/// forward, or a view of one): reading it later would keep the gathered bucket
/// alive past the point the collective schedule planned its memory for.
bool readsCollective(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    StringRef dialect = def->getName().getDialectNamespace();
    if (dialect == "zero" || dialect == "shard")
      return true;
    if (!isa<ReshapeOp, SliceOp, CastOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

struct Chain {
  SmallVector<Operation *> ops;        // in block order
  llvm::SetVector<Value> inputs;       // tensors the chain reads
  llvm::SetVector<Operation *> consts; // scalar constants it holds as immediates
};

struct FuseElementwisePass
    : public zero::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp f) {
      for (Block &block : f.getBody())
        fuseBlock(block);
    });
  }

  /// A cheap producer that several chains read (GELU's bias add and scalings,
  /// which forward and its gradient both read) is computed again in each chain
  /// instead of being stored and read back, when every reader is elementwise and it
  /// reads at most one tensor of its own size: keeping that one alive instead costs
  /// no memory, and a tensor less crosses memory per reader. erf counts as cheap:
  /// its rational f32 form costs about 0.6 ns per element on the CPU, less than
  /// storing a result and reading it back twice (GELU's gradient then reads x
  /// instead of erf(x): zero-run --trace of the fused kernels). The other
  /// transcendental functions do not (exp about 1 ns; tanh, log and pow are libm
  /// calls). Never a value that reads a gathered parameter (backward would keep
  /// forward's bucket).
  void duplicateCheapProducers(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *p : llvm::reverse(ops)) {
      if (!isFusableElementwise(p) || p->use_empty() || p->getResult(0).hasOneUse() ||
          isa<PowOp, GeluGradOp, GeluTanhGradOp>(p) || storedByFusion(p))
        continue;
      Value v = p->getResult(0);
      ArrayRef<int64_t> shape = shapeOf(v);
      DictionaryAttr marks = marksOf(p);
      int64_t full = llvm::count_if(p->getOperands(), [&](Value o) {
        Operation *def = o.getDefiningOp();
        return !(def && isScalarFloatConstant(def)) && shapeOf(o) == shape;
      });
      if (full > 1 || llvm::any_of(p->getOperands(), readsCollective) ||
          !llvm::all_of(v.getUsers(), [&](Operation *u) {
            return u->getBlock() == &block && isFusableElementwise(u) &&
                   shapeOf(u->getResult(0)) == shape && marksOf(u) == marks;
          }))
        continue;
      DenseMap<Operation *, Value> copyFor; // one copy per reader, right before it
      for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
        Operation *reader = use.getOwner();
        Value &copy = copyFor[reader];
        if (!copy) {
          OpBuilder b(reader);
          copy = b.clone(*p)->getResult(0);
        }
        use.set(copy);
      }
      p->erase();
    }
  }

  /// Attention's scale and mask into the softmax that reads them (see Passes.td):
  /// softmax(add(mul(x, c), m)) is softmax x bias(m) {scale = c}.
  void foldSoftmaxPrologues(Block &block) {
    for (auto sm : llvm::make_early_inc_range(block.getOps<SoftmaxOp>())) {
      auto type = cast<RankedTensorType>(sm.getType());
      if (sm.getBias() || sm.getScale() ||
          (int64_t)sm.getAxis() != std::max<int64_t>(type.getRank(), 1) - 1)
        continue;
      DictionaryAttr marks = marksOf(sm);
      // The op that makes `v`, when only `reader` reads it. (The values folded in
      // are read where the softmax is: never one that reads a gathered parameter.)
      auto soleProducer = [&](Value v, Operation *reader) -> Operation * {
        Operation *def = v.getDefiningOp();
        if (!def || !v.hasOneUse() || *v.getUsers().begin() != reader ||
            marksOf(def) != marks)
          return nullptr;
        return def;
      };
      Value input = sm.getInput(), bias;
      SmallVector<Operation *> folded;
      if (auto add = dyn_cast_or_null<AddOp>(soleProducer(input, sm)))
        for (auto [x, m] : bothOrders(add.getLhs(), add.getRhs()))
          if (x.getType() == type && !readsCollective(m) &&
              cast<RankedTensorType>(m.getType()).getElementType() == type.getElementType()) {
            input = x;
            bias = m;
            folded.push_back(add);
            break;
          }
      FloatAttr scale;
      Operation *scaleConst = nullptr;
      if (auto mul = dyn_cast_or_null<MulOp>(
              soleProducer(input, folded.empty() ? sm.getOperation() : folded.back())))
        for (auto [x, c] : bothOrders(mul.getLhs(), mul.getRhs())) {
          std::optional<double> v = finiteSplatOf(c, type.getElementType());
          if (x.getType() != type || !v)
            continue;
          input = x;
          scale = FloatAttr::get(Float64Type::get(sm.getContext()), *v);
          scaleConst = c.getDefiningOp();
          folded.push_back(mul);
          break;
        }
      if (folded.empty())
        continue;
      OpBuilder b(sm);
      auto merged = SoftmaxOp::create(b, sm.getLoc(), type, input, bias, sm.getAxisAttr(), scale);
      for (NamedAttribute a : marks)
        merged->setAttr(a.getName(), a.getValue());
      sm.getResult().replaceAllUsesWith(merged.getResult());
      sm.erase();
      for (Operation *op : folded) // the add before the multiply: readers first
        op->erase();
      if (scaleConst && scaleConst->use_empty())
        scaleConst->erase();
    }
  }

  void fuseBlock(Block &block) {
    foldSoftmaxPrologues(block);
    duplicateCheapProducers(block);
    DenseMap<Operation *, int64_t> position;
    SmallVector<Operation *> order;
    for (Operation &op : block) {
      position[&op] = order.size();
      order.push_back(&op);
    }
    DenseSet<Operation *> taken; // in a chain already
    for (Operation *root : llvm::reverse(order)) {
      if (taken.contains(root) || !isFusableElementwise(root))
        continue;
      Chain chain = grow(root, position, taken);
      if (chain.ops.size() < 2)
        continue;
      for (Operation *op : chain.ops)
        taken.insert(op);
      replace(root, chain, taken);
    }
  }

  /// The chain that ends at `root`.
  Chain grow(Operation *root, const DenseMap<Operation *, int64_t> &position,
             const DenseSet<Operation *> &taken) {
    ArrayRef<int64_t> shape = shapeOf(root->getResult(0));
    DictionaryAttr marks = marksOf(root);
    DenseSet<Operation *> in{root};
    DenseSet<Value> inputs;        // operands of chain ops made outside it
    SmallVector<Operation *> consts;
    // Candidates, latest first: every reader of a candidate after it is decided.
    auto later = [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    };
    std::priority_queue<Operation *, std::vector<Operation *>, decltype(later)> queue(later);
    DenseSet<Operation *> queued;
    auto visitOperands = [&](Operation *op) {
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && isScalarFloatConstant(def)) {
          if (!llvm::is_contained(consts, def))
            consts.push_back(def);
          continue;
        }
        inputs.insert(v);
        if (def && def->getBlock() == root->getBlock() && queued.insert(def).second)
          queue.push(def);
      }
    };
    visitOperands(root);
    while (!queue.empty()) {
      Operation *p = queue.top();
      queue.pop();
      Value v = p->getResult(0);
      bool joins = !taken.contains(p) && isFusableElementwise(p) &&
                   shapeOf(v) == shape && marksOf(p) == marks &&
                   llvm::all_of(v.getUsers(), [&](Operation *u) { return in.contains(u); });
      if (!joins)
        continue;
      // Within the kernel's bounds with p's operands as inputs instead of v.
      DenseSet<Value> trial = inputs;
      trial.erase(v);
      size_t newConsts = 0;
      for (Value o : p->getOperands()) {
        Operation *def = o.getDefiningOp();
        if (def && isScalarFloatConstant(def))
          newConsts += !llvm::is_contained(consts, def);
        else
          trial.insert(o);
      }
      if (trial.size() > kMaxInputs || in.size() + 1 + consts.size() + newConsts >
                                           kMaxInstructions)
        continue;
      in.insert(p);
      inputs.erase(v);
      visitOperands(p);
    }
    Chain chain;
    for (Operation *op : in)
      chain.ops.push_back(op);
    llvm::sort(chain.ops, later);
    // Inputs and constants in the order the chain first reads them.
    for (Operation *op : chain.ops)
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && isScalarFloatConstant(def))
          chain.consts.insert(def);
        else if (!in.contains(def))
          chain.inputs.insert(v);
      }
    return chain;
  }

  /// A compute.fused op at `root`, holding the chain; the chain's ops go, and the
  /// constants nothing else reads (added to `erased`).
  void replace(Operation *root, const Chain &chain, DenseSet<Operation *> &erased) {
    OpBuilder b(root);
    SmallVector<Value> inputs(chain.inputs.begin(), chain.inputs.end());
    auto fused = FusedOp::create(b, root->getLoc(), root->getResult(0).getType(), inputs);
    for (NamedAttribute a : marksOf(root))
      fused->setAttr(a.getName(), a.getValue());
    Block *body = new Block();
    fused.getBody().push_back(body);
    IRMapping map;
    for (Value v : inputs)
      map.map(v, body->addArgument(v.getType(), v.getLoc()));
    OpBuilder inside = OpBuilder::atBlockEnd(body);
    for (Operation *c : chain.consts)
      inside.clone(*c, map);
    for (Operation *op : chain.ops) {
      // A value copied for each reader (duplicateCheapProducers) whose readers
      // are all in this chain is computed once here.
      Operation *copy = inside.clone(*op, map);
      for (NamedAttribute a : marksOf(op))
        copy->removeAttr(a.getName()); // the fused op carries them
      for (Operation &prior : *body)
        if (&prior != copy && prior.getName() == copy->getName() &&
            prior.getOperands() == copy->getOperands() &&
            prior.getResultTypes() == copy->getResultTypes() &&
            prior.getAttrDictionary() == copy->getAttrDictionary()) {
          map.map(op->getResult(0), prior.getResult(0));
          copy->erase();
          break;
        }
    }
    YieldOp::create(inside, root->getLoc(), map.lookup(root->getResult(0)));
    root->getResult(0).replaceAllUsesWith(fused.getResult());
    for (Operation *op : llvm::reverse(chain.ops))
      op->erase();
    for (Operation *c : chain.consts)
      if (c->use_empty()) {
        erased.insert(c);
        c->erase();
      }
  }
};

} // namespace
