//===- KernelUtil.cpp - Helpers shared by the CPU kernels -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

using namespace zrt;
using namespace zrt::cpu;

std::string zrt::cpu::shapeString(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "x" : "") + std::to_string(s[i]);
  return out + "]";
}

Shape zrt::cpu::broadcastShapes(const std::vector<Shape> &shapes,
                                const KernelCall &call) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      int64_t d = s[i];
      ZRT_CHECK(d == o || d == 1 || o == 1,
                call.where() << ": shapes do not broadcast");
      if (o == 1)
        o = d;
    }
  return out;
}

Shape zrt::cpu::stridesOf(const Shape &s) {
  Shape st(s.size(), 1);
  for (int i = (int)s.size() - 2; i >= 0; --i)
    st[i] = st[i + 1] * s[i + 1];
  return st;
}

Shape zrt::cpu::broadcastStrides(const Shape &in, const Shape &out) {
  Shape st(out.size(), 0);
  Shape own = stridesOf(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    st[off + i] = in[i] == 1 ? 0 : own[i];
  return st;
}

void zrt::cpu::expectShape(const KernelCall &call, const TensorView &v, const Shape &s,
                           const char *what) {
  ZRT_CHECK(v.shape == s, call.where() << ": " << what << " has shape "
                                       << shapeString(v.shape) << ", expected "
                                       << shapeString(s));
}

//===----------------------------------------------------------------------===//
// KernelCall
//===----------------------------------------------------------------------===//

std::string KernelCall::where() const {
  return "kernel '" + name + "'" + (loc.empty() ? "" : " at " + loc);
}

bool KernelCall::hasAttr(const std::string &key) const {
  return attrs && attrs->count(key);
}

static const zero::zplan::Attr &getAttr(const KernelCall &call, const std::string &key,
                                        zero::zplan::Attr::ValueCase kind) {
  ZRT_CHECK(call.hasAttr(key), call.where() << ": missing attribute '" << key << "'");
  const auto &a = call.attrs->at(key);
  ZRT_CHECK(a.value_case() == kind,
            call.where() << ": attribute '" << key << "' has the wrong kind");
  return a;
}

int64_t KernelCall::intAttr(const std::string &key) const {
  return getAttr(*this, key, zero::zplan::Attr::kI).i();
}
double KernelCall::floatAttr(const std::string &key) const {
  return getAttr(*this, key, zero::zplan::Attr::kF).f();
}
std::string KernelCall::stringAttr(const std::string &key) const {
  return getAttr(*this, key, zero::zplan::Attr::kS).s();
}
std::vector<int64_t> KernelCall::intsAttr(const std::string &key) const {
  // An empty integer list serializes as an unset IntList: accept both.
  ZRT_CHECK(hasAttr(key), where() << ": missing attribute '" << key << "'");
  const auto &a = attrs->at(key);
  ZRT_CHECK(a.value_case() == zero::zplan::Attr::kInts ||
                a.value_case() == zero::zplan::Attr::VALUE_NOT_SET,
            where() << ": attribute '" << key << "' is not an integer list");
  return {a.ints().values().begin(), a.ints().values().end()};
}

void KernelCall::expectArity(size_t nIn, size_t nOut) const {
  ZRT_CHECK(ins.size() == nIn && outs.size() == nOut,
            where() << ": takes " << nIn << " inputs and " << nOut
                    << " outputs, the plan gives " << ins.size() << " and "
                    << outs.size());
}

const KernelTable &zrt::cpuKernels() {
  static const KernelTable table = [] {
    KernelTable t;
    addElementwiseKernels(t);
    addLinearAlgebraKernels(t);
    addNormalizationKernels(t);
    addReductionKernels(t);
    addDataMovementKernels(t);
    addTrainingKernels(t);
    addCollectiveKernels(t);
    return t;
  }();
  return table;
}
