//===- ShardArguments.cpp - Sharded arguments and their gathers -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The step's new signature (each bucket's shard as one argument, its layout in
// attributes) and stage 3's gathers of a bucket before its uses.
//
//===----------------------------------------------------------------------===//

#include "ZeroSharder.h"
#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

using namespace mlir;
using namespace zero;
using namespace zero::compute;
using namespace zero::shard_zero;

LogicalResult ZeroSharder::rebuildSignature(StepRewrite &s, ArrayRef<Bucket> buckets) {
  func::FuncOp func = s.func;
  Block &entry = func.getBody().front();
  func::ReturnOp ret = s.ret;
  SmallVector<std::pair<unsigned, Value>> &updates = s.updates;
  SmallVector<Value> newResults;
  SmallVector<Attribute> newNames;
  // The step counter's update stays; everything else updates what we built.
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    if (auto a = func.getResultAttrOfType<IntegerAttr>(k, compute::attr::kUpdates))
      if (s.step && argName(func, a.getInt()) == "optimizer.step")
        updates.push_back({(unsigned)a.getInt(), v});
  // Results that update nothing (the loss, the overflow count, the gradient norm)
  // stay first, in order: read from the return now, after the rewiring above.
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    if (!func.getResultAttr(k, compute::attr::kUpdates)) {
      newResults.push_back(v);
      newNames.push_back(cast<ArrayAttr>(func->getAttr(compute::attr::kOutputNames))[k]);
    }
  unsigned firstUpdate = newResults.size();
  for (auto [arg, v] : updates) {
    newResults.push_back(v);
    newNames.push_back(StringAttr::get(func.getContext(), argName(func, arg)));
  }
  OpBuilder rb(ret);
  func::ReturnOp::create(rb, ret.getLoc(), newResults);
  ret.erase();
  for (Operation *op : s.deadOps)
    op->erase();

  SmallVector<Type> resultTypes;
  for (Value v : newResults)
    resultTypes.push_back(v.getType());
  func->removeAttr(func.getResAttrsAttrName()); // set again below, per result
  func.setFunctionType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                         resultTypes));
  func->setAttr(compute::attr::kOutputNames, ArrayAttr::get(func.getContext(), newNames));
  SmallVector<BlockArgument> updateArgs;
  for (auto [arg, v] : updates)
    updateArgs.push_back(entry.getArgument(arg));
  llvm::BitVector erase(entry.getNumArguments());
  for (BlockArgument a : entry.getArguments())
    if ((a.getArgNumber() < s.deadArgs.size() && s.deadArgs.test(a.getArgNumber())) ||
        (stage == 3 && a.use_empty() &&
         func.getArgAttr(a.getArgNumber(), compute::attr::kParam) &&
         isTrainedAway(buckets, a)))
      erase.set(a.getArgNumber());
  for (BlockArgument a : entry.getArguments())
    if (erase.test(a.getArgNumber()) && !a.use_empty())
      return func.emitError("internal: argument ")
             << a.getArgNumber() << " is still used after sharding";
  if (failed(func.eraseArguments(erase)))
    return failure();
  for (auto [k, a] : llvm::enumerate(updateArgs))
    func.setResultAttr(firstUpdate + k, compute::attr::kUpdates,
                       IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                        a.getArgNumber()));
  return success();
}

bool ZeroSharder::isTrainedAway(ArrayRef<Bucket> buckets, BlockArgument a) {
  for (const Bucket &bk : buckets)
    if (!bk.replicated)
      for (const Member &m : bk.members)
        if (m.param == a)
          return true;
  return false;
}

std::string ZeroSharder::argName(func::FuncOp func, unsigned arg) {
  for (StringRef key : {compute::attr::kParam, compute::attr::kState, compute::attr::kParamBucket,
                        compute::attr::kMaster, compute::attr::kMasterBucket})
    if (auto n = dyn_cast_or_null<StringAttr>(argAttr(func, arg, key)))
      return n.str();
  return "";
}

BlockArgument ZeroSharder::addArg(func::FuncOp func, Type type, StringRef key, StringRef name) {
  Block &entry = func.getBody().front();
  if (newArgAttrs.empty())
    committedArgs = func.getNumArguments();
  BlockArgument a = entry.addArgument(type, func.getLoc());
  NamedAttrList attrs;
  attrs.set(key, StringAttr::get(func.getContext(), name));
  newArgAttrs.push_back(attrs);
  return a;
}

Attribute ZeroSharder::argAttr(func::FuncOp func, unsigned arg, StringRef key) {
  if (!newArgAttrs.empty() && arg >= committedArgs)
    return newArgAttrs[arg - committedArgs].get(key);
  return func.getArgAttr(arg, key);
}

void ZeroSharder::setArgAttr(func::FuncOp func, unsigned arg, StringRef key, Attribute value) {
  if (!newArgAttrs.empty() && arg >= committedArgs)
    newArgAttrs[arg - committedArgs].set(key, value);
  else
    func.setArgAttr(arg, key, value);
}

void ZeroSharder::commitNewArgs(func::FuncOp func) {
  if (newArgAttrs.empty())
    return;
  Block &entry = func.getBody().front();
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0; i < committedArgs; ++i)
    attrs.push_back(func.getArgAttrDict(i));
  for (NamedAttrList &l : newArgAttrs)
    attrs.push_back(l.getDictionary(func.getContext()));
  func.setFunctionType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                         func.getResultTypes()));
  func.setAllArgAttrs(attrs);
  newArgAttrs.clear();
}

void ZeroSharder::setBucketLayout(func::FuncOp func, unsigned arg, const Bucket &bucket) {
  Builder b(func.getContext());
  SmallVector<Attribute> members;
  for (const Member &m : bucket.members)
    members.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("name", b.getStringAttr(m.name)),
         b.getNamedAttr("offset", b.getI64IntegerAttr(m.offset)),
         b.getNamedAttr("shape", b.getDenseI64ArrayAttr(
                                     cast<RankedTensorType>(m.param.getType())
                                         .getShape()))}));
  setArgAttr(func, arg, compute::attr::kBucketMembers, b.getArrayAttr(members));
  setArgAttr(func, arg, compute::attr::kBucketElements, b.getI64IntegerAttr(bucket.padded));
}

int64_t ZeroSharder::phaseOf(Operation *op) {
  if (auto p = op->getAttrOfType<IntegerAttr>(zops::attr::kMicroPhase))
    return p.getInt();
  return position[op] > position[lossOp] ? 1 : 0;
}

LogicalResult ZeroSharder::gatherForUse(func::FuncOp func, const Bucket &bucket, BlockArgument shardArg) {
  std::map<int64_t, SmallVector<OpOperand *>> usesByPhase;
  for (const Member &m : bucket.members)
    for (OpOperand &use : m.param.getUses()) {
      Operation *user = use.getOwner();
      if (user == m.optimizer || !position.count(user))
        continue; // the optimizer goes; ops this pass built read the shard
      usesByPhase[phaseOf(user)].push_back(&use);
    }
  Value secondary; // hpZ: this rank's slice of the bucket within its group
  for (auto &[phase, uses] : usesByPhase) {
    Operation *firstUser = nullptr;
    for (OpOperand *use : uses)
      if (!firstUser || position[use->getOwner()] < position[firstUser])
        firstUser = use->getOwner();
    OpBuilder b(firstUser);
    Location loc = shardArg.getLoc();
    // hpZ: after the first, within the group from the secondary partition.
    Value full = secondary ? allGather(b, loc, secondary, bucket.padded, kHpzGrid, {1})
                           : quantizedIf(quantizedWeights,
                                         allGather(b, loc, shardArg, bucket.padded));
    if (hpz() && !secondary) {
      // The first gather (forward) also keeps its group's slice of the bucket.
      auto t = RankedTensorType::get({bucket.padded / hpzPartitionSize},
                                     typeOf(shardArg).getElementType());
      secondary = mlir::shard::AllSliceOp::create(b, loc, t, full, kHpzGrid,
                                                  ArrayRef<int16_t>{1}, 0);
    }
    // Without this the gathers are identical pure ops and CSE would merge them,
    // keeping the full bucket alive from forward to backward.
    std::string name = phase % 2 ? "backward" : "forward";
    if (phase > 1)
      name += "-" + std::to_string(phase / 2);
    full.getDefiningOp()->setAttr(zops::attr::kPhase, b.getStringAttr(name));
    DenseMap<Value, Value> copyOf;
    for (const Member &m : bucket.members)
      copyOf[m.param] = unflatten(b, loc, full, m);
    for (OpOperand *use : uses)
      use->set(copyOf[use->get()]);
  }
  return success();
}
