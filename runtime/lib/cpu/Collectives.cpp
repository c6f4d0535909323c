//===- Collectives.cpp - The plan's collective kernels --------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Flat 1-D buffers on the whole grid; the communicator does the work (MPI, or a copy
// on one rank). Every rank runs the same kernel list, so collectives match up.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "zrt/AsyncCollectives.h"
#include "zrt/Communicator.h"
#include "zrt/QuantizedCollectives.h"

#include <cstring>

using namespace zrt;
using namespace zrt::cpu;

namespace {

/// Checks a collective's buffers: 1-D, one dtype, `in` or `out` N times the other.
void checkFlat(const KernelCall &call, int64_t inScale, int64_t outScale) {
  call.expectArity(1, 1);
  ZRT_CHECK(call.comm, call.where() << ": no communicator");
  const TensorView &in = call.ins[0], &out = call.outs[0];
  ZRT_CHECK(in.shape.size() == 1 && out.shape.size() == 1 && in.dtype == out.dtype,
            call.where() << ": needs flat buffers of one dtype");
  ZRT_CHECK(in.numel() * inScale == out.numel() * outScale,
            call.where() << ": " << in.describe() << " -> " << out.describe()
                         << " does not fit " << call.comm->size() << " ranks");
}

/// ZeRO++'s int8 blocks (`quantize_block`, values per scale), or 0: full precision.
int64_t quantizeBlock(const KernelCall &call) {
  if (!call.hasAttr("quantize_block"))
    return 0;
  int64_t block = call.intAttr("quantize_block");
  ZRT_CHECK(block >= 1 && block <= (1 << 20),
            call.where() << ": quantize_block " << block << " is not 1 to 2^20 values");
  return block;
}

BoundKernel bindAllGather(const KernelCall &call) {
  checkFlat(call, call.comm ? call.comm->size() : 1, 1);
  TensorView in = call.ins[0], out = call.outs[0];
  Communicator *comm = call.comm;
  if (int64_t block = quantizeBlock(call))
    return [=] { quantizedAllGather(*comm, in.data, out.data, in.numel(), in.dtype, block); };
  return [=] { comm->allGather(in.data, out.data, in.numel(), in.dtype); };
}

BoundKernel bindReduceScatter(const KernelCall &call) {
  checkFlat(call, 1, call.comm ? call.comm->size() : 1);
  TensorView in = call.ins[0], out = call.outs[0];
  Communicator *comm = call.comm;
  if (int64_t block = quantizeBlock(call))
    return [=] {
      quantizedReduceScatterSum(*comm, in.data, out.data, out.numel(), in.dtype, block);
    };
  return [=] { comm->reduceScatterSum(in.data, out.data, out.numel(), in.dtype); };
}

BoundKernel bindAllReduce(const KernelCall &call) {
  checkFlat(call, 1, 1);
  TensorView in = call.ins[0], out = call.outs[0];
  Communicator *comm = call.comm;
  if (int64_t block = quantizeBlock(call))
    return [=] { quantizedAllReduceSum(*comm, in.data, out.data, in.numel(), in.dtype, block); };
  return [=] { comm->allReduceSum(in.data, out.data, in.numel(), in.dtype); };
}

/// This rank's slice of a replicated buffer: no communication.
BoundKernel bindAllSlice(const KernelCall &call) {
  checkFlat(call, 1, call.comm ? call.comm->size() : 1);
  TensorView in = call.ins[0], out = call.outs[0];
  int64_t bytes = out.bytes(), offset = call.comm->rank() * bytes;
  return [=] { std::memcpy(out.data, in.as<char>() + offset, bytes); };
}

/// Split-phase forms: the start queues the collective on the communication thread
/// and returns; `wait` blocks until it is done. `request` pairs them.
template <BoundKernel (*Sync)(const KernelCall &)>
BoundKernel bindStart(const KernelCall &call) {
  ZRT_CHECK(call.async, call.where() << ": no communication thread");
  int64_t request = call.intAttr("request");
  BoundKernel run = Sync(call); // checks the buffers
  AsyncCollectives *async = call.async;
  std::string name = call.name();
  int64_t bytes = std::max(call.ins[0].bytes(), call.outs[0].bytes());
  return [=] { async->start(request, name, bytes, run); };
}

BoundKernel bindWait(const KernelCall &call) {
  ZRT_CHECK(call.async, call.where() << ": no communication thread");
  int64_t request = call.intAttr("request");
  AsyncCollectives *async = call.async;
  return [=] { async->wait(request); };
}

} // namespace

void zrt::addCollectiveKernels(KernelTable &t) {
  t[Kernel::ALL_GATHER_START] = bindStart<bindAllGather>;
  t[Kernel::REDUCE_SCATTER_START] = bindStart<bindReduceScatter>;
  t[Kernel::ALL_REDUCE_START] = bindStart<bindAllReduce>;
  t[Kernel::WAIT] = bindWait;
  t[Kernel::ALL_GATHER] = bindAllGather;
  t[Kernel::REDUCE_SCATTER] = bindReduceScatter;
  t[Kernel::ALL_REDUCE] = bindAllReduce;
  t[Kernel::ALL_SLICE] = bindAllSlice;
}
