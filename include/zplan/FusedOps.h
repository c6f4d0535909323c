//===- FusedOps.h - A fused program's instructions -------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The opcodes, types and bounds of a fused program (FusedProgram.h says how a
// program is encoded). Apart from the rest of FusedProgram.h because the
// generated fused kernels include it too, under NVRTC, which has no C++ library.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_FUSEDOPS_H
#define ZPLAN_FUSEDOPS_H

#ifndef __CUDACC_RTC__
#include <cstdint>
#endif

namespace zrt::fused {

/// Neg..Gelu in the order of kernels::UnaryOp, Add..Div in that of
/// kernels::BinaryOp (the backends convert by offset).
enum class Op : int64_t {
  Const,
  Neg,
  Sqrt,
  Reciprocal,
  Exp,
  Log,
  Relu,
  Tanh,
  Sigmoid,
  Erf,
  Gelu,
  Add,
  Sub,
  Mul,
  Div,
  Pow,      // a^b, computed in f64 as the pow kernel does
  Cast,     // a, rounded to `type`
  Where,    // a (an input of bool elements) ? b : c
  ReluGrad, // a > 0 ? b : 0 (relu_grad's input, gradient)
  GeluGrad, // b (Phi(a) + a phi(a)) (gelu_grad's input, gradient)
  GeluTanh, // GELU's tanh approximation of a (appended: earlier opcodes keep their values)
  GeluTanhGrad, // gelu_tanh_grad(a, b) (gelu_tanh_grad's input, gradient)
  Count
};

/// The type a value is rounded to.
enum class Type : int64_t { F32, BF16, F16, Count };

constexpr int kWords = 5;
/// Bounds the compiler respects and the runtime checks: a CUDA thread keeps every
/// value in registers, a CPU block every value in a small scratch array.
constexpr int kMaxInputs = 8;
constexpr int kMaxInstructions = 24;

struct Instruction {
  Op op;
  Type type;
  int64_t a, b, c;
};

} // namespace zrt::fused

#endif // ZPLAN_FUSEDOPS_H
