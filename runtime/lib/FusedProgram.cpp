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
  switch (op) {
  case Op::Const:
    return "const";
#define ZERO_UNARY_OP(ID, NAME, ...)                                                      \
  case Op::ID:                                                                          \
    return NAME;
#include "zplan/UnaryOps.def"
  case Op::Add:
    return "add";
  case Op::Sub:
    return "sub";
  case Op::Mul:
    return "mul";
  case Op::Div:
    return "div";
  case Op::Pow:
    return "pow";
  case Op::Cast:
    return "cast";
  case Op::Where:
    return "where";
  case Op::ReluGrad:
    return "relu_grad";
  case Op::GeluGrad:
    return "gelu_grad";
  case Op::GeluTanhGrad:
    return "gelu_tanh_grad";
  default:
    return "?";
  }
}

namespace {

/// How many ops have opcode `v` (decodeProgram accepts every value below Count,
/// so each must name exactly one op: a unary record's opcode that repeats another
/// or leaves a gap fails the build here).
constexpr int opsWithOpcode(int64_t v) {
  int n = 0;
  for (Op op : {Op::Const, Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Cast, Op::Where,
                Op::ReluGrad, Op::GeluGrad, Op::GeluTanhGrad})
    n += (int64_t)op == v;
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, ...) n += OPCODE == v;
#include "zplan/UnaryOps.def"
  return n;
}
constexpr bool everyOpcodeNamesOneOp() {
  for (int64_t v = 0; v < (int64_t)Op::Count; ++v)
    if (opsWithOpcode(v) != 1)
      return false;
  return true;
}
static_assert(everyOpcodeNamesOneOp(),
              "zplan/UnaryOps.def: each opcode below fused::Op::Count names one op");

} // namespace

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
