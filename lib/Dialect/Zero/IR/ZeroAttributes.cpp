//===- ZeroAttributes.cpp - The zero.* attributes passes share ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The dialect's verifier checks every `zero.*` attribute against its record in
// ZeroAttributes.def: whether it belongs on the module or on an op of the step,
// and what it holds.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Dialect/Zero/IR/ZeroDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace zero::zops;

namespace {

enum class Place { Module, Step };
enum class Holds { Unit, Name, Count, Dictionary };

struct AttrRule {
  bool onModule; // else on an op inside a function
  Holds holds;
  const char *meaning;
};

const llvm::StringMap<AttrRule> &rules() {
  static const llvm::StringMap<AttrRule> table = {
#define ZERO_ATTR(ID, NAME, PLACE, HOLDS, MEANING)                                         \
  {attr::ID, {Place::PLACE == Place::Module, Holds::HOLDS, MEANING}},
#include "zero/Dialect/Zero/IR/ZeroAttributes.def"
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
