//===- CudaBinders.cpp - The CUDA kernel table ----------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each binder first binds the CPU kernel of the same kind: that checks every
// shape, dtype and attribute once, in one place for both backends (the host
// closure it returns is dropped). Then it returns a closure that launches on the
// compute stream.
//
//===----------------------------------------------------------------------===//

#include "CublasLoader.h"
#include "CudaBinders.h"
#include "CudaContext.h"
#include "CudaLaunch.h"
#include "CudnnAttention.h"
#include "CudnnLoader.h"
#include "GeneratedKernels.h"
#include "QuantizeKernels.h"

#include "../cpu/KernelUtil.h"
#include "../kernels/MatMulGeometry.h"
#include "zrt/BlockQuantization.h"
#include "zrt/Communicator.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>

using namespace zrt;
using namespace zrt::cpu;
using namespace zrt::cuda;
using namespace zrt::cuda::binders;

namespace zrt::cuda::binders {

void validate(const KernelCall &call) { (void)cpuKernels().at(call.kind)(call); }

Elem elemOf(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return Elem::F32;
  case zero::zplan::F64:
    return Elem::F64;
  case zero::zplan::I32:
    return Elem::I32;
  case zero::zplan::I64:
    return Elem::I64;
  case zero::zplan::I8:
    return Elem::I8;
  case zero::zplan::BF16:
    return Elem::BF16;
  case zero::zplan::F16:
    return Elem::F16;
  case zero::zplan::U8:
  case zero::zplan::BOOL:
    return Elem::U8;
  default:
    ZRT_FAIL("the CUDA backend has no " << dtypeName(t) << " kernels");
  }
}

Strided stridedOf(const KernelCall &call, const Shape &shape, const Shape &strides) {
  ZRT_CHECK(shape.size() <= (size_t)kMaxRank,
            call.where() << ": rank " << shape.size() << " exceeds the CUDA backend's "
                         << kMaxRank);
  // Extents of 1 dropped and neighbours that step as one merged (a contiguous
  // block, a broadcast run): fewer divisions per element, the same offsets.
  int64_t dims[kMaxRank][2], elements = 1, maxOffset = 0;
  int rank = 0;
  bool nonNegative = true;
  for (int d = (int)shape.size() - 1; d >= 0; --d) {
    elements *= shape[d];
    maxOffset += (shape[d] - 1) * strides[d];
    nonNegative = nonNegative && strides[d] >= 0;
    if (shape[d] == 1)
      continue;
    if (rank && strides[d] == dims[rank - 1][1] * dims[rank - 1][0]) {
      dims[rank - 1][0] *= shape[d];
      continue;
    }
    dims[rank][0] = shape[d];
    dims[rank][1] = strides[d];
    ++rank;
  }
  Strided s;
  s.rank = rank;
  for (int i = 0; i < rank; ++i) { // outermost first
    s.shape[i] = dims[rank - 1 - i][0];
    s.stride[i] = dims[rank - 1 - i][1];
  }
  s.contiguous = isRowMajor(s);
  const int64_t k31 = int64_t(1) << 31;
  s.index32 = nonNegative && elements < k31 && maxOffset < k31;
  return s;
}

} // namespace zrt::cuda::binders

namespace {

BoundKernel bindSoftmax(const KernelCall &call, bool log) {
  validate(call);
  SoftmaxPrologue pro = softmaxPrologue(call, !log);
  TensorView x = call.ins[0], out = call.outs[0];
  const void *bias = pro.hasBias ? call.ins[1].data : nullptr;
  std::shared_ptr<int64_t> rowOff = pro.hasBias ? deviceArray(pro.rowOffsets) : nullptr;
  int64_t outer, dim, inner;
  splitAxis(x.shape, call.intAttr("axis"), outer, dim, inner);
  Elem t = elemOf(x.dtype);
  return [=] {
    softmax(context().compute, t, x.data, out.data, outer, dim, inner, log, pro.scale, bias,
            rowOff.get(), pro.step);
  };
}

BoundKernel bindSoftmaxGrad(const KernelCall &call) {
  validate(call);
  TensorView y = call.ins[0], g = call.ins[1], out = call.outs[0];
  int64_t outer, dim, inner;
  splitAxis(y.shape, call.intAttr("axis"), outer, dim, inner);
  Elem t = elemOf(y.dtype);
  double scale = softmaxScale(call);
  return [=] {
    softmaxGrad(context().compute, t, y.data, g.data, scale, out.data, outer, dim, inner);
  };
}

/// Fused attention's geometry, as the CPU kernel reads and checks it.
AttentionShape attentionShapeOf(const KernelCall &call, bool grad) {
  AttentionGeometry g = attentionGeometry(call, grad);
  ZRT_CHECK(g.size <= kMaxAttentionHead && g.vSize <= kMaxAttentionHead,
            call.where() << ": the CUDA backend's attention takes head sizes up to "
                         << kMaxAttentionHead << ", not " << std::max(g.size, g.vSize));
  AttentionShape a;
  a.batch = g.batch;
  a.qHeads = g.qHeads;
  a.kvHeads = g.kvHeads;
  a.qLen = g.qLen;
  a.kvLen = g.kvLen;
  a.size = g.size;
  a.vSize = g.vSize;
  a.scale = g.scale;
  a.causal = g.causal;
  a.mask = (int)g.mask; // None 0, Bool 1, Add 2: AttentionShape's coding
  std::copy(g.maskStrides.begin(), g.maskStrides.end(), a.maskStride);
  a.query = g.query;
  a.key = g.key;
  a.value = g.value;
  a.out = g.out;
  a.dout = g.dout;
  a.dquery = g.dquery;
  a.dkey = g.dkey;
  a.dvalue = g.dvalue;
  return a;
}

/// The cuDNN plan for a 16-bit attention, or null when the project's kernels run
/// it: f32 and f64 always; 16-bit with --attention=own, or (after one line per
/// reason) where cuDNN is missing or its graph cannot take the attention.
std::shared_ptr<CudnnAttention> cudnnAttentionFor(const KernelCall &call, Elem t,
                                                  const AttentionShape &a, bool grad,
                                                  const std::vector<const void *> &operands) {
  Context &ctx = context();
  if ((t != Elem::BF16 && t != Elem::F16) || !ctx.cudnnAttention)
    return nullptr;
  std::string why = CudnnAttention::unsupported(t, a, operands);
  std::unique_ptr<CudnnAttention> plan;
  if (why.empty() && !ctx.dnn) {
    if (const CudnnApi *api = cudnn(why)) {
      cudnnStatus_t rc = api->create(&ctx.dnn);
      if (rc == CUDNN_STATUS_SUCCESS)
        rc = api->setStream(ctx.dnn, ctx.compute);
      if (rc != CUDNN_STATUS_SUCCESS)
        why = std::string("cudnnCreate: ") + api->getErrorString(rc);
    }
  }
  if (why.empty())
    plan = CudnnAttention::make(ctx.dnn, t, a, grad, operands, why);
  if (!plan) {
    ++ctx.fallbacks[grad ? "16-bit attention backwards on zero-opt's kernels, not cuDNN"
                         : "16-bit attention forwards on zero-opt's kernels, not cuDNN"];
    static std::mutex mutex;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> lock(mutex);
    if (said.insert(why).second)
      std::cerr << "zero-run: " << call.where() << " runs on zero-opt's attention kernels, "
                << "not cuDNN: " << why << "\n";
    return nullptr;
  }
  if (plan->workspaceBytes() > ctx.attentionWorkspaceBytes) {
    // A larger one for this plan; the old one stays allocated until the device
    // goes, as queued work or a captured graph may still use it.
    if (ctx.attentionWorkspace)
      ctx.retiredWorkspaces.push_back(ctx.attentionWorkspace);
    ctx.attentionWorkspace = nullptr;
    ZERO_CUDA_CHECK(cudaMalloc(&ctx.attentionWorkspace, plan->workspaceBytes()));
    ctx.attentionWorkspaceBytes = plan->workspaceBytes();
  }
  return std::shared_ptr<CudnnAttention>(std::move(plan));
}

BoundKernel bindAttention(const KernelCall &call) {
  validate(call);
  AttentionShape a = attentionShapeOf(call, /*grad=*/false);
  TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.outs[0],
             lse = call.outs[1];
  const void *m = call.ins.size() == 4 ? call.ins[3].data : nullptr;
  Elem t = elemOf(q.dtype);
  if (auto dnn = cudnnAttentionFor(call, t, a, /*grad=*/false,
                                   {q.data, k.data, v.data, out.data, lse.data}))
    return [=] { dnn->run(context().dnn, context().attentionWorkspace); };
  return [=] {
    attention(context().compute, t, a, q.data, k.data, v.data, m, out.data, lse.data);
  };
}

BoundKernel bindAttentionGrad(const KernelCall &call) {
  validate(call);
  AttentionShape a = attentionShapeOf(call, /*grad=*/true);
  TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.ins[3],
             lse = call.ins[4], dout = call.ins[5];
  TensorView dq = call.outs[0], dk = call.outs[1], dv = call.outs[2];
  const void *m = call.ins.size() == 7 ? call.ins[6].data : nullptr;
  Elem t = elemOf(q.dtype);
  if (auto dnn = cudnnAttentionFor(call, t, a, /*grad=*/true,
                                   {q.data, k.data, v.data, out.data, lse.data, dout.data,
                                    dq.data, dk.data, dv.data}))
    return [=] { dnn->run(context().dnn, context().attentionWorkspace); };
  return [=] {
    attentionGrad(context().compute, t, a, q.data, k.data, v.data, out.data, lse.data,
                  dout.data, m, dq.data, dk.data, dv.data);
  };
}

/// Offsets of a broadcast operand over the normalized shape, on the device.
std::shared_ptr<int64_t> deviceNormOffsets(const Shape &of, const Shape &norm) {
  std::vector<int64_t> off;
  forEachBroadcast<1>(norm, std::array<Shape, 1>{broadcastStrides(of, norm)},
                      [&](int64_t, auto o) { off.push_back(o[0]); });
  return deviceArray(off);
}

BoundKernel bindLayerNorm(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], scale = call.ins[1], bias = call.ins[2];
  TensorView y = call.outs[0], mean = call.outs[1], rstd = call.outs[2];
  int64_t axis = call.intAttr("axis");
  double eps = call.floatAttr("epsilon");
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = extentProduct(x.shape, 0, axis), inner = extentProduct(norm, 0, norm.size());
  auto sOff = deviceNormOffsets(scale.shape, norm), bOff = deviceNormOffsets(bias.shape, norm);
  Elem t = elemOf(x.dtype);
  bool wide = mean.dtype != x.dtype; // f32 statistics of a 16-bit input (checked)
  return [=] {
    layerNorm(context().compute, t, wide, x.data, scale.data, bias.data, sOff.get(), bOff.get(),
              y.data, mean.data, rstd.data, outer, inner, eps);
  };
}

BoundKernel bindLayerNormGrad(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], scale = call.ins[1], mean = call.ins[2], rstd = call.ins[3],
             gy = call.ins[4];
  TensorView dx = call.outs[0], ds = call.outs[1], db = call.outs[2];
  const void *acc = call.ins.size() == 6 ? call.ins[5].data : nullptr;
  int64_t axis = call.intAttr("axis");
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = extentProduct(x.shape, 0, axis), inner = extentProduct(norm, 0, norm.size());
  auto sOff = deviceNormOffsets(scale.shape, norm);
  Elem t = elemOf(x.dtype);
  bool wide = mean.dtype != x.dtype; // f32 statistics of a 16-bit input (checked)
  return [=] {
    Context &ctx = context();
    layerNormGrad(ctx.compute, t, wide, x.data, scale.data, sOff.get(), mean.data, rstd.data,
                  gy.data, acc, dx.data, ds.data, db.data, outer, inner, ctx.scratch);
  };
}

BoundKernel bindCrossEntropy(const KernelCall &call) {
  validate(call);
  TensorView scores = call.ins[0], labels = call.ins[1], loss = call.outs[0],
             logp = call.outs[1];
  const TensorView *weightsView = call.ins.size() == 3 ? &call.ins[2] : nullptr;
  const void *weights = weightsView ? weightsView->data : nullptr;
  CrossEntropyGeometry g = crossEntropyGeometry(call, scores, "scores", labels, weightsView);
  Elem t = elemOf(scores.dtype);
  bool wide = logp.dtype != scores.dtype; // f32 beside 16-bit scores (checked)
  return [=] {
    crossEntropy(context().compute, t, wide, scores.data, labels.data, g.labels64, weights,
                 (int)g.reduction, g.hasIgnore, g.ignore, loss.data, logp.data, g.n, g.c,
                 g.inner, context().errorFlag);
  };
}

BoundKernel bindCrossEntropyGrad(const KernelCall &call) {
  validate(call);
  TensorView logp = call.ins[0], labels = call.ins[1], g = call.ins[2], out = call.outs[0];
  const TensorView *weightsView = call.ins.size() == 4 ? &call.ins[3] : nullptr;
  const void *weights = weightsView ? weightsView->data : nullptr;
  CrossEntropyGeometry geo = crossEntropyGeometry(call, logp, "log_prob", labels, weightsView);
  Elem t = elemOf(out.dtype);
  bool wide = logp.dtype != out.dtype; // f32 beside a 16-bit result (checked)
  // The mean's denominator: allocated here, as cudaMalloc fails (and invalidates
  // the capture) while the step is captured as a CUDA graph.
  std::shared_ptr<double> denom = deviceArray(std::vector<double>{0.0});
  return [=] {
    crossEntropyGrad(context().compute, t, wide, logp.data, labels.data, geo.labels64, g.data,
                     weights, (int)geo.reduction, geo.hasIgnore, geo.ignore, out.data,
                     geo.n, geo.c, geo.inner, denom.get(), context().errorFlag);
  };
}

BoundKernel bindCrossEntropyWithGrad(const KernelCall &call) {
  validate(call);
  TensorView scores = call.ins[0], labels = call.ins[1], g = call.ins[2], loss = call.outs[0],
             ds = call.outs[1];
  const TensorView *weightsView = call.ins.size() == 4 ? &call.ins[3] : nullptr;
  const void *weights = weightsView ? weightsView->data : nullptr;
  CrossEntropyGeometry geo = crossEntropyGeometry(call, scores, "scores", labels, weightsView);
  Elem t = elemOf(scores.dtype);
  bool wide = loss.dtype != scores.dtype; // f32 beside 16-bit scores (checked)
  // The mean's denominator and each position's loss, in the stream's order.
  double *scratch = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&scratch, (1 + geo.n * geo.inner) * sizeof(double)));
  std::shared_ptr<double> owned(scratch, [](double *p) { cudaFree(p); });
  return [=] {
    crossEntropyWithGrad(context().compute, t, wide, scores.data, ds.data, labels.data,
                         geo.labels64, g.data, weights, (int)geo.reduction, geo.hasIgnore,
                         geo.ignore, loss.data, owned.get(), geo.n, geo.c, geo.inner,
                         context().errorFlag);
  };
}

BoundKernel bindReduce(const KernelCall &call, bool mean) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  std::vector<int64_t> axes = call.intsAttr("axes");
  Shape strides = stridesOf(x.shape), keepShape, keepStrides, redShape, redStrides;
  int64_t count = 1;
  for (int64_t d = 0; d < (int64_t)x.shape.size(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    (reduced ? redShape : keepShape).push_back(x.shape[d]);
    (reduced ? redStrides : keepStrides).push_back(strides[d]);
    if (reduced)
      count *= x.shape[d];
  }
  Elem t = elemOf(x.dtype);
  int64_t n = out.numel();
  // The leading axes reduced (bias gradients): column sums that read rows whole.
  bool leading = !axes.empty();
  for (int64_t d = 0; d < (int64_t)axes.size(); ++d)
    leading &= std::find(axes.begin(), axes.end(), d) != axes.end();
  if (leading && n > 1)
    return [=] {
      Context &ctx = context();
      columnSums(ctx.compute, t, mean, x.data, count, n, out.data, ctx.scratch);
    };
  Strided keep = stridedOf(call, keepShape, keepStrides);
  Strided red = stridedOf(call, redShape, redStrides);
  return [=] { reduce(context().compute, t, mean, x.data, keep, red, count, out.data, n); };
}

BoundKernel bindCopy(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  if (x.data == out.data)
    return [] {};
  return [=] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(out.data, x.data, x.bytes(), cudaMemcpyDeviceToDevice,
                                    context().compute));
  };
}

BoundKernel bindTranspose(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  std::vector<int64_t> perm = call.intsAttr("perm");
  Shape st = stridesOf(x.shape), permStrides;
  for (int64_t p : perm)
    permStrides.push_back(st[p]);
  Strided v = stridedOf(call, out.shape, permStrides);
  int size = (int)dtypeSize(x.dtype);
  int64_t n = out.numel();
  return [=] { stridedCopy(context().compute, size, x.data, v, 0, out.data, n); };
}

BoundKernel bindSlice(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  SliceWindow w = sliceWindow(call, x.shape, out.shape, "result", "input", "reads");
  Strided v = stridedOf(call, out.shape, w.strides);
  int64_t base = w.base;
  int size = (int)dtypeSize(x.dtype);
  int64_t n = out.numel();
  return [=] { stridedCopy(context().compute, size, x.data, v, base, out.data, n); };
}

BoundKernel bindSliceGrad(const KernelCall &call) {
  validate(call);
  TensorView g = call.ins[0], out = call.outs[0];
  SliceWindow w = sliceWindow(call, out.shape, g.shape, "grad", "result", "writes");
  Strided v = stridedOf(call, g.shape, w.strides);
  int64_t base = w.base;
  int size = (int)dtypeSize(g.dtype);
  int64_t n = g.numel();
  return [=] {
    ZERO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.bytes(), context().compute));
    stridedScatter(context().compute, size, g.data, v, base, out.data, n);
  };
}

BoundKernel bindExpand(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  Strided v = stridedOf(call, out.shape, broadcastStrides(x.shape, out.shape));
  int size = (int)dtypeSize(x.dtype);
  int64_t n = out.numel();
  return [=] { stridedCopy(context().compute, size, x.data, v, 0, out.data, n); };
}

BoundKernel bindConcat(const KernelCall &call) {
  validate(call);
  TensorView out = call.outs[0];
  int64_t axis = call.intAttr("axis"), offset = 0;
  Shape st = stridesOf(out.shape);
  struct Part {
    TensorView in;
    Strided view;
    int64_t base;
  };
  std::vector<Part> parts;
  for (const TensorView &in : call.ins) {
    parts.push_back({in, stridedOf(call, in.shape, st), offset * st[axis]});
    offset += in.shape[axis];
  }
  int size = (int)dtypeSize(out.dtype);
  return [=] {
    for (const Part &p : parts)
      stridedScatter(context().compute, size, p.in.data, p.view, p.base, out.data,
                     p.in.numel());
  };
}

BoundKernel bindGather(const KernelCall &call) {
  validate(call);
  TensorView data = call.ins[0], idx = call.ins[1], out = call.outs[0];
  int64_t outer, dim, inner;
  splitAxis(data.shape, call.intAttr("axis"), outer, dim, inner);
  int size = (int)dtypeSize(data.dtype);
  bool idx64 = idx.dtype == zero::zplan::I64;
  int64_t n = idx.numel();
  return [=] {
    gather(context().compute, size, data.data, idx.data, idx64, out.data, outer, n, dim,
           inner, context().errorFlag);
  };
}

BoundKernel bindGatherGrad(const KernelCall &call) {
  validate(call);
  TensorView idx = call.ins[0], g = call.ins[1], out = call.outs[0];
  int64_t outer, dim, inner;
  splitAxis(out.shape, call.intAttr("axis"), outer, dim, inner);
  bool idx64 = idx.dtype == zero::zplan::I64;
  Elem t = elemOf(out.dtype);
  int64_t n = idx.numel();
  // The positions sorted by row (ints): bound here, never allocated while captured.
  ZRT_CHECK(n < INT32_MAX && dim < INT32_MAX,
            "gather_grad at " << call.loc << ": " << n << " indices into " << dim
                      << " rows: the GPU's gather gradient sorts them as 32-bit ints");
  std::shared_ptr<int> scratch =
      deviceArray(std::vector<int>(gatherGradScratchInts(n, dim), 0));
  return [=] {
    gatherGrad(context().compute, t, idx.data, idx64, g.data, out.data, outer, n, dim,
               inner, scratch.get(), context().errorFlag);
  };
}

BoundKernel bindTrilu(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  int64_t mats = (rows * cols) != 0 ? x.numel() / (rows * cols) : 0;
  bool upper = call.intAttr("upper") != 0;
  int64_t k = call.intAttr("k");
  int size = (int)dtypeSize(x.dtype);
  return [=] {
    trilu(context().compute, size, x.data, out.data, mats, rows, cols, upper, k);
  };
}

} // namespace

void zrt::cuda::checkCuda(cudaError_t rc, const char *what) {
  ZRT_CHECK(rc == cudaSuccess, "CUDA: " << what << " failed: " << cudaGetErrorString(rc));
}

const KernelTable &zrt::cuda::cudaKernels() {
  static const KernelTable table = [] {
    KernelTable t;
    auto add = [&](KernelKind kind, BoundKernel (*f)(const KernelCall &)) { t[kind] = f; };
    add(Kernel::ADD, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Add); });
    add(Kernel::SUB, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Sub); });
    add(Kernel::MUL, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Mul); });
    add(Kernel::DIV, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Div); });
    add(Kernel::EQUAL, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Equal); });
    add(Kernel::POW, bindPow);
#define ZERO_UNARY_OP(ID, NAME, KIND, ...)                                                \
    add(Kernel::KIND, [](const KernelCall &c) { return bindUnary(c, UnaryOp::ID); });
#include "zplan/UnaryOps.def"
    add(Kernel::WHERE, bindWhere);
    add(Kernel::CAST, bindCast);
    add(Kernel::FUSED, bindFused);
    add(Kernel::MATMUL, bindMatMul);
    add(Kernel::SOFTMAX, [](const KernelCall &c) { return bindSoftmax(c, false); });
    add(Kernel::LOG_SOFTMAX, [](const KernelCall &c) { return bindSoftmax(c, true); });
    add(Kernel::SOFTMAX_GRAD, bindSoftmaxGrad);
    add(Kernel::ATTENTION, bindAttention);
    add(Kernel::ATTENTION_GRAD, bindAttentionGrad);
    add(Kernel::LAYER_NORM, bindLayerNorm);
    add(Kernel::LAYER_NORM_GRAD, bindLayerNormGrad);
    add(Kernel::SOFTMAX_CROSS_ENTROPY, bindCrossEntropy);
    add(Kernel::SOFTMAX_CROSS_ENTROPY_GRAD, bindCrossEntropyGrad);
    add(Kernel::SOFTMAX_CROSS_ENTROPY_WITH_GRAD, bindCrossEntropyWithGrad);
    add(Kernel::REDUCE_SUM, [](const KernelCall &c) { return bindReduce(c, false); });
    add(Kernel::REDUCE_MEAN, [](const KernelCall &c) { return bindReduce(c, true); });
    add(Kernel::RESHAPE, bindCopy);
    add(Kernel::COPY, bindCopy);
    add(Kernel::TRANSPOSE, bindTranspose);
    add(Kernel::SLICE, bindSlice);
    add(Kernel::SLICE_GRAD, bindSliceGrad);
    add(Kernel::CONCAT, bindConcat);
    add(Kernel::EXPAND, bindExpand);
    add(Kernel::GATHER, bindGather);
    add(Kernel::GATHER_GRAD, bindGatherGrad);
    add(Kernel::TRILU, bindTrilu);
    add(Kernel::RELU_GRAD,
        [](const KernelCall &c) { return bindActivationGrad(c, ActivationGrad::Relu); });
    add(Kernel::GELU_GRAD,
        [](const KernelCall &c) { return bindActivationGrad(c, ActivationGrad::Gelu); });
    add(Kernel::GELU_TANH_GRAD,
        [](const KernelCall &c) { return bindActivationGrad(c, ActivationGrad::GeluTanh); });
    add(Kernel::ADAMW, bindAdamW);
    add(Kernel::SGD, bindSgd);
    add(Kernel::NONFINITE_COUNT, bindNonfiniteCount);
    add(Kernel::SUM_SQUARES, bindSumSquares);
    add(Kernel::CLIP_GRAD_SCALE, bindClipGradScale);
    add(Kernel::ALL_GATHER, [](const KernelCall &c) { return bindCollective(c, Kind::AllGather); });
    add(Kernel::REDUCE_SCATTER,
        [](const KernelCall &c) { return bindCollective(c, Kind::ReduceScatter); });
    add(Kernel::ALL_REDUCE, [](const KernelCall &c) { return bindCollective(c, Kind::AllReduce); });
    add(Kernel::ALL_GATHER_START, [](const KernelCall &c) { return bindStart(c, Kind::AllGather); });
    add(Kernel::REDUCE_SCATTER_START,
        [](const KernelCall &c) { return bindStart(c, Kind::ReduceScatter); });
    add(Kernel::ALL_REDUCE_START, [](const KernelCall &c) { return bindStart(c, Kind::AllReduce); });
    add(Kernel::WAIT, bindWait);
    add(Kernel::ALL_SLICE, bindAllSlice);
    add(Kernel::TO_HOST, bindTransfer);
    add(Kernel::TO_DEVICE, bindTransfer);
    // Every CPU kernel has a CUDA one: a plan never meets a gap on the GPU. NVMe
    // transfers are the host's on either backend (the executor's host worker).
    for (const auto &[kind, binder] : cpuKernels())
      ZRT_CHECK(t.count(kind) || kind == Kernel::NVME_READ || kind == Kernel::NVME_WRITE,
                "the CUDA backend has no kernel '"
                                   << zero::zplan::kernelKindName(kind) << "'");
    return t;
  }();
  return table;
}
