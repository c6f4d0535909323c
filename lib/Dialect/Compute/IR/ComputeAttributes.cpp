//===- ComputeAttributes.cpp - The compute.* attributes passes share ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The dialect's verifier checks every `compute.*` attribute against its record
// in ComputeAttributes.def: where it may appear (on the function, an argument or
// a result of func.func) and what it holds.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Compute/IR/ComputeAttributes.h"
#include "zero/Dialect/Compute/IR/ComputeDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace zero::compute;

namespace {

enum class Place { Function, Argument, Result };
enum class Holds {
  Unit,          // a flag
  Name,          // a non-empty string
  Count,         // a non-negative i64
  Names,         // an array of strings
  Members,       // an array of dictionaries (a bucket's members)
  Precision,     // "bf16" or "fp16"
};

struct AttrRule {
  Place place;
  Holds holds;
  const char *meaning;
};

const llvm::StringMap<AttrRule> &rules() {
  static const llvm::StringMap<AttrRule> table = {
#define COMPUTE_ATTR(ID, NAME, PLACE, HOLDS, MEANING)                                      \
  {attr::ID, {Place::PLACE, Holds::HOLDS, MEANING}},
#include "zero/Dialect/Compute/IR/ComputeAttributes.def"
  };
  return table;
}

const char *placeName(Place p) {
  return p == Place::Function ? "a func.func" : p == Place::Argument ? "a function argument"
                                                                     : "a function result";
}

LogicalResult check(Operation *op, NamedAttribute attr, Place place) {
  auto rule = rules().find(attr.getName().strref());
  if (rule == rules().end())
    return op->emitError() << "unknown compute dialect attribute '" << attr.getName().getValue()
                           << "'";
  const AttrRule &r = rule->second;
  if (r.place != place || !isa<func::FuncOp>(op))
    return op->emitError() << "'" << attr.getName().getValue() << "' (" << r.meaning
                           << ") belongs on " << placeName(r.place) << ", not on "
                           << (isa<func::FuncOp>(op) ? placeName(place)
                                                     : "'" + op->getName().getStringRef().str() + "'");
  Attribute v = attr.getValue();
  auto bad = [&](const char *want) {
    return op->emitError() << "'" << attr.getName().getValue() << "' (" << r.meaning << ") must be "
                           << want << ", not " << v;
  };
  switch (r.holds) {
  case Holds::Unit:
    return isa<UnitAttr>(v) ? success() : bad("a unit attribute");
  case Holds::Name: {
    auto s = dyn_cast<StringAttr>(v);
    return s && !s.getValue().empty() ? success() : bad("a non-empty string");
  }
  case Holds::Count: {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && i.getType().isInteger(64) && i.getInt() >= 0 ? success()
                                                             : bad("a non-negative i64");
  }
  case Holds::Names: {
    auto a = dyn_cast<ArrayAttr>(v);
    return a && llvm::all_of(a, [](Attribute e) { return isa<StringAttr>(e); })
               ? success()
               : bad("an array of strings");
  }
  case Holds::Members: {
    auto a = dyn_cast<ArrayAttr>(v);
    return a && llvm::all_of(a, [](Attribute e) { return isa<DictionaryAttr>(e); })
               ? success()
               : bad("an array of dictionaries");
  }
  case Holds::Precision: {
    auto s = dyn_cast<StringAttr>(v);
    return s && (s.getValue() == "bf16" || s.getValue() == "fp16")
               ? success()
               : bad("\"bf16\" or \"fp16\"");
  }
  }
  return success();
}

} // namespace

LogicalResult ComputeDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  return check(op, attr, Place::Function);
}

LogicalResult ComputeDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                       unsigned, NamedAttribute attr) {
  return check(op, attr, Place::Argument);
}

LogicalResult ComputeDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                          unsigned index,
                                                          NamedAttribute attr) {
  if (failed(check(op, attr, Place::Result)))
    return failure();
  // compute.updates names an argument of the same function.
  auto func = cast<func::FuncOp>(op);
  if (attr.getName() == attr::kUpdates &&
      cast<IntegerAttr>(attr.getValue()).getInt() >= func.getNumArguments())
    return op->emitError() << "result " << index << "'s '" << attr::kUpdates << "' names argument "
                           << cast<IntegerAttr>(attr.getValue()).getInt() << " of "
                           << func.getNumArguments();
  return success();
}
