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

/// An instruction's opcode. The unary ops' come from their records
/// (UnaryOps.def); the others are listed here. Plans store these values: an
/// opcode never changes, a new op takes the next free one.
enum class Op : int64_t {
  Const = 0,
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, ...) ID = OPCODE,
#include "zplan/UnaryOps.def"
  Add = 11,
  Sub = 12,
  Mul = 13,
  Div = 14,
  Pow = 15,          // a^b, computed in f64 as the pow kernel does
  Cast = 16,         // a, rounded to `type`
  Where = 17,        // a (an input of bool elements) ? b : c
  ReluGrad = 18,     // a > 0 ? b : 0 (relu_grad's input, gradient)
  GeluGrad = 19,     // b (Phi(a) + a phi(a)) (gelu_grad's input, gradient)
  GeluTanhGrad = 21, // gelu_tanh_grad(a, b) (gelu_tanh_grad's input, gradient)
  // How many ops there are: Const and the ten above, and the unary ops. The
  // opcodes are 0 to Count - 1, each one op's (runtime/lib/FusedProgram.cpp checks
  // it at build time), so it is also one past the largest.
  Count = 11
#define ZERO_UNARY_OP(...) +1
#include "zplan/UnaryOps.def"
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
