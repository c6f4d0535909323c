//===- KernelUtil.cpp - Helpers shared by the CPU kernels -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <cmath>

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

int64_t zrt::cpu::extentProduct(const Shape &s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= s[i];
  return p;
}

void zrt::cpu::splitAxis(const Shape &shape, int64_t axis, int64_t &outer, int64_t &dim,
                         int64_t &inner) {
  dim = shape.empty() ? 1 : shape[axis];
  outer = extentProduct(shape, 0, axis);
  inner = extentProduct(shape, axis + 1, shape.size());
}

Shape zrt::cpu::gatheredShape(const KernelCall &call, const Shape &data, int64_t axis,
                              const TensorView &idx) {
  int64_t rank = data.size();
  ZRT_CHECK(rank > 0 && axis >= 0 && axis < rank, call.where() << ": axis out of range");
  ZRT_CHECK(idx.dtype == zero::zplan::I64 || idx.dtype == zero::zplan::I32,
            call.where() << ": indices must be i32 or i64");
  Shape shape(data.begin(), data.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.begin() + axis + 1, data.end());
  return shape;
}

SliceWindow zrt::cpu::sliceWindow(const KernelCall &call, const Shape &full,
                                  const Shape &part, const char *partName,
                                  const char *fullName, const char *verb) {
  std::vector<int64_t> starts = call.intsAttr("starts"), steps = call.intsAttr("steps");
  size_t rank = full.size();
  ZRT_CHECK(starts.size() == rank && steps.size() == rank && part.size() == rank,
            call.where() << ": starts, steps and " << partName << " must match the "
                         << fullName << " rank");
  Shape st = stridesOf(full);
  SliceWindow w;
  w.strides.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Any int64 may come in: the last index is computed without overflow, and
    // base and stride only once it is known to lie inside the tensor.
    int64_t last = 0;
    bool inside = part[d] == 0 ||
                  (starts[d] >= 0 && starts[d] < full[d] &&
                   !__builtin_mul_overflow(part[d] - 1, steps[d], &last) &&
                   !__builtin_add_overflow(last, starts[d], &last) && last >= 0 &&
                   last < full[d]);
    ZRT_CHECK(inside, call.where() << ": dimension " << d << " " << verb
                                   << " outside the " << fullName);
    if (part[d] == 0)
      continue; // nothing is read: base and stride do not matter
    w.base += starts[d] * st[d];
    w.strides[d] = part[d] > 1 ? steps[d] * st[d] : 0;
  }
  return w;
}

double zrt::cpu::softmaxScale(const KernelCall &call) {
  double scale = call.hasAttr("scale") ? call.floatAttr("scale") : 1.0;
  ZRT_CHECK(std::isfinite(scale), call.where() << ": scale " << scale << " is not finite");
  return scale;
}

SoftmaxPrologue zrt::cpu::softmaxPrologue(const KernelCall &call, bool allowed) {
  ZRT_CHECK(!call.ins.empty() && call.ins.size() <= (allowed ? 2u : 1u) &&
                call.outs.size() == 1,
            call.where() << ": takes " << (allowed ? "1 or 2 inputs (the second: a bias)"
                                                   : "1 input")
                         << " and 1 output");
  SoftmaxPrologue p;
  p.scale = softmaxScale(call);
  ZRT_CHECK(allowed || p.scale == 1.0, call.where() << ": takes no scale");
  p.hasBias = call.ins.size() == 2;
  if (!p.any())
    return p;
  const TensorView &x = call.ins[0];
  int64_t rank = x.shape.size();
  ZRT_CHECK(call.intAttr("axis") == std::max<int64_t>(rank, 1) - 1,
            call.where() << ": a scale or bias needs the softmax along the last axis");
  if (!p.hasBias)
    return p;
  const TensorView &bias = call.ins[1];
  ZRT_CHECK(bias.dtype == x.dtype, call.where() << ": the bias's dtype is not the input's");
  ZRT_CHECK(bias.shape.size() <= x.shape.size() &&
                broadcastShapes({x.shape, bias.shape}, call) == x.shape,
            call.where() << ": bias " << shapeString(bias.shape) << " does not broadcast to "
                         << shapeString(x.shape));
  if (rank == 0) {
    p.rowOffsets = {0};
    return p;
  }
  Shape strides = broadcastStrides(bias.shape, x.shape);
  p.step = strides.back();
  Shape rows(x.shape.begin(), x.shape.end() - 1);
  strides.pop_back();
  forEachBroadcast<1>(rows, std::array<Shape, 1>{strides},
                      [&](int64_t, auto off) { p.rowOffsets.push_back(off[0]); });
  return p;
}

CrossEntropyGeometry zrt::cpu::crossEntropyGeometry(const KernelCall &call,
                                                    const TensorView &scores,
                                                    const char *scoresName,
                                                    const TensorView &labels,
                                                    const TensorView *weights) {
  CrossEntropyGeometry g;
  std::string reduction = call.stringAttr("reduction");
  ZRT_CHECK(reduction == "none" || reduction == "sum" || reduction == "mean",
            call.where() << ": unknown reduction '" << reduction << "'");
  g.reduction = reduction == "none"  ? Reduction::None
                : reduction == "sum" ? Reduction::Sum
                                     : Reduction::Mean;
  g.hasIgnore = call.hasAttr("ignore_index");
  g.ignore = g.hasIgnore ? call.intAttr("ignore_index") : 0;
  ZRT_CHECK(scores.shape.size() >= 2,
            call.where() << ": " << scoresName << " must have rank >= 2");
  ZRT_CHECK(labels.dtype == zero::zplan::I64 || labels.dtype == zero::zplan::I32,
            call.where() << ": labels must be i32 or i64");
  g.labels64 = labels.dtype == zero::zplan::I64;
  g.n = scores.shape[0];
  g.c = scores.shape[1];
  g.inner = extentProduct(scores.shape, 2, scores.shape.size());
  g.labelShape = scores.shape;
  g.labelShape.erase(g.labelShape.begin() + 1);
  expectShape(call, labels, g.labelShape, "labels");
  if (weights)
    expectShape(call, *weights, {g.c}, "weights");
  return g;
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
  return "kernel '" + name() + "'" + (loc.empty() ? "" : " at " + loc);
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
    addFusedKernels(t);
    addLinearAlgebraKernels(t);
    addNormalizationKernels(t);
    addAttentionKernels(t);
    addReductionKernels(t);
    addDataMovementKernels(t);
    addTrainingKernels(t);
    addCollectiveKernels(t);
    return t;
  }();
  return table;
}

KernelCall zrt::planKernelCall(const zero::zplan::Plan &plan, int k, char *arena,
                               char *hostArena, Communicator *comm,
                               AsyncCollectives *async, NvmeFile *nvme) {
  const auto &pk = plan.kernels(k);
  KernelCall call;
  call.kind = pk.kind();
  call.loc = pk.loc();
  call.attrs = &pk.attrs();
  call.comm = comm;
  call.async = async;
  call.nvme = nvme;
  auto view = [&](int i) {
    const auto &b = plan.buffers(i);
    if (b.nvme()) { // in the file: an offset, not an address
      call.nvmeOffset = b.offset();
      return TensorView{nullptr, b.dtype(),
                        std::vector<int64_t>(b.shape().begin(), b.shape().end())};
    }
    return TensorView{(b.host() ? hostArena : arena) + b.offset(), b.dtype(),
                      std::vector<int64_t>(b.shape().begin(), b.shape().end())};
  };
  for (int i : pk.inputs())
    call.ins.push_back(view(i));
  for (int i : pk.outputs())
    call.outs.push_back(view(i));
  return call;
}

BoundKernel zrt::bindKernelCall(const KernelTable &table, const KernelCall &call) {
  auto it = table.find(call.kind);
  ZRT_CHECK(it != table.end(), call.where() << " is not implemented by this runtime");
  return it->second(call);
}

BoundKernel zrt::bindPlanKernel(const KernelTable &table, const zero::zplan::Plan &plan,
                                int k, char *arena, char *hostArena, Communicator *comm,
                                AsyncCollectives *async) {
  return bindKernelCall(table, planKernelCall(plan, k, arena, hostArena, comm, async));
}

bool zrt::cpu::isWidened(const KernelCall &call, DType narrow, DType wide, const char *what) {
  bool half = narrow == zero::zplan::BF16 || narrow == zero::zplan::F16;
  ZRT_CHECK(wide == narrow || (half && wide == zero::zplan::F32),
            call.where() << ": " << what << " (" << dtypeName(narrow) << ")"
                         << (half ? " or f32" : "") << ", not " << dtypeName(wide));
  return wide != narrow;
}

std::shared_ptr<OptimizerMembers> zrt::cpu::optimizerMembers(const KernelCall &call,
                                                            size_t own) {
  auto m = std::make_shared<OptimizerMembers>();
  std::vector<int64_t> seg(own, 1);
  if (call.hasAttr("operand_segments"))
    seg = call.intsAttr("operand_segments");
  ZRT_CHECK(seg.size() >= own && seg[0] >= 1, call.where() << ": bad operand_segments");
  int64_t n = seg[0];
  size_t scalars = 0;
  for (size_t i = own; i < seg.size(); ++i)
    scalars += (size_t)seg[i];
  bool wellFormed = call.ins.size() == own * n + scalars && call.outs.size() % n == 0;
  for (size_t i = 1; i < own; ++i)
    wellFormed = wellFormed && seg[i] == n;
  ZRT_CHECK(wellFormed, call.where() << ": its operand_segments do not describe its "
                                     << call.ins.size() << " inputs and "
                                     << call.outs.size() << " outputs");
  if (call.attrs)
    m->attrs = *call.attrs;
  if (call.hasAttr("operand_segments")) {
    auto *ints = m->attrs["operand_segments"].mutable_ints();
    for (size_t i = 0; i < own; ++i)
      ints->set_values((int)i, 1);
  }
  size_t results = call.outs.size() / n;
  for (int64_t j = 0; j < n; ++j) {
    KernelCall c = call;
    c.attrs = &m->attrs;
    c.ins.clear();
    c.outs.clear();
    for (size_t i = 0; i < own; ++i)
      c.ins.push_back(call.ins[i * n + j]);
    c.ins.insert(c.ins.end(), call.ins.end() - scalars, call.ins.end());
    for (size_t i = 0; i < results; ++i)
      c.outs.push_back(call.outs[i * n + j]);
    m->calls.push_back(std::move(c));
  }
  return m;
}
