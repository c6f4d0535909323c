//===- FusedProgram.cpp - Decoding and checking a fused kernel's program --===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zplan/FusedProgram.h"

#include <sstream>

using namespace zrt::fused;

int zrt::fused::operandCount(Op op) {
  switch (op) {
  case Op::Const:
    return 0;
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Pow:
  case Op::ReluGrad:
  case Op::GeluGrad:
  case Op::GeluTanhGrad:
    return 2;
  case Op::Where:
    return 3;
  default:
    return 1;
  }
}

const char *zrt::fused::opName(Op op) {
  static const char *names[] = {"const", "neg", "sqrt", "reciprocal", "exp",
                                "log",   "relu", "tanh", "sigmoid",   "erf",
                                "gelu",  "add", "sub",  "mul",        "div",
                                "pow",   "cast", "where", "relu_grad", "gelu_grad",
                                "gelu_tanh", "gelu_tanh_grad"};
  static_assert(sizeof(names) / sizeof(names[0]) == (size_t)Op::Count);
  return (int64_t)op >= 0 && op < Op::Count ? names[(int64_t)op] : "?";
}

std::string zrt::fused::decodeProgram(const std::vector<int64_t> &words, int inputs,
                                      std::vector<Instruction> &out) {
  std::ostringstream err;
  out.clear();
  if (inputs < 0 || inputs > kMaxInputs) {
    err << inputs << " inputs (at most " << kMaxInputs << ")";
    return err.str();
  }
  if (words.empty() || words.size() % kWords != 0) {
    err << "a program of " << words.size() << " integers (a positive multiple of "
        << kWords << " expected)";
    return err.str();
  }
  size_t count = words.size() / kWords;
  if (count > (size_t)kMaxInstructions) {
    err << count << " instructions (at most " << kMaxInstructions << ")";
    return err.str();
  }
  for (size_t i = 0; i < count; ++i) {
    const int64_t *w = &words[i * kWords];
    if (w[0] < 0 || w[0] >= (int64_t)Op::Count) {
      err << "instruction " << i << " has unknown op " << w[0];
      return err.str();
    }
    if (w[1] < 0 || w[1] >= (int64_t)Type::Count) {
      err << "instruction " << i << " has unknown type " << w[1];
      return err.str();
    }
    Instruction ins{Op(w[0]), Type(w[1]), w[2], w[3], w[4]};
    int64_t defined = inputs + (int64_t)i; // values 0..defined-1 exist
    int n = operandCount(ins.op);
    const int64_t operands[3] = {ins.a, ins.b, ins.c};
    for (int k = 0; k < 3; ++k) {
      bool used = k < n;
      if (used && (operands[k] < 0 || operands[k] >= defined)) {
        err << "instruction " << i << " (" << opName(ins.op) << ") reads value "
            << operands[k] << ", which is not defined before it (" << defined
            << " are)";
        return err.str();
      }
      if (!used && k > 0 && operands[k] != 0) {
        err << "instruction " << i << " (" << opName(ins.op) << ") has an operand "
            << k << " it does not read";
        return err.str();
      }
    }
    out.push_back(ins);
  }
  return "";
}
