//===- ZeroAttributes.cpp - The zero.* attributes passes share ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// One table: each discardable attribute of the zero dialect, whether it belongs on
// the module or on an op of the step, and what it holds. The dialect's verifier
// checks every `zero.*` attribute against it.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Zero/IR/ZeroDialect.h"
#include "zero/Support/CollectiveQuantization.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace zero::zops;

namespace {

enum class Holds { Unit, Name, Count, Dictionary };

struct AttrRule {
  bool onModule; // else on an op inside a function
  Holds holds;
  const char *meaning;
};

const llvm::StringMap<AttrRule> &rules() {
  static const llvm::StringMap<AttrRule> table = {
      // On ops of the step.
      {"zero.phase", {false, Holds::Name, "the bucket whose gather an op waits for"}},
      {"zero.micro_phase", {false, Holds::Count, "a micro-batch's forward or backward"}},
      {"zero.accumulate", {false, Holds::Unit, "a gradient accumulation"}},
      {"zero.recompute", {false, Holds::Unit, "a recomputed copy of a forward op"}},
      {"zero.host", {false, Holds::Unit, "runs on the host (optimizer offload)"}},
      {zero::kQuantizeBlockAttr,
       {false, Holds::Count, "values per int8 block of a quantized collective"}},
      // On the module.
      {"zero.stage", {true, Holds::Count, "the ZeRO stage"}},
      {"zero.recompute_level", {true, Holds::Count, "the recomputation level chosen"}},
      {"zero.print_every", {true, Holds::Count, "zero-run's default --print-every"}},
      {"zero.profile", {true, Holds::Unit, "zero-run profiles by default"}},
      {"zero.precision", {true, Holds::Name, "the 16-bit type"}},
      {"zero.lr_schedule", {true, Holds::Dictionary, "the learning-rate schedule"}},
      {"zero.loss_scaling", {true, Holds::Dictionary, "fp16 loss scaling"}},
  };
  return table;
}

} // namespace

LogicalResult ZeroDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto rule = rules().find(name);
  if (rule == rules().end())
    return op->emitError() << "unknown zero dialect attribute '" << name << "'";
  const AttrRule &r = rule->second;
  if (r.onModule != isa<ModuleOp>(op))
    return op->emitError() << "'" << name << "' (" << r.meaning << ") belongs on "
                           << (r.onModule ? "the module" : "an op of the step")
                           << ", not on '" << op->getName() << "'";
  Attribute v = attr.getValue();
  bool ok = false;
  const char *want = "";
  switch (r.holds) {
  case Holds::Unit:
    ok = isa<UnitAttr>(v), want = "a unit attribute";
    break;
  case Holds::Name:
    ok = isa<StringAttr>(v) && !cast<StringAttr>(v).getValue().empty(),
    want = "a non-empty string";
    break;
  case Holds::Count:
    ok = isa<IntegerAttr>(v) && cast<IntegerAttr>(v).getType().isInteger(64) &&
         cast<IntegerAttr>(v).getInt() >= 0;
    want = "a non-negative i64";
    break;
  case Holds::Dictionary:
    ok = isa<DictionaryAttr>(v), want = "a dictionary";
    break;
  }
  if (!ok)
    return op->emitError() << "'" << name << "' (" << r.meaning << ") must be " << want
                           << ", not " << v;
  return success();
}
