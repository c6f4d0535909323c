//===- FusedProgram.h - The plan's encoding of a fused elementwise kernel -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A `fused` kernel computes one output from N inputs (each broadcast to the output's
// shape, numpy rules) by a straight-line program, element by element, so that the
// values between its instructions never go to memory. The compiler writes the
// program (compute.fused, lowered by ComputeToPlan), both backends run it: one
// runtime kernel for every chain of elementwise ops.
//
// The program is the kernel's `program` attribute, kWords integers per instruction:
// {op, type, a, b, c}. Values are numbered: inputs 0..N-1, then instruction i's
// result is N + i; a, b, c name earlier values (unused ones are 0). Every value is
// computed in f32 and rounded to the instruction's `type` (f32, bf16 or f16), as
// the unfused kernel of the same op would round it; so a fused program gives the
// same bits as the kernels it replaces. The output is the last instruction's value.
// `Const` holds its value in `a` as the bit pattern of a double.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_FUSEDPROGRAM_H
#define ZPLAN_FUSEDPROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

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

/// How many of a, b, c `op` reads (Const: none; its a is the value).
int operandCount(Op op);
/// "neg", "add"... for messages.
const char *opName(Op op);

/// Decodes `words` for a kernel with `inputs` inputs into `out`; "" when the
/// program is well formed (known ops and types, operands that name earlier values,
/// at least one instruction, within the bounds above), else the problem. Which
/// inputs hold booleans is the kernel's to check (Where's condition, nothing else).
std::string decodeProgram(const std::vector<int64_t> &words, int inputs,
                          std::vector<Instruction> &out);

} // namespace zrt::fused

#endif // ZPLAN_FUSEDPROGRAM_H
