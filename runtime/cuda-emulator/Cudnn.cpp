//===- Cudnn.cpp - Emulated cuDNN graph API ------------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Descriptors are host objects holding their attributes as set. Finalize checks
// what cuDNN requires of each kind (tensors fully described, operations' tensors
// consistent in rank and broadcast, an operation graph whose virtual tensors are
// each written once before they are read) and derives the graph's order. The
// heuristic offers one engine for any graph this file can interpret; its plan asks
// for a small workspace so that the caller's is checked. Execute checks the variant
// pack against the graph (every non-virtual tensor given, inside device memory at
// its declared alignment) and queues the interpretation on the handle's stream:
// each operation over its output's index space, virtual tensors in f32 rounded to
// their declared type (so 16-bit probabilities are rounded as on a GPU), sums in
// f64. Failures return cuDNN's status codes, with the reason for
// cudnnGetLastErrorString.
//
//===----------------------------------------------------------------------===//

#include "CudnnGraph.h"
#include "Emulator.h"
#include "cudnn.h"
#include "zrt/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace zero_cuda_emulator::detail;

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

namespace {

thread_local std::string lastCudnnError;

cudnnStatus_t fail(cudnnStatus_t status, const std::string &why) {
  lastCudnnError = why;
  return status;
}

/// What the plan's workspace must be at least (so the caller's is checked).
constexpr int64_t kWorkspace = 4096;

struct Attr {
  cudnnBackendAttributeType_t type;
  std::vector<int64_t> ints;  // INT64, BOOLEAN and the enumerations
  std::vector<double> reals;  // FLOAT, DOUBLE
  std::vector<void *> ptrs;   // VOID_PTR, BACKEND_DESCRIPTOR, HANDLE
};

struct Desc {
  cudnnBackendDescriptorType_t type = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
  bool finalized = false;
  std::map<int, Attr> attrs;
  Tensor tensor;                 // TENSOR
  Op op;                         // OPERATION_*
  int64_t pwMode = 0, pwAxis = -1, redOp = 0; // POINTWISE, REDUCTION
  std::shared_ptr<const Graph> graph; // OPERATIONGRAPH, ENGINECFG, EXECUTION_PLAN
  std::vector<int64_t> uids;     // VARIANT_PACK
  std::vector<void *> pointers;
  void *workspace = nullptr;
};

std::mutex liveMutex;
std::set<const Desc *> live;

Desc *descOf(cudnnBackendDescriptor_t d) {
  std::lock_guard<std::mutex> lock(liveMutex);
  return live.count((const Desc *)d) ? (Desc *)d : nullptr;
}

size_t sizeOf(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_DOUBLE:
  case CUDNN_DATA_INT64:
    return 8;
  case CUDNN_DATA_HALF:
  case CUDNN_DATA_BFLOAT16:
    return 2;
  case CUDNN_DATA_BOOLEAN:
    return 1;
  default:
    return 4;
  }
}

bool knownType(int64_t t) {
  switch (t) {
  case CUDNN_DATA_FLOAT:
  case CUDNN_DATA_DOUBLE:
  case CUDNN_DATA_HALF:
  case CUDNN_DATA_INT32:
  case CUDNN_DATA_BFLOAT16:
  case CUDNN_DATA_INT64:
  case CUDNN_DATA_BOOLEAN:
    return true;
  }
  return false;
}

/// The attribute `name` of `d`, of `type`, with `count` elements (0: any but none).
const Attr *need(const Desc &d, int name, cudnnBackendAttributeType_t type, size_t count,
                 std::string &why) {
  auto it = d.attrs.find(name);
  std::ostringstream os;
  if (it == d.attrs.end())
    os << "attribute " << name << " is not set";
  else if (it->second.type != type)
    os << "attribute " << name << " has type " << it->second.type << ", not " << type;
  else {
    size_t n = it->second.ints.size() + it->second.reals.size() + it->second.ptrs.size();
    if ((count && n != count) || !n)
      os << "attribute " << name << " has " << n << " elements";
    else
      return &it->second;
  }
  why = os.str();
  return nullptr;
}

/// A finalized descriptor of `type` set as attribute `name` of `d`.
Desc *needDesc(const Desc &d, int name, cudnnBackendDescriptorType_t type, std::string &why) {
  const Attr *a = need(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, why);
  if (!a)
    return nullptr;
  Desc *r = descOf(a->ptrs[0]);
  if (!r || r->type != type || !r->finalized) {
    why = "attribute " + std::to_string(name) + " is not a finalized descriptor of type " +
          std::to_string(type);
    return nullptr;
  }
  return r;
}

int64_t elements(const Tensor &t) {
  int64_t n = 1;
  for (int64_t d : t.dims)
    n *= d;
  return n;
}

/// One past the last element a tensor's strides reach.
int64_t span(const Tensor &t) {
  int64_t s = 1;
  for (size_t i = 0; i < t.dims.size(); ++i)
    s += (t.dims[i] - 1) * t.strides[i];
  return s;
}

std::string describe(const Tensor &t) {
  std::ostringstream os;
  os << "tensor " << t.uid << " [";
  for (size_t i = 0; i < t.dims.size(); ++i)
    os << (i ? "," : "") << t.dims[i];
  os << "]";
  return os.str();
}

cudnnStatus_t finalizeTensor(Desc &d) {
  std::string why;
  const Attr *type = need(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, why);
  const Attr *dims = type ? need(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 0, why) : nullptr;
  const Attr *strides =
      dims ? need(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, dims->ints.size(), why) : nullptr;
  const Attr *uid = strides ? need(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, why) : nullptr;
  const Attr *align =
      uid ? need(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, why) : nullptr;
  if (!align)
    return fail(CUDNN_STATUS_BAD_PARAM, "tensor: " + why);
  Tensor &t = d.tensor;
  t.type = (cudnnDataType_t)type->ints[0];
  t.dims = dims->ints;
  t.strides = strides->ints;
  t.uid = uid->ints[0];
  t.alignment = align->ints[0];
  if (auto it = d.attrs.find(CUDNN_ATTR_TENSOR_IS_VIRTUAL); it != d.attrs.end())
    t.isVirtual = it->second.ints.at(0) != 0;
  if (auto it = d.attrs.find(CUDNN_ATTR_TENSOR_IS_BY_VALUE); it != d.attrs.end())
    t.byValue = it->second.ints.at(0) != 0;
  if (!knownType(t.type) || t.dims.size() > 8 || t.alignment <= 0 ||
      (t.alignment & (t.alignment - 1)))
    return fail(CUDNN_STATUS_BAD_PARAM, describe(t) + ": bad type, rank or alignment");
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (t.dims[i] < 1 || t.strides[i] < 0)
      return fail(CUDNN_STATUS_BAD_PARAM, describe(t) + ": a dimension < 1 or negative stride");
  if (t.byValue && (t.isVirtual || elements(t) != 1))
    return fail(CUDNN_STATUS_BAD_PARAM, describe(t) + ": a by-value tensor is one element");
  return CUDNN_STATUS_SUCCESS;
}

/// Whether `in` broadcasts to `out`: the same rank, each dimension equal or 1.
bool broadcasts(const Tensor &in, const Tensor &out) {
  if (in.dims.size() != out.dims.size())
    return false;
  for (size_t i = 0; i < in.dims.size(); ++i)
    if (in.dims[i] != out.dims[i] && in.dims[i] != 1)
      return false;
  return true;
}

int pointwiseInputs(int64_t mode) {
  switch (mode) {
  case CUDNN_POINTWISE_ADD:
  case CUDNN_POINTWISE_SUB:
  case CUDNN_POINTWISE_MUL:
  case CUDNN_POINTWISE_DIV:
  case CUDNN_POINTWISE_CMP_GE:
    return 2;
  case CUDNN_POINTWISE_EXP:
  case CUDNN_POINTWISE_LOG:
  case CUDNN_POINTWISE_IDENTITY:
  case CUDNN_POINTWISE_GEN_INDEX:
    return 1;
  case CUDNN_POINTWISE_BINARY_SELECT:
    return 3;
  }
  return 0;
}

const Tensor *tensorAttr(const Desc &d, int name, std::string &why) {
  Desc *t = needDesc(d, name, CUDNN_BACKEND_TENSOR_DESCRIPTOR, why);
  return t ? &t->tensor : nullptr;
}

cudnnStatus_t finalizeOperation(Desc &d) {
  std::string why;
  Op &op = d.op;
  op.ins.clear();
  auto bad = [&](const std::string &w) { return fail(CUDNN_STATUS_BAD_PARAM, "operation: " + w); };
  if (d.type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
    op.kind = OpKind::Pointwise;
    Desc *pw = needDesc(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                        CUDNN_BACKEND_POINTWISE_DESCRIPTOR, why);
    if (!pw)
      return bad(why);
    op.mode = pw->pwMode;
    op.axis = pw->pwAxis;
    int n = pointwiseInputs(op.mode);
    const int names[3] = {CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                          CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                          CUDNN_ATTR_OPERATION_POINTWISE_TDESC};
    for (int i = 0; i < n; ++i) {
      const Tensor *t = tensorAttr(d, names[i], why);
      if (!t)
        return bad("pointwise mode " + std::to_string(op.mode) + ": " + why);
      op.ins.push_back(*t);
    }
    const Tensor *y = tensorAttr(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, why);
    if (!y)
      return bad(why);
    op.out = *y;
    for (const Tensor &t : op.ins)
      if (!broadcasts(t, op.out))
        return bad(describe(t) + " does not broadcast to " + describe(op.out));
    if (op.mode == CUDNN_POINTWISE_GEN_INDEX &&
        (op.axis < 0 || op.axis >= (int64_t)op.out.dims.size()))
      return bad("GEN_INDEX axis " + std::to_string(op.axis) + " outside " + describe(op.out));
  } else if (d.type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
    op.kind = OpKind::Matmul;
    if (!needDesc(d, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_MATMUL_DESCRIPTOR, why))
      return bad(why);
    const Tensor *a = tensorAttr(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, why);
    const Tensor *b = a ? tensorAttr(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, why) : nullptr;
    const Tensor *c = b ? tensorAttr(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, why) : nullptr;
    if (!c)
      return bad(why);
    op.ins = {*a, *b};
    op.out = *c;
    size_t r = c->dims.size();
    if (r < 2 || a->dims.size() != r || b->dims.size() != r)
      return bad("matmul operands of different ranks");
    if (a->dims[r - 2] != c->dims[r - 2] || b->dims[r - 1] != c->dims[r - 1] ||
        a->dims[r - 1] != b->dims[r - 2])
      return bad("matmul " + describe(*a) + " x " + describe(*b) + " -> " + describe(*c) +
                 ": the product's shapes do not match");
    for (size_t i = 0; i + 2 < r; ++i)
      if (c->dims[i] % a->dims[i] || c->dims[i] % b->dims[i])
        return bad("matmul batch dimension " + std::to_string(i) + " does not broadcast");
  } else if (d.type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR) {
    op.kind = OpKind::Reduction;
    Desc *red = needDesc(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                         CUDNN_BACKEND_REDUCTION_DESCRIPTOR, why);
    const Tensor *x = red ? tensorAttr(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, why) : nullptr;
    const Tensor *y = x ? tensorAttr(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, why) : nullptr;
    if (!y)
      return bad(why);
    op.mode = red->redOp;
    op.ins = {*x};
    op.out = *y;
    bool grouped = y->dims.size() == x->dims.size();
    for (size_t i = 0; grouped && i < y->dims.size(); ++i)
      grouped = x->dims[i] % y->dims[i] == 0;
    if (!grouped) // each of y's dimensions x's, 1, or a divisor (sums over groups)
      return bad("reduction of " + describe(*x) + " to " + describe(*y));
  } else {
    op.kind = OpKind::Reshape;
    const Tensor *x = tensorAttr(d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, why);
    const Tensor *y = x ? tensorAttr(d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, why) : nullptr;
    if (!y)
      return bad(why);
    op.ins = {*x};
    op.out = *y;
    if (elements(*x) != elements(*y) || !y->isVirtual)
      return bad("reshape of " + describe(*x) + " to " + describe(*y) +
                 ": not a virtual view of the same elements");
  }
  if (op.out.byValue)
    return bad(describe(op.out) + " is by value but written by an operation");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalizeGraph(Desc &d) {
  std::string why;
  if (!need(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, why))
    return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: " + why);
  const Attr *ops = need(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, why);
  if (!ops)
    return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: " + why);
  std::vector<Op> pending;
  for (void *p : ops->ptrs) {
    Desc *o = descOf(p);
    if (!o || !o->finalized ||
        (o->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
         o->type != CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR &&
         o->type != CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR &&
         o->type != CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR))
      return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: an operation is not finalized");
    pending.push_back(o->op);
  }
  // Every uid names one tensor; every tensor is written at most once.
  std::map<int64_t, Tensor> byUid;
  std::set<int64_t> written;
  for (const Op &op : pending) {
    std::vector<const Tensor *> all = {&op.out};
    for (const Tensor &t : op.ins)
      all.push_back(&t);
    for (const Tensor *t : all) {
      auto [it, fresh] = byUid.emplace(t->uid, *t);
      if (!fresh && !(it->second == *t))
        return fail(CUDNN_STATUS_BAD_PARAM,
                    "operation graph: two different tensors have uid " + std::to_string(t->uid));
    }
    if (!written.insert(op.out.uid).second)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "operation graph: " + describe(op.out) + " is written twice");
  }
  for (const auto &[uid, t] : byUid)
    if (t.isVirtual && !written.count(uid))
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "operation graph: virtual " + describe(t) + " is read but never written");
  // Order: an operation runs once everything it reads that the graph writes exists.
  auto graph = std::make_shared<Graph>();
  std::set<int64_t> ready;
  while (!pending.empty()) {
    auto next = std::find_if(pending.begin(), pending.end(), [&](const Op &op) {
      return std::all_of(op.ins.begin(), op.ins.end(), [&](const Tensor &t) {
        return !written.count(t.uid) || ready.count(t.uid);
      });
    });
    if (next == pending.end())
      return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: a cycle");
    ready.insert(next->out.uid);
    graph->ops.push_back(*next);
    pending.erase(next);
  }
  for (const auto &[uid, t] : byUid)
    if (!t.isVirtual)
      graph->boundary.emplace(uid, t);
  d.graph = graph;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize(Desc &d) {
  std::string why;
  switch (d.type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    return finalizeTensor(d);
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: {
    const Attr *mode = need(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, why);
    const Attr *prec =
        mode ? need(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, why) : nullptr;
    if (!prec)
      return fail(CUDNN_STATUS_BAD_PARAM, "pointwise: " + why);
    d.pwMode = mode->ints[0];
    if (!pointwiseInputs(d.pwMode))
      return fail(CUDNN_STATUS_NOT_SUPPORTED,
                  "pointwise: the emulator has no mode " + std::to_string(d.pwMode));
    if (d.pwMode == CUDNN_POINTWISE_GEN_INDEX) {
      const Attr *axis = need(d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, why);
      if (!axis)
        return fail(CUDNN_STATUS_BAD_PARAM, "pointwise GEN_INDEX: " + why);
      d.pwAxis = axis->ints[0];
    }
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    return need(d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, why)
               ? CUDNN_STATUS_SUCCESS
               : fail(CUDNN_STATUS_BAD_PARAM, "matmul: " + why);
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: {
    const Attr *op =
        need(d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, why);
    if (!op || !need(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, why))
      return fail(CUDNN_STATUS_BAD_PARAM, "reduction: " + why);
    d.redOp = op->ints[0];
    if (d.redOp != CUDNN_REDUCE_TENSOR_ADD && d.redOp != CUDNN_REDUCE_TENSOR_MAX)
      return fail(CUDNN_STATUS_NOT_SUPPORTED, "reduction: the emulator has ADD and MAX");
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    return finalizeOperation(d);
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    return finalizeGraph(d);
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
    Desc *g = needDesc(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                       CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, why);
    if (!g || !need(d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, why))
      return fail(CUDNN_STATUS_BAD_PARAM, "engine heuristic: " + why);
    d.graph = g->graph;
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "the emulator's engine configurations come from the heuristic only");
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
    Desc *cfg = needDesc(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                         CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, why);
    if (!cfg || !need(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, why))
      return fail(CUDNN_STATUS_BAD_PARAM, "execution plan: " + why);
    d.graph = cfg->graph;
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
    const Attr *uids = need(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 0, why);
    const Attr *ptrs = uids ? need(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                   uids->ints.size(), why)
                            : nullptr;
    const Attr *ws =
        ptrs ? need(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, why) : nullptr;
    if (!ws)
      return fail(CUDNN_STATUS_BAD_PARAM, "variant pack: " + why);
    d.uids = uids->ints;
    d.pointers = ptrs->ptrs;
    d.workspace = ws->ptrs[0];
    return CUDNN_STATUS_SUCCESS;
  }
  }
  return fail(CUDNN_STATUS_NOT_SUPPORTED, "the emulator has no descriptor type " +
                                              std::to_string(d.type));
}

// ---- Interpretation ----------------------------------------------------------

float roundTo(cudnnDataType_t t, double v) {
  switch (t) {
  case CUDNN_DATA_BFLOAT16:
    return (float)zrt::bf16((float)v);
  case CUDNN_DATA_HALF:
    return (float)zrt::f16((float)v);
  case CUDNN_DATA_INT32:
  case CUDNN_DATA_INT64:
    return (float)std::nearbyint(v);
  case CUDNN_DATA_BOOLEAN:
    return v != 0 ? 1.0f : 0.0f;
  default:
    return (float)v;
  }
}

/// Where a tensor's elements live while the graph runs: device memory in its type,
/// a by-value scalar, or (virtual) host floats already rounded to its type. A
/// reshape's result is a view of its input's storage.
struct Storage {
  char *device = nullptr;
  cudnnDataType_t deviceType = CUDNN_DATA_FLOAT;
  std::shared_ptr<std::vector<float>> host;
  float scalar = 0;
  bool isScalar = false;
};
struct View {
  Storage storage;
  Tensor tensor; // dims, strides and the type its reads are rounded to
};

double readAt(const View &v, int64_t off) {
  const Storage &s = v.storage;
  if (s.isScalar)
    return s.scalar;
  if (s.host)
    return roundTo(v.tensor.type, (*s.host)[off]);
  const char *p = s.device + off * sizeOf(s.deviceType);
  double x;
  switch (s.deviceType) {
  case CUDNN_DATA_FLOAT: x = *(const float *)p; break;
  case CUDNN_DATA_DOUBLE: x = *(const double *)p; break;
  case CUDNN_DATA_HALF: x = (float)*(const zrt::f16 *)p; break;
  case CUDNN_DATA_BFLOAT16: x = (float)*(const zrt::bf16 *)p; break;
  case CUDNN_DATA_INT32: x = *(const int32_t *)p; break;
  case CUDNN_DATA_INT64: x = (double)*(const int64_t *)p; break;
  default: x = *(const uint8_t *)p != 0; break;
  }
  return roundTo(v.tensor.type, x);
}

void writeAt(View &v, int64_t off, double x) {
  Storage &s = v.storage;
  if (s.host) {
    (*s.host)[off] = roundTo(v.tensor.type, x);
    return;
  }
  char *p = s.device + off * sizeOf(s.deviceType);
  switch (s.deviceType) {
  case CUDNN_DATA_FLOAT: *(float *)p = (float)x; break;
  case CUDNN_DATA_DOUBLE: *(double *)p = x; break;
  case CUDNN_DATA_HALF: *(zrt::f16 *)p = zrt::f16((float)x); break;
  case CUDNN_DATA_BFLOAT16: *(zrt::bf16 *)p = zrt::bf16((float)x); break;
  case CUDNN_DATA_INT32: *(int32_t *)p = (int32_t)std::nearbyint(x); break;
  case CUDNN_DATA_INT64: *(int64_t *)p = (int64_t)std::nearbyint(x); break;
  default: *(uint8_t *)p = x != 0; break;
  }
}

/// The offset in `t` of index `idx` of a space that `t` broadcasts to.
int64_t offsetOf(const Tensor &t, const std::vector<int64_t> &idx) {
  int64_t off = 0;
  for (size_t i = 0; i < t.dims.size(); ++i)
    off += (t.dims[i] == 1 ? 0 : idx[i]) * t.strides[i];
  return off;
}

/// The offset in `t` of index `idx` of `space`, each of whose dimensions is a
/// multiple of t's: consecutive groups of space's indices meet at one of t's (a
/// reduction over grouped heads).
int64_t groupedOffsetOf(const Tensor &t, const std::vector<int64_t> &space,
                        const std::vector<int64_t> &idx) {
  int64_t off = 0;
  for (size_t i = 0; i < t.dims.size(); ++i)
    off += idx[i] / (space[i] / t.dims[i]) * t.strides[i];
  return off;
}

/// Calls f(idx) for every index of `dims`, the last fastest.
template <typename F> void forEachIndex(const std::vector<int64_t> &dims, F f) {
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t a = dims.size(); a-- > 0;)
      if (++idx[a] < dims[a])
        break;
      else
        idx[a] = 0;
  }
}

double pointwise(int64_t mode, const std::vector<int64_t> &idx, int64_t axis, const double *x) {
  switch (mode) {
  case CUDNN_POINTWISE_ADD: return x[0] + x[1];
  case CUDNN_POINTWISE_SUB: return x[0] - x[1];
  case CUDNN_POINTWISE_MUL: return x[0] * x[1];
  case CUDNN_POINTWISE_DIV: return x[0] / x[1];
  case CUDNN_POINTWISE_CMP_GE: return x[0] >= x[1] ? 1 : 0;
  case CUDNN_POINTWISE_EXP: return std::exp(x[0]);
  case CUDNN_POINTWISE_LOG: return std::log(x[0]);
  case CUDNN_POINTWISE_IDENTITY: return x[0];
  case CUDNN_POINTWISE_GEN_INDEX: return (double)idx[axis];
  default: return x[2] != 0 ? x[0] : x[1]; // BINARY_SELECT
  }
}

void run(const Graph &g, std::map<int64_t, Storage> storages) {
  std::map<int64_t, View> views;
  auto viewOf = [&](const Tensor &t) -> View & {
    auto it = views.find(t.uid);
    if (it != views.end())
      return it->second;
    View v{Storage{}, t};
    if (t.isVirtual) {
      v.storage.host = std::make_shared<std::vector<float>>(span(t), NAN);
    } else {
      v.storage = storages.at(t.uid);
    }
    return views.emplace(t.uid, v).first->second;
  };
  for (const Op &op : g.ops) {
    std::vector<View *> in;
    for (const Tensor &t : op.ins)
      in.push_back(&viewOf(t));
    if (op.kind == OpKind::Reshape) {
      views[op.out.uid] = View{in[0]->storage, op.out};
      continue;
    }
    View &out = viewOf(op.out);
    const std::vector<int64_t> &od = op.out.dims;
    if (op.kind == OpKind::Pointwise) {
      forEachIndex(od, [&](const std::vector<int64_t> &idx) {
        double x[3] = {0, 0, 0};
        for (size_t i = 0; i < in.size(); ++i)
          x[i] = readAt(*in[i], offsetOf(in[i]->tensor, idx));
        writeAt(out, offsetOf(op.out, idx), pointwise(op.mode, idx, op.axis, x));
      });
    } else if (op.kind == OpKind::Reduction) {
      bool isMax = op.mode == CUDNN_REDUCE_TENSOR_MAX;
      std::map<int64_t, double> acc;
      forEachIndex(in[0]->tensor.dims, [&](const std::vector<int64_t> &idx) {
        double x = readAt(*in[0], offsetOf(in[0]->tensor, idx));
        auto [it, fresh] = acc.emplace(groupedOffsetOf(op.out, in[0]->tensor.dims, idx), x);
        if (!fresh)
          it->second = isMax ? std::max(it->second, x) : it->second + x;
      });
      for (const auto &[off, v] : acc)
        writeAt(out, off, v);
    } else { // Matmul: batch dimensions broadcast (a dimension dividing C's is grouped)
      const Tensor &a = in[0]->tensor, &b = in[1]->tensor;
      size_t r = od.size();
      int64_t k = a.dims[r - 1];
      forEachIndex(od, [&](const std::vector<int64_t> &idx) {
        int64_t offA = 0, offB = 0;
        for (size_t i = 0; i + 2 < r; ++i) {
          offA += idx[i] / (od[i] / a.dims[i]) * a.strides[i];
          offB += idx[i] / (od[i] / b.dims[i]) * b.strides[i];
        }
        offA += idx[r - 2] * a.strides[r - 2];
        offB += idx[r - 1] * b.strides[r - 1];
        double sum = 0;
        for (int64_t j = 0; j < k; ++j)
          sum += readAt(*in[0], offA + j * a.strides[r - 1]) *
                 readAt(*in[1], offB + j * b.strides[r - 2]);
        writeAt(out, offsetOf(op.out, idx), sum);
      });
    }
  }
}

} // namespace

/// CUDNN_VERSION, or ZERO_CUDA_EMULATOR_CUDNN_VERSION (a test of an older library).
size_t cudnnGetVersion() {
  static const size_t version = [] {
    const char *env = std::getenv("ZERO_CUDA_EMULATOR_CUDNN_VERSION");
    return env && *env ? (size_t)std::strtoull(env, nullptr, 10) : (size_t)CUDNN_VERSION;
  }();
  return version;
}

const char *cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
  case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
  case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
  case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
  case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
  default: return "CUDNN_STATUS_(other)";
  }
}

void cudnnGetLastErrorString(char *message, size_t max_size) {
  if (!message || !max_size)
    return;
  std::snprintf(message, max_size, "%s", lastCudnnError.c_str());
  lastCudnnError.clear();
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  if (!handle)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: no handle");
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnSetStream: no handle");
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *descriptor) {
  if (!descriptor)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "create descriptor: no result pointer");
  auto *d = new Desc;
  d->type = type;
  std::lock_guard<std::mutex> lock(liveMutex);
  live.insert(d);
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  std::lock_guard<std::mutex> lock(liveMutex);
  if (!live.erase((const Desc *)descriptor))
    return fail(CUDNN_STATUS_BAD_PARAM, "destroy: not a live descriptor");
  delete (Desc *)descriptor;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elements) {
  Desc *d = descOf(descriptor);
  if (!d)
    return fail(CUDNN_STATUS_BAD_PARAM, "set attribute: not a live descriptor");
  if (d->finalized)
    return fail(CUDNN_STATUS_NOT_INITIALIZED,
                "set attribute " + std::to_string(name) + ": the descriptor is finalized");
  if (count < 0 || (count && !elements))
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "set attribute: no elements");
  // Added in cuDNN 9.11 (cudnn-frontend sets it only from there:
  // include/cudnn_frontend/node/reduction.h): an older library knows no such name.
  if (name == CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC && cudnnGetVersion() < 91100)
    return fail(CUDNN_STATUS_BAD_PARAM, "set attribute CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC: "
                                        "cuDNN " + std::to_string(cudnnGetVersion()) +
                                        " has no such attribute (9.11 and later)");
  Attr a{type, {}, {}, {}};
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
    case CUDNN_TYPE_INT64: a.ints.push_back(((const int64_t *)elements)[i]); break;
    case CUDNN_TYPE_BOOLEAN: a.ints.push_back(((const bool *)elements)[i]); break;
    case CUDNN_TYPE_DATA_TYPE:
    case CUDNN_TYPE_HEUR_MODE:
    case CUDNN_TYPE_POINTWISE_MODE:
    case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE:
      a.ints.push_back(((const int *)elements)[i]);
      break;
    case CUDNN_TYPE_FLOAT: a.reals.push_back(((const float *)elements)[i]); break;
    case CUDNN_TYPE_DOUBLE: a.reals.push_back(((const double *)elements)[i]); break;
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      a.ptrs.push_back(((void *const *)elements)[i]);
      break;
    default:
      return fail(CUDNN_STATUS_NOT_SUPPORTED,
                  "set attribute: the emulator has no attribute type " + std::to_string(type));
    }
  }
  d->attrs[name] = std::move(a);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  Desc *d = descOf(descriptor);
  if (!d)
    return fail(CUDNN_STATUS_BAD_PARAM, "finalize: not a live descriptor");
  if (d->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "finalize: already finalized");
  cudnnStatus_t s = finalize(*d);
  d->finalized = s == CUDNN_STATUS_SUCCESS;
  return s;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *elements) {
  Desc *d = descOf(descriptor);
  if (!d || !d->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "get attribute: not a finalized descriptor");
  if (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS &&
      type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    // An attention graph not in cudnn-frontend's form: no engine takes it.
    if (std::string why = sdpaReferenceMismatch(*d->graph); !why.empty()) {
      if (count)
        *count = 0;
      lastCudnnError = "no engine: " + why;
      return CUDNN_STATUS_SUCCESS;
    }
    if (count)
      *count = 1; // one engine: this file's interpreter
    if (requested < 1)
      return CUDNN_STATUS_SUCCESS;
    Desc *cfg = descOf(((void **)elements)[0]);
    if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || cfg->finalized)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "heuristic results: pass created, unfinalized engine configurations");
    cfg->graph = d->graph;
    cfg->finalized = true;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
      name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && type == CUDNN_TYPE_INT64 &&
      requested >= 1 && elements) {
    *(int64_t *)elements = kWorkspace;
    if (count)
      *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  return fail(CUDNN_STATUS_NOT_SUPPORTED,
              "get attribute: the emulator answers the heuristic's results and a plan's "
              "workspace size");
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variantPack) {
  Desc *p = descOf(plan), *v = descOf(variantPack);
  if (!handle)
    return fail(CUDNN_STATUS_NOT_INITIALIZED, "execute: no handle");
  if (!p || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !p->finalized || !v ||
      v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !v->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "execute: not a finalized plan and variant pack");
  if (deviceOf("cudnnBackendExecute workspace", v->workspace, kWorkspace) < 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "execute: the workspace is not device memory of the "
                                        "plan's size");
  std::map<int64_t, Storage> storages;
  for (const auto &[uid, t] : p->graph->boundary) {
    auto at = std::find(v->uids.begin(), v->uids.end(), uid);
    if (at == v->uids.end())
      return fail(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack has no " + describe(t));
    void *ptr = v->pointers[at - v->uids.begin()];
    Storage s;
    if (t.byValue) {
      if (!ptr)
        return fail(CUDNN_STATUS_BAD_PARAM, "execute: no value for by-value " + describe(t));
      s.isScalar = true;
      s.scalar = t.type == CUDNN_DATA_FLOAT   ? *(const float *)ptr
                 : t.type == CUDNN_DATA_INT32 ? (float)*(const int32_t *)ptr
                                              : NAN;
      if (std::isnan(s.scalar) && t.type != CUDNN_DATA_FLOAT)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, "execute: by-value " + describe(t) +
                                                    " is neither FLOAT nor INT32");
    } else {
      std::string what = "cudnnBackendExecute " + describe(t);
      if (deviceOf(what.c_str(), ptr, span(t) * sizeOf(t.type)) < 0)
        return fail(CUDNN_STATUS_BAD_PARAM, "execute: " + describe(t) +
                                                " is not inside one device allocation");
      if ((uintptr_t)ptr % (uintptr_t)t.alignment)
        return fail(CUDNN_STATUS_BAD_PARAM, "execute: " + describe(t) + " is not aligned to " +
                                                std::to_string(t.alignment) + " bytes");
      s.device = (char *)ptr;
      s.deviceType = t.type;
    }
    storages.emplace(uid, s);
  }
  std::shared_ptr<const Graph> graph = p->graph;
  enqueue(handle->stream, [graph, storages] { run(*graph, storages); });
  return CUDNN_STATUS_SUCCESS;
}
