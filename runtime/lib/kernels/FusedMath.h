//===- FusedMath.h - One instruction of a fused program, both backends -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What an instruction of a fused program (zplan/FusedProgram.h) computes, from the
// elementwise ops' own arithmetic (ElementwiseMath.h): a CUDA thread evaluates a
// program with fusedApply; the CPU runs each instruction as a vectorized loop over
// a block of elements, with the same functions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_FUSEDMATH_H
#define ZRT_LIB_KERNELS_FUSEDMATH_H

#include "ElementwiseMath.h"

#include "zplan/FusedOps.h"

namespace zrt::kernels {

/// `v` rounded to type `t`, as a kernel writing a tensor of that type rounds it.
ZRT_HOST_DEVICE inline float roundTo(fused::Type t, float v) {
  if (t == fused::Type::BF16)
    return (float)bf16(v);
  if (t == fused::Type::F16)
    return (float)f16(v);
  return v;
}

/// Whether an instruction is a unary op's (one of the records in
/// zplan/UnaryOps.def), and which.
ZRT_HOST_DEVICE inline bool isUnary(fused::Op op) {
  switch (op) {
#define ZERO_UNARY_OP(ID, ...)                                                            \
  case fused::Op::ID:                                                                   \
    return true;
#include "zplan/UnaryOps.def"
  default:
    return false;
  }
}
ZRT_HOST_DEVICE inline UnaryOp unaryOf(fused::Op op) {
  switch (op) {
#define ZERO_UNARY_OP(ID, ...)                                                            \
  case fused::Op::ID:                                                                   \
    return UnaryOp::ID;
#include "zplan/UnaryOps.def"
  default:
    return UnaryOp::Neg; // not reached: the caller asked isUnary
  }
}
/// The binary op an instruction names (Add..Div).
ZRT_HOST_DEVICE inline BinaryOp binaryOf(fused::Op op) {
  return BinaryOp((int64_t)op - (int64_t)fused::Op::Add);
}

/// Instruction `op` on operands a, b, c (what it does not read is ignored), before
/// rounding; `constant` is a Const's value. Where's `a` is 1 or 0.
ZRT_HOST_DEVICE inline float fusedApply(fused::Op op, float a, float b, float c,
                                        float constant) {
  switch (op) {
  case fused::Op::Const:
    return constant;
  case fused::Op::Add:
  case fused::Op::Sub:
  case fused::Op::Mul:
  case fused::Op::Div:
    return binary(binaryOf(op), a, b);
  case fused::Op::Pow:
    return power(a, b);
  case fused::Op::Cast:
    return a;
  case fused::Op::Where:
    return a != 0.0f ? b : c;
  case fused::Op::ReluGrad:
    return reluGrad(a, b);
  case fused::Op::GeluGrad:
    return geluGrad(a, b);
  case fused::Op::GeluTanhGrad:
    return geluTanhGrad(a, b);
  default:
    return unary(unaryOf(op), a);
  }
}

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_FUSEDMATH_H
