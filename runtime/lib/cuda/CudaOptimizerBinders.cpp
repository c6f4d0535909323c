//===- CudaOptimizerBinders.cpp - Optimizer kernels -------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CUDA binders of the optimizer step: AdamW and SGD over a rank's flat
// shards, the global gradient norm, the clip scale and the non-finite count.
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

/// One launch over every input (a rank's gradients): a table of spans in device
/// memory, made once at bind.
BoundKernel bindNonfiniteCount(const KernelCall &call) {
  validate(call);
  TensorView out = call.outs[0];
  std::vector<CountSpan> spans;
  int64_t blocks = 0;
  for (const TensorView &x : call.ins) {
    if (x.numel() == 0)
      continue;
    CountSpan span;
    span.data = x.data;
    span.n = x.numel();
    span.firstBlock = blocks;
    span.bytes = (int)dtypeSize(x.dtype);
    span.mask = span.bytes == 8   ? 0x7ff0000000000000ull
                : span.bytes == 4 ? 0x7f800000ull
                : x.dtype == zero::zplan::F16 ? 0x7c00ull
                                              : 0x7f80ull; // bf16
    spans.push_back(span);
    blocks += countBlocks(span.n);
  }
  ZRT_CHECK(blocks <= INT32_MAX, call.where() << ": too many elements for one launch");
  std::shared_ptr<CountSpan> owned = deviceArray(spans);
  int count = (int)spans.size();
  return [=] {
    Context &ctx = context();
    if (count)
      nonfiniteCountSpans(ctx.compute, owned.get(), count, blocks, out.as<float>());
    else
      ZERO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(float), ctx.compute));
  };
}

/// An optimizer's optional runtime operands (after its `own` inputs, as the plan's
/// operand_segments say; validate checked them): gradient scale, overflow count,
/// learning rate; null when absent.
struct OptimizerRuntime {
  const float *scale = nullptr, *found = nullptr;
  const double *lr = nullptr;
};
OptimizerRuntime optimizerRuntime(const KernelCall &call, size_t own) {
  OptimizerRuntime r;
  if (!call.hasAttr("operand_segments"))
    return r;
  std::vector<int64_t> seg = call.intsAttr("operand_segments");
  size_t next = own;
  if (seg[own])
    r.scale = call.ins[next++].as<float>();
  if (seg[own + 1])
    r.found = call.ins[next++].as<float>();
  if (seg[own + 2])
    r.lr = call.ins[next++].as<double>();
  return r;
}

/// One launch over every input (a rank's gradients) and one over its blocks'
/// partial sums: the spans' table and the partials in device memory, made at bind.
BoundKernel bindSumSquares(const KernelCall &call) {
  validate(call);
  TensorView out = call.outs[0];
  std::vector<SquareSpan> spans;
  int64_t blocks = 0;
  for (const TensorView &x : call.ins) {
    if (x.numel() == 0)
      continue;
    spans.push_back({x.data, x.numel(), blocks, elemOf(x.dtype)});
    blocks += squareBlocks(x.numel());
  }
  ZRT_CHECK(blocks <= INT32_MAX, call.where() << ": too many elements for one launch");
  std::shared_ptr<SquareSpan> table = deviceArray(spans);
  std::shared_ptr<double> partials = deviceArray(std::vector<double>(std::max<int64_t>(blocks, 1)));
  int count = (int)spans.size();
  return [=] {
    Context &ctx = context();
    if (count)
      sumSquaresSpans(ctx.compute, table.get(), count, blocks, partials.get(),
                      out.as<float>());
    else
      ZERO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(float), ctx.compute));
  };
}

BoundKernel bindClipGradScale(const KernelCall &call) {
  validate(call);
  TensorView sumSq = call.ins[0], scale = call.ins[1], out = call.outs[0],
             norm = call.outs[1];
  double maxNorm = call.floatAttr("max_norm");
  return [=] {
    clipGradScale(context().compute, sumSq.as<float>(), scale.as<float>(), out.as<float>(),
                  norm.as<float>(), maxNorm);
  };
}

/// AdamW (`adam`) or SGD over the N tensors of the kernel (N = 1 unless the plan
/// joined the step's updates): one launch over a table of spans, made when bound.
BoundKernel bindOptimizer(const KernelCall &call, bool adam) {
  validate(call); // the CPU binder checks each tensor's operands
  size_t own = adam ? 4 : 3;
  std::shared_ptr<OptimizerMembers> members = optimizerMembers(call, own);
  const KernelCall &first = members->calls[0];
  Elem t = elemOf(first.ins[0].dtype), gt = elemOf(first.ins[1].dtype);
  bool copies = adam && first.outs.size() == 4; // the plan folded the 16-bit casts in
  Elem ct = copies ? elemOf(first.outs[3].dtype) : t;
  std::vector<OptimizerSpan> spans;
  int64_t blocks = 0;
  for (const KernelCall &c : members->calls) {
    ZRT_CHECK(elemOf(c.ins[0].dtype) == t && elemOf(c.ins[1].dtype) == gt &&
                  (!copies || elemOf(c.outs[3].dtype) == ct),
              call.where() << ": its tensors' types differ");
    OptimizerSpan sp;
    sp.p = c.ins[0].data;
    sp.g = c.ins[1].data;
    sp.m = c.ins[2].data;
    sp.po = c.outs[0].data;
    sp.mo = c.outs[1].data;
    if (adam) {
      sp.v = c.ins[3].data;
      sp.vo = c.outs[2].data;
    }
    sp.copy = copies ? c.outs[3].data : nullptr;
    sp.n = c.ins[0].numel();
    if (!sp.n)
      continue;
    sp.firstBlock = blocks;
    blocks += countBlocks(sp.n);
    spans.push_back(sp);
  }
  ZRT_CHECK(blocks <= INT32_MAX, call.where() << ": too many elements for one launch");
  std::shared_ptr<OptimizerSpan> table = deviceArray(spans);
  int count = (int)spans.size();
  OptimizerRuntime rt = optimizerRuntime(first, adam ? 5 : 3);
  const int64_t *step = adam ? first.ins[4].as<int64_t>() : nullptr;
  double lr = call.floatAttr("lr"), wd = call.floatAttr("weight_decay");
  if (adam) {
    double b1 = call.floatAttr("beta1"), b2 = call.floatAttr("beta2"),
           eps = call.floatAttr("eps");
    return [=] {
      if (count)
        adamw(context().compute, t, gt, ct, copies, table.get(), count, blocks, step, rt.scale,
              rt.found, rt.lr, lr, b1, b2, eps, wd);
    };
  }
  double mom = call.floatAttr("momentum");
  return [=] {
    if (count)
      sgd(context().compute, t, gt, table.get(), count, blocks, rt.scale, rt.found, rt.lr, lr,
          mom, wd);
  };
}

BoundKernel bindAdamW(const KernelCall &call) { return bindOptimizer(call, true); }
BoundKernel bindSgd(const KernelCall &call) { return bindOptimizer(call, false); }

} // namespace zrt::cuda::binders
