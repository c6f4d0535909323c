//===- CudaElementwiseBinders.cpp - Elementwise kernels ---------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CUDA binders of the elementwise kinds: binary and unary ops, where, casts,
// the fused kernels (generated at plan load) and the activations' gradients.
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

BoundKernel bindBinary(const KernelCall &call, BinaryOp op) {
  validate(call);
  TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  Shape shape = out.shape;
  Strided sa = stridedOf(call, shape, broadcastStrides(a.shape, shape));
  Strided sb = stridedOf(call, shape, broadcastStrides(b.shape, shape));
  Elem t = elemOf(a.dtype);
  int64_t n = out.numel();
  return [=] {
    binary(context().compute, op, t, a.data, sa, b.data, sb, out.data, n,
           context().errorFlag);
  };
}

BoundKernel bindPow(const KernelCall &call) {
  validate(call);
  TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  Strided sa = stridedOf(call, out.shape, broadcastStrides(a.shape, out.shape));
  Strided sb = stridedOf(call, out.shape, broadcastStrides(b.shape, out.shape));
  Elem ta = elemOf(a.dtype), tb = elemOf(b.dtype);
  int64_t n = out.numel();
  return [=] { power(context().compute, ta, tb, a.data, sa, b.data, sb, out.data, n); };
}

BoundKernel bindUnary(const KernelCall &call, UnaryOp op) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  Elem t = elemOf(x.dtype);
  int64_t n = x.numel();
  return [=] { unary(context().compute, op, t, x.data, out.data, n); };
}

BoundKernel bindWhere(const KernelCall &call) {
  validate(call);
  TensorView c = call.ins[0], a = call.ins[1], b = call.ins[2], out = call.outs[0];
  Strided sc = stridedOf(call, out.shape, broadcastStrides(c.shape, out.shape));
  Strided sa = stridedOf(call, out.shape, broadcastStrides(a.shape, out.shape));
  Strided sb = stridedOf(call, out.shape, broadcastStrides(b.shape, out.shape));
  Elem t = elemOf(a.dtype);
  int64_t n = out.numel();
  return [=] { where(context().compute, t, c.data, sc, a.data, sa, b.data, sb, out.data, n); };
}

BoundKernel bindCast(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  Elem from = elemOf(x.dtype), to = elemOf(out.dtype);
  bool toBool = out.dtype == zero::zplan::BOOL;
  int64_t n = x.numel();
  return [=] { cast(context().compute, from, to, toBool, x.data, out.data, n); };
}

/// The CPU binder checked the program, the inputs' roles and their shapes.
BoundKernel bindFused(const KernelCall &call) {
  validate(call);
  std::vector<fused::Instruction> code;
  fused::decodeProgram(call.intsAttr("program"), (int)call.ins.size(), code);
  const TensorView out = call.outs[0];
  FusedArgs args;
  args.inputs = (int)call.ins.size();
  args.instructions = (int)code.size();
  for (int k = 0; k < args.inputs; ++k) {
    const TensorView &in = call.ins[k];
    args.in[k] = in.data;
    args.inType[k] = elemOf(in.dtype);
    args.view[k] = stridedOf(call, out.shape, broadcastStrides(in.shape, out.shape));
  }
  for (int j = 0; j < args.instructions; ++j) {
    const fused::Instruction &ins = code[j];
    int reads = fused::operandCount(ins.op);
    FusedArgs::Step &s = args.code[j];
    s.op = ins.op;
    s.type = ins.type;
    s.a = reads > 0 ? (int)ins.a : 0;
    s.b = reads > 1 ? (int)ins.b : 0;
    s.c = reads > 2 ? (int)ins.c : 0;
    double constant = 0;
    if (ins.op == fused::Op::Const)
      std::memcpy(&constant, &ins.a, sizeof constant);
    s.constant = (float)constant;
  }
  args.out = out.data;
  args.outType = elemOf(out.dtype);
  int64_t n = out.numel();
  std::shared_ptr<GeneratedKernels> generated = context().generated;
  if (!generated) {
    ++context().fallbacks["fused programs on the interpreter kernel"];
    return [=] { fusedElementwise(context().compute, args, n); };
  }

  // The program's own kernel: the arena's addresses are fixed, so their alignment
  // is known now.
  auto aligned = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  std::vector<FusedOperand> operands;
  std::vector<uint64_t> params;
  for (int k = 0; k < args.inputs; ++k) {
    operands.push_back({args.inType[k], args.view[k], aligned(args.in[k])});
    params.push_back(reinterpret_cast<uint64_t>(args.in[k]));
  }
  Strided outView = stridedOf(call, out.shape, stridesOf(out.shape));
  FusedKernelSource source =
      fusedKernelSource(code, operands, {args.outType, outView, aligned(out.data)}, n);
  params.push_back(reinterpret_cast<uint64_t>(out.data));
  params.push_back((uint64_t)n);
  std::shared_ptr<GeneratedKernels::Kernel> kernel = generated->add(source);
  return [=] { generated->launch(*kernel, context().compute, params.data()); };
}

BoundKernel bindActivationGrad(const KernelCall &call, ActivationGrad op) {
  validate(call);
  TensorView x = call.ins[0], g = call.ins[1], out = call.outs[0];
  Elem t = elemOf(x.dtype);
  int64_t n = x.numel();
  return [=] { activationGrad(context().compute, op, t, x.data, g.data, out.data, n); };
}

} // namespace zrt::cuda::binders
