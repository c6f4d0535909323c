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

#include "zplan/FusedOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zrt::fused {

/// How many of a, b, c `op` reads (Const: none; its a is the value).
int operandCount(Op op);
/// "neg", "add"... for messages.
const char *opName(Op op);

/// Decodes `words` for a kernel with `inputs` inputs into `out`; "" when the
/// program is well formed (known ops and types, operands that name earlier values,
/// at least one instruction, within FusedOps.h's bounds), else the problem. Which
/// inputs hold booleans is the kernel's to check (Where's condition, nothing else).
std::string decodeProgram(const std::vector<int64_t> &words, int inputs,
                          std::vector<Instruction> &out);

} // namespace zrt::fused

#endif // ZPLAN_FUSEDPROGRAM_H
