//===- CudnnAttention.cpp - Fused attention as cuDNN graphs ----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The graphs follow cudnn-frontend's CompositeSDPANode and
// CompositeSDPABackwardNode (no dropout, no bias, top-left causal mask as
// GEN_INDEX / CMP_GE / BINARY_SELECT): the runtime-fusion engines match that
// pattern. Scalars are by-value f32 tensors [1,1,1,1]; virtual tensors are f32
// with packed strides, except the probabilities (and dS) that feed a product,
// which are retyped to the I/O type as the engines require. The backward keeps
// two f32 tensors of its own in the workspace, after the engine's: the row sums
// of dO * O and the dQ accumulator.
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"

#include "CudnnLoader.h"
#include "zrt/Error.h"

#include <array>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

using namespace zrt;
using namespace zrt::cuda;

namespace {

/// The byte alignment every operand is declared with (cudnn-frontend's default).
constexpr int64_t kAlign = 16;

/// The non-virtual tensors' uids; virtual tensors count up from kFirstVirtual.
enum Uid : int64_t {
  kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, // the operands, in their order
  kScale, kNegInf, kOne, kRowSums, kDQAccum, kFirstVirtual = 100
};

using Dims = std::array<int64_t, 4>;

Dims packed(const Dims &d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

/// A tensor as the graph sees it.
struct T {
  cudnnBackendDescriptor_t desc = nullptr;
  Dims dims{}, strides{};
};

/// Backend descriptors made and finalized in order; the first failure is kept
/// (with cuDNN's own message) and every later call does nothing.
class Builder {
public:
  Builder(const CudnnApi &api, std::vector<cudnnBackendDescriptor_t> &owned)
      : api_(api), owned_(owned) {}
  const std::string &error() const { return error_; }
  bool ok() const { return error_.empty(); }

  void check(cudnnStatus_t s, const std::string &what) {
    if (s == CUDNN_STATUS_SUCCESS || !ok())
      return;
    char message[1024] = {};
    api_.getLastErrorString(message, sizeof message);
    error_ = what + ": " + api_.getErrorString(s) + (message[0] ? std::string(" (") + message + ")" : "");
  }
  cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type, const char *what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!ok())
      return nullptr;
    check(api_.createDescriptor(type, &d), std::string("creating ") + what);
    if (d)
      owned_.push_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void *elements) {
    if (ok())
      check(api_.setAttribute(d, name, type, count, elements),
            "setting attribute " + std::to_string((int)name));
  }
  void setDesc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
               cudnnBackendDescriptor_t value) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
  }
  void finalize(cudnnBackendDescriptor_t d, const std::string &what) {
    if (ok())
      check(api_.finalize(d), "finalizing " + what);
  }

  T tensor(int64_t uid, cudnnDataType_t type, const Dims &dims, const Dims &strides,
           bool isVirtual = false, bool byValue = false) {
    T t{create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "a tensor"), dims, strides};
    int64_t align = kAlign;
    bool v = isVirtual, b = byValue;
    set(t.desc, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(t.desc, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    set(t.desc, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    set(t.desc, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t.desc, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    set(t.desc, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
    if (byValue)
      set(t.desc, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &b);
    finalize(t.desc, "tensor " + std::to_string(uid));
    return t;
  }
  /// A virtual tensor, packed unless `strides` is given.
  T virt(cudnnDataType_t type, const Dims &dims, const Dims *strides = nullptr) {
    return tensor(nextUid_++, type, dims, strides ? *strides : packed(dims), true);
  }
  /// A by-value f32 scalar (its value is given at execution).
  T scalar(int64_t uid) {
    return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  }

  /// y = mode(x[, b[, t]]); y defaults to a virtual f32 tensor shaped like x,
  /// packed (cuDNN reads no virtual tensor's strides; the emulator does).
  T pointwise(cudnnPointwiseMode_t mode, const T &x, const T *b = nullptr,
              const T *t = nullptr, const T *y = nullptr, int64_t axis = -1,
              cudnnDataType_t precision = CUDNN_DATA_FLOAT) {
    T out = y ? *y : virt(CUDNN_DATA_FLOAT, x.dims);
    cudnnBackendDescriptor_t pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "a pointwise");
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    finalize(pw, "pointwise mode " + std::to_string((int)mode));
    cudnnBackendDescriptor_t op =
        create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "a pointwise operation");
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x.desc);
    if (b)
      setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b->desc);
    if (t)
      setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t->desc);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out.desc);
    float alpha = 1;
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha);
    finalize(op, "pointwise operation mode " + std::to_string((int)mode));
    ops_.push_back(op);
    return out;
  }
  void matmul(const T &a, const T &b, const T &c) {
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t mm = create(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "a matmul");
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    finalize(mm, "matmul");
    cudnnBackendDescriptor_t op =
        create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "a matmul operation");
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a.desc);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b.desc);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c.desc);
    setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    finalize(op, "matmul operation");
    ops_.push_back(op);
  }
  /// Reduces x into y (each of its dimensions x's, 1, or x's / g: sums over groups
  /// of g), by default over the last axis into a virtual f32 [.., .., .., 1].
  T reduction(cudnnReduceTensorOp_t mode, const T &x, const T *y = nullptr) {
    Dims d = {x.dims[0], x.dims[1], x.dims[2], 1};
    T out = y ? *y : virt(CUDNN_DATA_FLOAT, d);
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    bool deterministic = false;
    cudnnBackendDescriptor_t red = create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "a reduction");
    set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    // The attribute exists from cuDNN 9.11: cudnn-frontend sets it only there
    // (include/cudnn_frontend/node/reduction.h); an older library refuses it.
    if (api_.getVersion() >= 91100)
      set(red, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
    finalize(red, "reduction");
    cudnnBackendDescriptor_t op =
        create(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "a reduction operation");
    setDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x.desc);
    setDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, out.desc);
    setDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
    finalize(op, "reduction operation");
    ops_.push_back(op);
    return out;
  }
  /// y: a virtual view of x's elements (a transpose, by strides).
  void reshape(const T &x, const T &y) {
    cudnnBackendDescriptor_t op =
        create(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "a reshape operation");
    setDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x.desc);
    setDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y.desc);
    finalize(op, "reshape operation");
    ops_.push_back(op);
  }
  /// The top-left causal mask: scores with key index > query index become -inf.
  T causalMask(const T &x, const T &negInf) {
    T row = pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, nullptr,
                      ptr(virt(CUDNN_DATA_INT32, x.dims, &x.strides)), 2);
    T col = pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, nullptr,
                      ptr(virt(CUDNN_DATA_INT32, x.dims, &x.strides)), 3);
    T keep = pointwise(CUDNN_POINTWISE_CMP_GE, row, &col, nullptr,
                       ptr(virt(CUDNN_DATA_BOOLEAN, x.dims, &x.strides)), -1,
                       CUDNN_DATA_BOOLEAN);
    return pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, &negInf, &keep);
  }

  /// The operation graph of every operation made, finalized.
  cudnnBackendDescriptor_t graph(cudnnHandle_t handle) {
    cudnnBackendDescriptor_t g = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the graph");
    set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, (int64_t)ops_.size(),
        ops_.data());
    finalize(g, "the operation graph");
    return g;
  }

private:
  const T *ptr(const T &t) {
    held_.push_back(t);
    return &held_.back();
  }
  const CudnnApi &api_;
  std::vector<cudnnBackendDescriptor_t> &owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::deque<T> held_;
  std::string error_;
  int64_t nextUid_ = kFirstVirtual;
};

cudnnDataType_t ioType(Elem t) { return t == Elem::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF; }

/// A [batch, heads, rows, width] operand where its layout puts it; `transposed`
/// swaps the last two axes (K and V read as Kᵀ and Vᵀ).
Dims dimsOf(int64_t batch, int64_t heads, int64_t rows, int64_t width, bool transposed) {
  return transposed ? Dims{batch, heads, width, rows} : Dims{batch, heads, rows, width};
}
Dims stridesOf(const kernels::HeadLayout &l, bool transposed) {
  return transposed ? Dims{l.batch, l.head, 1, l.row} : Dims{l.batch, l.head, l.row, 1};
}

void buildForward(Builder &g, Elem t, const AttentionShape &a) {
  cudnnDataType_t io = ioType(t);
  int64_t B = a.batch, H = a.qHeads, Hk = a.kvHeads, S = a.qLen, S2 = a.kvLen;
  T q = g.tensor(kQ, io, dimsOf(B, H, S, a.size, false), stridesOf(a.query, false));
  // Grouped heads: the products broadcast K and V's Hk heads over Q's H.
  T kt = g.tensor(kK, io, dimsOf(B, Hk, S2, a.size, true), stridesOf(a.key, true));
  T v = g.tensor(kV, io, dimsOf(B, Hk, S2, a.vSize, false), stridesOf(a.value, false));
  T o = g.tensor(kO, io, dimsOf(B, H, S, a.vSize, false), stridesOf(a.out, false));
  T stats = g.tensor(kStats, CUDNN_DATA_FLOAT, {B, H, S, 1}, {H * S, S, 1, 1});
  T scale = g.scalar(kScale);
  T negInf = a.causal ? g.scalar(kNegInf) : T{};
  T s = g.virt(CUDNN_DATA_FLOAT, {B, H, S, S2});
  g.matmul(q, kt, s);
  T x = g.pointwise(CUDNN_POINTWISE_MUL, s, &scale);
  if (a.causal)
    x = g.causalMask(x, negInf);
  T max = g.reduction(CUDNN_REDUCE_TENSOR_MAX, x);
  T e = g.pointwise(CUDNN_POINTWISE_EXP, g.pointwise(CUDNN_POINTWISE_SUB, x, &max));
  T sum = g.reduction(CUDNN_REDUCE_TENSOR_ADD, e);
  T logSum = g.pointwise(CUDNN_POINTWISE_LOG, sum);
  g.pointwise(CUDNN_POINTWISE_ADD, max, &logSum, nullptr, &stats);
  T p = g.virt(io, {B, H, S, S2}); // rounded to the I/O type for P·V
  g.pointwise(CUDNN_POINTWISE_DIV, e, &sum, nullptr, &p);
  g.matmul(p, v, o);
}

void buildBackward(Builder &g, Elem t, const AttentionShape &a) {
  cudnnDataType_t io = ioType(t), f32 = CUDNN_DATA_FLOAT;
  int64_t B = a.batch, H = a.qHeads, Hk = a.kvHeads, S = a.qLen, S2 = a.kvLen, D = a.size,
          Dv = a.vSize;
  T q = g.tensor(kQ, io, dimsOf(B, H, S, D, false), stridesOf(a.query, false));
  T kt = g.tensor(kK, io, dimsOf(B, Hk, S2, D, true), stridesOf(a.key, true));
  T vt = g.tensor(kV, io, dimsOf(B, Hk, S2, Dv, true), stridesOf(a.value, true));
  T o = g.tensor(kO, io, dimsOf(B, H, S, Dv, false), stridesOf(a.out, false));
  T stats = g.tensor(kStats, f32, {B, H, S, 1}, {H * S, S, 1, 1});
  T dO = g.tensor(kDO, io, dimsOf(B, H, S, Dv, false), stridesOf(a.dout, false));
  T dQ = g.tensor(kDQ, io, dimsOf(B, H, S, D, false), stridesOf(a.dquery, false));
  T dK = g.tensor(kDK, io, dimsOf(B, Hk, S2, D, false), stridesOf(a.dkey, false));
  T dV = g.tensor(kDV, io, dimsOf(B, Hk, S2, Dv, false), stridesOf(a.dvalue, false));
  T scale = g.scalar(kScale);
  T negInf = a.causal ? g.scalar(kNegInf) : T{};
  T one = g.scalar(kOne);
  T rowSums = g.tensor(kRowSums, f32, {B, H, S, 1}, {H * S, S, 1, 1});
  T dQAccum = g.tensor(kDQAccum, f32, {B, H, S, D}, packed({B, H, S, D}));
  // The row sums of dO * O (softmax's backward term), kept in the workspace.
  T sums = g.reduction(CUDNN_REDUCE_TENSOR_ADD, g.pointwise(CUDNN_POINTWISE_MUL, dO, &o));
  g.pointwise(CUDNN_POINTWISE_MUL, sums, &one, nullptr, &rowSums);
  // P recomputed from the scores and the forward's log-sum-exp.
  T s = g.virt(f32, {B, H, S, S2});
  g.matmul(q, kt, s);
  T x = g.pointwise(CUDNN_POINTWISE_SUB, g.pointwise(CUDNN_POINTWISE_MUL, s, &scale), &stats);
  if (a.causal)
    x = g.causalMask(x, negInf);
  T p = g.pointwise(CUDNN_POINTWISE_EXP, x);
  Dims transposed = {H * S * S2, S * S2, 1, S2};
  T pT = g.virt(io, {B, H, S2, S}, &transposed);
  g.reshape(p, pT);
  // Grouped heads: each query head's part, then the sum over its key/value head's
  // group (consecutive query heads), as cudnn-frontend's dV_fullhead.
  auto perKeyHead = [&](const T &full, const T &grouped) {
    if (Hk != H)
      g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, &grouped);
  };
  T dVFull = Hk == H ? dV : g.virt(io, {B, H, S2, Dv});
  g.matmul(pT, dO, dVFull);
  perKeyHead(dVFull, dV);
  // dS = P * (dO·Vᵀ - rowSums) * scale.
  T dP = g.virt(f32, {B, H, S, S2});
  g.matmul(dO, vt, dP);
  T dS = g.pointwise(
      CUDNN_POINTWISE_MUL,
      g.pointwise(CUDNN_POINTWISE_MUL, g.pointwise(CUDNN_POINTWISE_SUB, dP, &rowSums), &p),
      &scale);
  T dST = g.virt(io, {B, H, S2, S}, &transposed);
  g.reshape(dS, dST);
  T dKFull = Hk == H ? dK : g.virt(io, {B, H, S2, D});
  g.matmul(dST, q, dKFull);
  perKeyHead(dKFull, dK);
  // K read as [b, h, s_kv, d] for dQ = dS·K: a float virtual tensor, as
  // cudnn-frontend's reshape_k (its virtual tensors take the intermediate type).
  Dims kDims = dimsOf(B, Hk, S2, D, false), kStrides = stridesOf(a.key, false);
  T k = g.virt(f32, kDims, &kStrides);
  g.reshape(kt, k);
  g.matmul(dS, k, dQAccum);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dQAccum, nullptr, nullptr, &dQ);
}

size_t alignUp(size_t n) { return (n + 255) / 256 * 256; }

/// Each operand's layout, in the operands' order (the log-sum-exp is dense: none).
std::array<const kernels::HeadLayout *, CudnnAttention::kBackwardOperands>
operandLayouts(const AttentionShape &a) {
  return {&a.query, &a.key, &a.value, &a.out, nullptr, &a.dout, &a.dquery, &a.dkey, &a.dvalue};
}

} // namespace

/// A finalized execution plan and the descriptors it was made from; shared by
/// every attention of the same shapes and strides on one handle (planning may
/// compile a kernel).
struct CudnnAttention::Plan {
  const CudnnApi *api = nullptr;
  std::vector<cudnnBackendDescriptor_t> owned;
  cudnnBackendDescriptor_t plan = nullptr;
  size_t engineWorkspace = 0;
  ~Plan() {
    for (auto it = owned.rbegin(); it != owned.rend(); ++it)
      api->destroyDescriptor(*it);
  }
};

namespace {

std::string planKey(cudnnHandle_t handle, Elem t, const AttentionShape &a, bool grad) {
  std::ostringstream os;
  os << (const void *)handle << ' ' << (int)t << ' ' << grad << ' ' << a.causal << ' '
     << a.batch << ' ' << a.qHeads << ' ' << a.kvHeads << ' ' << a.qLen << ' ' << a.kvLen
     << ' ' << a.size << ' ' << a.vSize;
  for (const kernels::HeadLayout *l :
       {&a.query, &a.key, &a.value, &a.out, &a.dout, &a.dquery, &a.dkey, &a.dvalue})
    os << ' ' << l->batch << ' ' << l->head << ' ' << l->row;
  return os.str();
}

/// The heuristic's engines in order; the first whose plan finalizes.
void choosePlan(Builder &g, const CudnnApi &api, cudnnHandle_t handle,
                cudnnBackendDescriptor_t graph, CudnnAttention::Plan &plan) {
  cudnnBackendDescriptor_t heur = g.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "the heuristic");
  g.setDesc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  g.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  g.finalize(heur, "the heuristic");
  int64_t count = 0;
  if (g.ok())
    g.check(api.getAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                             0, &count, nullptr),
            "counting the heuristic's engines");
  if (!g.ok())
    return;
  std::vector<cudnnBackendDescriptor_t> configs;
  for (int64_t i = 0; i < std::min<int64_t>(count, 8); ++i)
    configs.push_back(g.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "an engine configuration"));
  int64_t got = 0;
  if (g.ok() && !configs.empty())
    g.check(api.getAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                             (int64_t)configs.size(), &got, configs.data()),
            "reading the heuristic's engines");
  std::string refusals;
  for (int64_t i = 0; g.ok() && i < std::min<int64_t>(got, (int64_t)configs.size()); ++i) {
    Builder attempt(api, plan.owned);
    cudnnBackendDescriptor_t p =
        attempt.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "an execution plan");
    attempt.set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    attempt.setDesc(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]);
    attempt.finalize(p, "engine " + std::to_string(i) + "'s plan");
    int64_t bytes = 0, n = 0;
    if (attempt.ok())
      attempt.check(api.getAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &bytes),
                    "reading the plan's workspace size");
    if (attempt.ok()) {
      plan.plan = p;
      plan.engineWorkspace = (size_t)std::max<int64_t>(bytes, 0);
      return;
    }
    refusals += (refusals.empty() ? "" : "; ") + attempt.error();
  }
  if (g.ok())
    g.check(CUDNN_STATUS_NOT_SUPPORTED,
            "none of the heuristic's " + std::to_string(count) + " engines took the graph" +
                (refusals.empty() ? std::string() : ": " + refusals));
}

/// The plan for this attention (made once per key); null with the reason.
std::shared_ptr<CudnnAttention::Plan> planFor(const CudnnApi &api, cudnnHandle_t handle, Elem t,
                                              const AttentionShape &a, bool grad,
                                              std::string &why) {
  // Kept for the life of the process and never destroyed: at exit the CUDA
  // context may be gone before static destructors would run.
  static std::mutex mutex;
  static auto &plans = *new std::map<std::string, std::shared_ptr<CudnnAttention::Plan>>;
  static auto &refused = *new std::map<std::string, std::string>;
  std::lock_guard<std::mutex> lock(mutex);
  std::string key = planKey(handle, t, a, grad);
  if (auto it = plans.find(key); it != plans.end())
    return it->second;
  if (auto it = refused.find(key); it != refused.end()) {
    why = it->second;
    return nullptr;
  }
  auto plan = std::make_shared<CudnnAttention::Plan>();
  plan->api = &api;
  Builder g(api, plan->owned);
  grad ? buildBackward(g, t, a) : buildForward(g, t, a);
  cudnnBackendDescriptor_t graph = g.graph(handle);
  if (g.ok())
    choosePlan(g, api, handle, graph, *plan);
  if (!g.ok()) {
    why = "cuDNN " + std::to_string(api.getVersion()) + " (" + api.library + "): " + g.error();
    refused.emplace(key, why);
    return nullptr;
  }
  plans.emplace(key, plan);
  return plan;
}

} // namespace

std::string CudnnAttention::unsupported(Elem t, const AttentionShape &a,
                                        const std::vector<const void *> &operands) {
  std::ostringstream os;
  if (t != Elem::BF16 && t != Elem::F16)
    return "cuDNN's fused attention is for bf16 and fp16";
  if (a.mask != 0)
    return "a boolean or additive mask (the cuDNN graph takes no mask or a causal one)";
  if (a.kvHeads < 1 || a.qHeads % a.kvHeads)
    return "query heads that are not a multiple of the key/value heads";
  if (a.size % 8 || a.vSize % 8 || a.size > 128 || a.vSize > 128) {
    os << "heads of " << a.size << "/" << a.vSize
       << " (the cuDNN graph takes multiples of 8 up to 128)";
    return os.str();
  }
  if (a.qLen == 1 && a.kvLen == 1)
    return "one query and one key (cuDNN refuses s_q = s_kv = 1)";
  std::array<const kernels::HeadLayout *, CudnnAttention::kBackwardOperands> layouts =
      operandLayouts(a);
  for (size_t i = 0; i < operands.size(); ++i) {
    const kernels::HeadLayout *l = layouts[i];
    auto at = (uintptr_t)operands[i] + (l ? (uintptr_t)l->offset * 2 : 0);
    bool strided = !l || (l->batch % 8 == 0 && l->head % 8 == 0 && l->row % 8 == 0);
    if (at % kAlign || !strided) {
      os << "operand " << i << " is not 16-byte aligned in address and strides";
      return os.str();
    }
  }
  return "";
}

std::unique_ptr<CudnnAttention> CudnnAttention::make(cudnnHandle_t handle, Elem t,
                                                     const AttentionShape &a, bool grad,
                                                     const std::vector<const void *> &operands,
                                                     std::string &why) {
  ZRT_CHECK(operands.size() == (size_t)(grad ? kBackwardOperands : kForwardOperands),
            "cuDNN attention: " << operands.size() << " operands");
  why = unsupported(t, a, operands);
  if (!why.empty())
    return nullptr;
  const CudnnApi *api = cudnn(why);
  if (!api)
    return nullptr;
  std::shared_ptr<Plan> plan = planFor(*api, handle, t, a, grad, why);
  if (!plan)
    return nullptr;
  std::unique_ptr<CudnnAttention> r(new CudnnAttention);
  r->plan_ = plan;
  r->scale_ = (float)a.scale;
  r->negInf_ = -std::numeric_limits<float>::infinity();
  std::array<const kernels::HeadLayout *, CudnnAttention::kBackwardOperands> layouts =
      operandLayouts(a);
  for (size_t i = 0; i < operands.size(); ++i) {
    r->uids_.push_back(kQ + (int64_t)i);
    r->pointers_.push_back((char *)operands[i] + (layouts[i] ? layouts[i]->offset * 2 : 0));
  }
  r->uids_.push_back(kScale);
  r->pointers_.push_back(&r->scale_);
  if (a.causal) {
    r->uids_.push_back(kNegInf);
    r->pointers_.push_back(&r->negInf_);
  }
  r->workspace_ = alignUp(plan->engineWorkspace);
  if (grad) {
    r->uids_.push_back(kOne);
    r->pointers_.push_back(&r->one_);
    size_t rows = (size_t)(a.batch * a.qHeads * a.qLen);
    for (auto [uid, bytes] : {std::pair<int64_t, size_t>{kRowSums, rows * 4},
                              std::pair<int64_t, size_t>{kDQAccum, rows * a.size * 4}}) {
      r->workspaceTensors_.push_back({r->uids_.size(), r->workspace_});
      r->uids_.push_back(uid);
      r->pointers_.push_back(nullptr); // set when the workspace is known
      r->workspace_ += alignUp(bytes);
    }
  }
  r->workspace_ = std::max<size_t>(r->workspace_, 256);
  return r;
}

CudnnAttention::~CudnnAttention() {
  if (pack_)
    plan_->api->destroyDescriptor(pack_);
}

void CudnnAttention::run(cudnnHandle_t handle, void *workspace) {
  const CudnnApi &api = *plan_->api;
  if (!pack_ || packWorkspace_ != workspace) {
    if (pack_)
      api.destroyDescriptor(pack_);
    pack_ = nullptr;
    for (auto [index, offset] : workspaceTensors_)
      pointers_[index] = (char *)workspace + offset;
    std::vector<cudnnBackendDescriptor_t> owned;
    Builder g(api, owned);
    cudnnBackendDescriptor_t pack = g.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "a variant pack");
    g.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, (int64_t)uids_.size(),
          uids_.data());
    g.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
          (int64_t)pointers_.size(), pointers_.data());
    g.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    g.finalize(pack, "the variant pack");
    if (!g.ok()) {
      for (cudnnBackendDescriptor_t d : owned)
        api.destroyDescriptor(d);
      ZRT_FAIL("cuDNN attention: " << g.error());
    }
    pack_ = pack;
    packWorkspace_ = workspace;
  }
  std::vector<cudnnBackendDescriptor_t> none;
  Builder g(api, none);
  g.check(api.execute(handle, plan_->plan, pack_), "executing the attention plan");
  ZRT_CHECK(g.ok(), "cuDNN attention: " << g.error());
}
