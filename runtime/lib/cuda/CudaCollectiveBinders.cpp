//===- CudaCollectiveBinders.cpp - Collectives on NCCL ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CUDA binders of the collectives: NCCL (plain, or ZeRO++'s quantized) on the
// communication stream, ordered by events; their starts and waits, all-slice,
// and the copies between host and device.
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

//===----------------------------------------------------------------------===//
// Collectives: NCCL on the communication stream, ordered by events
//===----------------------------------------------------------------------===//

ncclDataType_t ncclTypeOf(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return ncclFloat32;
  case zero::zplan::F64:
    return ncclFloat64;
  case zero::zplan::I64:
    return ncclInt64;
  case zero::zplan::I32:
    return ncclInt32;
  case zero::zplan::BF16:
    return ncclBfloat16;
  case zero::zplan::F16:
    return ncclFloat16;
  default:
    ZRT_FAIL("the CUDA backend has no " << dtypeName(t) << " collectives");
  }
}

/// ZeRO++'s quantized form of a collective kernel (its `quantize_block`), as
/// zrt/QuantizedCollectives.h does it on the CPU, bit for bit: int8 messages
/// (QuantizeKernels.h) through ncclAllGather and ncclAlltoAll, in the device's
/// message buffers (Context::quantizeSent ...: outside the arena, shared by every
/// quantized collective, sized for the largest).
struct Quantized {
  int64_t block = 0; // 0: full precision
  int rank = 0, ranks = 1;
  int64_t chunk = 0;   // values per rank's message
  size_t message = 0;  // one message's bytes
};

/// `s` holds at least `bytes`. Kernels are bound before any runs, so the
/// outgrown memory is unused; every allocation is freed with the device.
void growScratch(Context &ctx, Scratch &s, size_t bytes) {
  if (s.bytes >= bytes)
    return;
  s.data = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&s.data, bytes));
  ctx.retiredWorkspaces.push_back(s.data);
  s.bytes = bytes;
}

Quantized quantizedOf(const KernelCall &call, Kind kind) {
  Quantized q;
  if (!call.hasAttr("quantize_block"))
    return q;
  Context &ctx = context();
  q.block = call.intAttr("quantize_block");
  DType t = call.ins[0].dtype;
  ZRT_CHECK(t == zero::zplan::F32 || t == zero::zplan::BF16 || t == zero::zplan::F16,
            call.where() << ": quantized collectives take f32, bf16 or f16 buffers, not "
                         << dtypeName(t));
  q.rank = call.comm->rank();
  q.ranks = call.comm->size();
  int64_t n = q.ranks;
  const TensorView &in = call.ins[0], &out = call.outs[0];
  q.chunk = kind == Kind::AllGather       ? in.numel()
            : kind == Kind::ReduceScatter ? out.numel()
                                          : (in.numel() + n - 1) / n;
  q.message = (size_t)quantizedBytes(q.chunk, q.block);
  growScratch(ctx, ctx.quantizeSent, q.message * (kind == Kind::AllGather ? 1 : n));
  growScratch(ctx, ctx.quantizeReceived, q.message * n);
  if (kind == Kind::AllReduce)
    growScratch(ctx, ctx.quantizeSums, q.chunk * dtypeSize(in.dtype));
  return q;
}

/// The quantized collective, on the communication stream (ctx.ncclMutex held).
void launchQuantized(Context &ctx, ncclComm_t nccl, Kind kind, const TensorView &in,
                     const TensorView &out, const Quantized &q) {
  Elem t = elemOf(in.dtype);
  int64_t n = q.ranks, chunk = q.chunk, block = q.block;
  const char *src = in.as<char>();
  size_t width = dtypeSize(in.dtype);
  void *sent = ctx.quantizeSent.data, *received = ctx.quantizeReceived.data,
       *sums = ctx.quantizeSums.data;
  if (kind == Kind::AllGather) {
    quantizeChunks(ctx.comm, t, src, chunk, chunk, 1, block, -1, sent);
    ZERO_NCCL_CHECK(ncclAllGather(sent, received, q.message, ncclUint8, nccl, ctx.comm));
    dequantizeChunks(ctx.comm, t, received, chunk, block, chunk * n, out.data);
    return;
  }
  // Each rank's chunk to its owner, all at once; the owner sums them in rank order.
  int64_t count = kind == Kind::ReduceScatter ? chunk * n : in.numel();
  int64_t first = q.rank * chunk, kept = std::max<int64_t>(0, std::min(chunk, count - first));
  quantizeChunks(ctx.comm, t, src, count, chunk, n, block, q.rank, sent);
  ZERO_NCCL_CHECK(ncclAlltoAll(sent, received, q.message, ncclUint8, nccl, ctx.comm));
  const char *own = kept ? src + first * width : src;
  void *sum = kind == Kind::ReduceScatter ? out.data : sums;
  sumQuantizedChunks(ctx.comm, t, received, own, kept, q.rank, (int)n, chunk, block, sum);
  if (kind == Kind::ReduceScatter)
    return;
  // An all-reduce then gathers the sums, quantized.
  quantizeChunks(ctx.comm, t, sums, kept, chunk, 1, block, -1, sent);
  ZERO_NCCL_CHECK(ncclAllGather(sent, received, q.message, ncclUint8, nccl, ctx.comm));
  dequantizeChunks(ctx.comm, t, received, chunk, block, count, out.data);
}

/// Enqueues the collective on the communication stream after everything the
/// compute stream has done so far, and records `done` when it ends.
void launchCollective(Kind kind, const TensorView &in, const TensorView &out,
                      cudaEvent_t done, const Quantized &q, const Communicator *group) {
  Context &ctx = context();
  ZERO_CUDA_CHECK(cudaEventRecord(ctx.ready, ctx.compute));
  ZERO_CUDA_CHECK(cudaStreamWaitEvent(ctx.comm, ctx.ready, 0));
  ncclDataType_t t = ncclTypeOf(in.dtype);
  std::lock_guard<std::mutex> lock(ctx.ncclMutex);
  ZRT_CHECK(ctx.nccl, "cuda:" << ctx.ordinal << " has no NCCL communicator for the plan's "
                                 "collective (it was made for a plan without any)");
  ZRT_CHECK(!ctx.ncclAborted, "stopped on cuda:" << ctx.ordinal << ": another rank of this "
                                                 << "process failed and its NCCL "
                                                 << "communicator was aborted");
  // The ranks of the kernel's group (hybrid sharding, hpZ), or every rank.
  auto g = ctx.groupNccl.find(group);
  ncclComm_t nccl = g == ctx.groupNccl.end() ? ctx.nccl : g->second;
  if (q.block)
    launchQuantized(ctx, nccl, kind, in, out, q);
  else if (kind == Kind::AllGather)
    ZERO_NCCL_CHECK(ncclAllGather(in.data, out.data, in.numel(), t, nccl, ctx.comm));
  else if (kind == Kind::ReduceScatter)
    ZERO_NCCL_CHECK(
        ncclReduceScatter(in.data, out.data, out.numel(), t, ncclSum, nccl, ctx.comm));
  else
    ZERO_NCCL_CHECK(
        ncclAllReduce(in.data, out.data, in.numel(), t, ncclSum, nccl, ctx.comm));
  ZERO_CUDA_CHECK(cudaEventRecord(done, ctx.comm));
}

void count(Communicator *comm, Kind kind, const TensorView &in, const TensorView &out,
           const Quantized &q) {
  if (q.block) { // what this rank sent the others (the error is not measured here)
    int64_t passes = kind == Kind::AllReduce ? 2 : 1, others = q.ranks - 1;
    comm->quantization.wireBytes += passes * others * (int64_t)q.message;
    comm->quantization.fullBytes += passes * others * q.chunk * dtypeSize(in.dtype);
  }
  if (kind == Kind::AllGather)
    comm->allGatherElements += out.numel();
  else if (kind == Kind::ReduceScatter)
    comm->reduceScatterElements += in.numel();
  else
    comm->allReduceElements += in.numel();
}

/// Synchronous form: the compute stream waits for the transfer at once.
BoundKernel bindCollective(const KernelCall &call, Kind kind) {
  validate(call);
  TensorView in = call.ins[0], out = call.outs[0];
  Communicator *comm = call.comm;
  Quantized q = quantizedOf(call, kind);
  return [=] {
    launchCollective(kind, in, out, context().doneSync, q, comm);
    ZERO_CUDA_CHECK(cudaStreamWaitEvent(context().compute, context().doneSync, 0));
    count(comm, kind, in, out, q);
  };
}

cudaEvent_t requestEvent(int64_t request) {
  Context &ctx = context();
  while ((int64_t)ctx.done.size() <= request) {
    cudaEvent_t e;
    ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ctx.done.push_back(e);
  }
  return ctx.done[request];
}

/// Split-phase: the start enqueues, the wait makes the compute stream wait.
BoundKernel bindStart(const KernelCall &call, Kind kind) {
  validate(call);
  TensorView in = call.ins[0], out = call.outs[0];
  cudaEvent_t done = requestEvent(call.intAttr("request"));
  Communicator *comm = call.comm;
  Quantized q = quantizedOf(call, kind);
  return [=] {
    launchCollective(kind, in, out, done, q, comm);
    count(comm, kind, in, out, q);
  };
}

BoundKernel bindWait(const KernelCall &call) {
  validate(call);
  cudaEvent_t done = requestEvent(call.intAttr("request"));
  return [=] { ZERO_CUDA_CHECK(cudaStreamWaitEvent(context().compute, done, 0)); };
}

BoundKernel bindAllSlice(const KernelCall &call) {
  validate(call);
  TensorView in = call.ins[0], out = call.outs[0];
  int64_t offset = call.comm->rank() * out.bytes();
  return [=] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(out.data, in.as<char>() + offset, out.bytes(),
                                    cudaMemcpyDeviceToDevice, context().compute));
  };
}

/// to_host, to_device (an offloaded optimizer's): on the copy stream, after the
/// compute stream's work so far (which made the source, or last read the
/// destination's bytes); the compute stream's later work waits for it (it may
/// reuse the device buffer's bytes). The host memory is page-locked (the host
/// arena), so the copy is asynchronous.
BoundKernel bindTransfer(const KernelCall &call) {
  validate(call);
  bool toHost = call.kind == Kernel::TO_HOST;
  void *dst = call.outs[0].data;
  const void *src = call.ins[0].data;
  size_t bytes = call.ins[0].bytes();
  cudaEvent_t ready = ownedEvent(context()), copied = ownedEvent(context());
  return [=] {
    Context &ctx = context();
    ZERO_CUDA_CHECK(cudaEventRecord(ready, ctx.compute));
    ZERO_CUDA_CHECK(cudaStreamWaitEvent(ctx.copy, ready, 0));
    ZERO_CUDA_CHECK(cudaMemcpyAsync(
        dst, src, bytes, toHost ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, ctx.copy));
    ZERO_CUDA_CHECK(cudaEventRecord(copied, ctx.copy));
    ZERO_CUDA_CHECK(cudaStreamWaitEvent(ctx.compute, copied, 0));
  };
}

} // namespace zrt::cuda::binders
