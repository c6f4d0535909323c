//===- FusedKernelTest.cpp - The fused kernel against the kernels it replaces -===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A fused program gives the bits of the unfused kernels, in f32 and bf16, over
// broadcast inputs and more elements than one block; a malformed program or
// operand is refused when the kernel binds.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zplan/FusedProgram.h"
#include "zrt/Kernels.h"

#include "KernelCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace zrt;
using zrt::fused::Op;
using zrt::fused::Type;
using zrt::test::Attrs;
using zrt::test::callOf;
using zrt::test::view;

namespace {

void run(const KernelCall &call) { cpuKernels().at(call.kind)(call)(); }

int64_t constant(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}

Attrs programOf(std::vector<std::vector<int64_t>> code) {
  Attrs attrs;
  for (auto &ins : code)
    for (int64_t w : ins)
      attrs["program"].mutable_ints()->add_values(w);
  return attrs;
}

std::vector<float> randomValues(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

// GELU after a bias add, y = (x + b) * 0.5 * (1 + erf((x + b) * 0.70710678)), over
// [3, 700] (several blocks, runs that end inside a block) with b broadcast.
TEST(FusedKernel, GeluMatchesTheUnfusedKernelsBitForBit) {
  const int64_t rows = 3, cols = 700, n = rows * cols;
  std::vector<float> x = randomValues(n, 1), b = randomValues(cols, 2);
  std::vector<float> half = {0.5f}, one = {1.0f}, scale = {0.70710678f};
  const auto F = zero::zplan::F32;
  std::vector<float> s(n), a(n), e(n), p(n), h(n), expected(n);
  run(callOf(Kernel::ADD, {view(x, F, {rows, cols}), view(b, F, {cols})}, {view(s, F, {rows, cols})}));
  run(callOf(Kernel::MUL, {view(s, F, {rows, cols}), view(scale, F, {})}, {view(a, F, {rows, cols})}));
  run(callOf(Kernel::ERF, {view(a, F, {rows, cols})}, {view(e, F, {rows, cols})}));
  run(callOf(Kernel::ADD, {view(e, F, {rows, cols}), view(one, F, {})}, {view(p, F, {rows, cols})}));
  run(callOf(Kernel::MUL, {view(s, F, {rows, cols}), view(half, F, {})}, {view(h, F, {rows, cols})}));
  run(callOf(Kernel::MUL, {view(h, F, {rows, cols}), view(p, F, {rows, cols})},
             {view(expected, F, {rows, cols})}));

  const int64_t f32 = (int64_t)Type::F32;
  Attrs attrs = programOf({
      {(int64_t)Op::Add, f32, 0, 1, 0},                       // 2: s
      {(int64_t)Op::Const, f32, constant(0.70710678f), 0, 0}, // 3
      {(int64_t)Op::Mul, f32, 2, 3, 0},                       // 4: a
      {(int64_t)Op::Erf, f32, 4, 0, 0},                       // 5: e
      {(int64_t)Op::Const, f32, constant(1.0), 0, 0},         // 6
      {(int64_t)Op::Add, f32, 5, 6, 0},                       // 7: p
      {(int64_t)Op::Const, f32, constant(0.5), 0, 0},         // 8
      {(int64_t)Op::Mul, f32, 2, 8, 0},                       // 9: h
      {(int64_t)Op::Mul, f32, 9, 7, 0},                       // 10: y
  });
  std::vector<float> y(n);
  run(callOf(Kernel::FUSED, {view(x, F, {rows, cols}), view(b, F, {cols})}, {view(y, F, {rows, cols})},
             &attrs));
  EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), n * sizeof(float)));
}

// The gelu and gelu_grad (and gelu_tanh, gelu_tanh_grad) instructions after a
// bias add, in f32 and bf16: the bits of their kernels after the ADD kernel.
TEST(FusedKernel, GeluInstructionsMatchTheirKernelsBitForBit) {
  const int64_t rows = 3, cols = 700, n = rows * cols;
  std::vector<float> xf = randomValues(n, 5), bf = randomValues(cols, 6), gf = randomValues(n, 7);
  // GELU's exact form and its tanh form (gelu_tanh, gelu_tanh_grad).
  auto check = [&](auto tag, zero::zplan::DType dt, Type type, bool tanh) {
    KernelKind geluKernel = tanh ? Kernel::GELU_TANH : Kernel::GELU,
               gradKernel = tanh ? Kernel::GELU_TANH_GRAD : Kernel::GELU_GRAD;
    Op geluOp = tanh ? Op::GeluTanh : Op::Gelu, gradOp = tanh ? Op::GeluTanhGrad : Op::GeluGrad;
    using T = decltype(tag);
    std::vector<T> x(xf.begin(), xf.end()), b(bf.begin(), bf.end()), g(gf.begin(), gf.end());
    std::vector<T> s(n), gelu(n), grad(n), y(n), dx(n);
    run(callOf(Kernel::ADD, {view(x, dt, {rows, cols}), view(b, dt, {cols})}, {view(s, dt, {rows, cols})}));
    run(callOf(geluKernel, {view(s, dt, {rows, cols})}, {view(gelu, dt, {rows, cols})}));
    run(callOf(gradKernel, {view(s, dt, {rows, cols}), view(g, dt, {rows, cols})},
               {view(grad, dt, {rows, cols})}));
    Attrs forward = programOf({{(int64_t)Op::Add, (int64_t)type, 0, 1, 0},
                               {(int64_t)geluOp, (int64_t)type, 2, 0, 0}});
    run(callOf(Kernel::FUSED, {view(x, dt, {rows, cols}), view(b, dt, {cols})},
               {view(y, dt, {rows, cols})}, &forward));
    // Operands in the order the compiler writes them: gradient, input, bias.
    Attrs backward = programOf({{(int64_t)Op::Add, (int64_t)type, 1, 2, 0},
                                {(int64_t)gradOp, (int64_t)type, 3, 0, 0}});
    run(callOf(Kernel::FUSED,
               {view(g, dt, {rows, cols}), view(x, dt, {rows, cols}), view(b, dt, {cols})},
               {view(dx, dt, {rows, cols})}, &backward));
    EXPECT_EQ(0, std::memcmp(y.data(), gelu.data(), n * sizeof(T)));
    EXPECT_EQ(0, std::memcmp(dx.data(), grad.data(), n * sizeof(T)));
    // Not trivially equal: the gradient is neither the input nor 0 nor g.
    EXPECT_NE(0, std::memcmp(dx.data(), g.data(), n * sizeof(T)));
  };
  for (bool tanh : {false, true}) {
    check(float{}, zero::zplan::F32, Type::F32, tanh);
    check(bf16{}, zero::zplan::BF16, Type::BF16, tanh);
  }
}

// A masked softmax-like chain in bf16: where(mask, exp(x - m), 0) cast to bf16,
// every value rounded to bf16 as the bf16 kernels round it.
TEST(FusedKernel, Bf16RoundingAndWhereMatchTheUnfusedKernels) {
  const int64_t rows = 5, cols = 300, n = rows * cols;
  std::vector<float> xf = randomValues(n, 3), mf = randomValues(rows, 4);
  std::vector<bf16> x(xf.begin(), xf.end()), m(mf.begin(), mf.end());
  std::vector<uint8_t> mask(cols);
  for (int64_t j = 0; j < cols; ++j)
    mask[j] = (j * 7) % 3 != 0;
  std::vector<bf16> zero = {bf16(0.0f)}, d(n), e(n), w(n);
  const auto B = zero::zplan::BF16, F = zero::zplan::F32, L = zero::zplan::BOOL;
  run(callOf(Kernel::SUB, {view(x, B, {rows, cols}), view(m, B, {rows, 1})}, {view(d, B, {rows, cols})}));
  run(callOf(Kernel::EXP, {view(d, B, {rows, cols})}, {view(e, B, {rows, cols})}));
  run(callOf(Kernel::WHERE, {view(mask, L, {cols}), view(e, B, {rows, cols}), view(zero, B, {})},
             {view(w, B, {rows, cols})}));
  std::vector<float> expected(n);
  run(callOf(Kernel::CAST, {view(w, B, {rows, cols})}, {view(expected, F, {rows, cols})}));

  const int64_t bf = (int64_t)Type::BF16;
  Attrs attrs = programOf({
      {(int64_t)Op::Sub, bf, 0, 1, 0},               // 3
      {(int64_t)Op::Exp, bf, 3, 0, 0},               // 4
      {(int64_t)Op::Const, bf, constant(0.0), 0, 0}, // 5
      {(int64_t)Op::Where, bf, 2, 4, 5},             // 6
      {(int64_t)Op::Cast, (int64_t)Type::F32, 6, 0, 0},
  });
  std::vector<float> y(n);
  run(callOf(Kernel::FUSED, {view(x, B, {rows, cols}), view(m, B, {rows, 1}), view(mask, L, {cols})},
             {view(y, F, {rows, cols})}, &attrs));
  EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), n * sizeof(float)));
}

// A program whose result is a constant (filled once per run, written where the
// result goes) over runs longer than a block, and one whose f32 input is read where
// it lies while a broadcast one is loaded once per run.
TEST(FusedKernel, ConstantResultsAndBroadcastInputs) {
  const int64_t rows = 4, cols = 600, n = rows * cols;
  const auto F = zero::zplan::F32;
  const int64_t f32 = (int64_t)Type::F32;
  std::vector<float> x = randomValues(n, 5), r = randomValues(rows, 6), y(n, -1.0f);
  Attrs constant2 = programOf({
      {(int64_t)Op::Neg, f32, 0, 0, 0},               // 1
      {(int64_t)Op::Const, f32, constant(2.0), 0, 0}, // 2
  });
  run(callOf(Kernel::FUSED, {view(x, F, {rows, cols})}, {view(y, F, {rows, cols})}, &constant2));
  for (float v : y)
    ASSERT_EQ(v, 2.0f);
  // A bf16 constant is the bf16 rounding of its value, however often it is filled.
  std::vector<bf16> ones(n, bf16(1.0f));
  const int64_t bf = (int64_t)Type::BF16;
  Attrs tenth = programOf({
      {(int64_t)Op::Const, bf, constant(0.1), 0, 0}, // 1
      {(int64_t)Op::Mul, bf, 0, 1, 0},               // 2: exact (x is 1)
      {(int64_t)Op::Cast, f32, 1, 0, 0},             // the constant as f32
  });
  run(callOf(Kernel::FUSED, {view(ones, zero::zplan::BF16, {rows, cols})},
             {view(y, F, {rows, cols})}, &tenth));
  for (float v : y)
    ASSERT_EQ(v, float(bf16(0.1f)));
  Attrs scaled = programOf({{(int64_t)Op::Mul, f32, 0, 1, 0}});
  run(callOf(Kernel::FUSED, {view(x, F, {rows, cols}), view(r, F, {rows, 1})},
             {view(y, F, {rows, cols})}, &scaled));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(y[i * cols + j], x[i * cols + j] * r[i]) << i << "," << j;
}

// Each malformed program or operand is refused at bind time, with the reason.
TEST(FusedKernel, MalformedProgramsAreRefused) {
  std::vector<float> x(4), y(4), big(5);
  std::vector<uint8_t> c(4);
  std::vector<bf16> h(4);
  const auto F = zero::zplan::F32;
  const int64_t f32 = (int64_t)Type::F32;
  struct Case {
    std::vector<std::vector<int64_t>> code;
    std::vector<TensorView> ins;
    TensorView out;
    const char *message;
  };
  std::vector<Case> cases = {
      {{{99, f32, 0, 0, 0}}, {view(x, F, {4})}, view(y, F, {4}), "unknown op 99"},
      {{{(int64_t)Op::Neg, 7, 0, 0, 0}}, {view(x, F, {4})}, view(y, F, {4}), "unknown type 7"},
      {{{(int64_t)Op::Neg, f32, 1, 0, 0}}, {view(x, F, {4})}, view(y, F, {4}),
       "reads value 1, which is not defined before it"},
      {{{(int64_t)Op::Neg, f32, 0, 3, 0}}, {view(x, F, {4})}, view(y, F, {4}),
       "has an operand 1 it does not read"},
      {{}, {view(x, F, {4})}, view(y, F, {4}), "missing attribute 'program'"},
      {{{(int64_t)Op::Neg, f32, 0}}, {view(x, F, {4})}, view(y, F, {4}),
       "a program of 3 integers"},
      {{{(int64_t)Op::Neg, f32, 0, 0, 0}}, {view(c, zero::zplan::BOOL, {4})}, view(y, F, {4}),
       "input 0 has dtype bool"},
      {{{(int64_t)Op::Where, f32, 0, 1, 1}}, {view(x, F, {4}), view(y, F, {4})},
       view(y, F, {4}), "is a condition and must be bool only"},
      {{{(int64_t)Op::Neg, f32, 0, 0, 0}}, {view(x, F, {4})}, view(h, zero::zplan::BF16, {4}),
       "is not the last instruction's type"},
      {{{(int64_t)Op::Neg, f32, 0, 0, 0}}, {view(big, F, {5})}, view(y, F, {4}),
       "does not broadcast to the result's"},
  };
  for (const Case &k : cases) {
    Attrs attrs = programOf(k.code);
    try {
      cpuKernels().at(Kernel::FUSED)(callOf(Kernel::FUSED, k.ins, {k.out}, &attrs));
      ADD_FAILURE() << "accepted; expected: " << k.message;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(k.message), std::string::npos)
          << e.what() << "\nexpected: " << k.message;
    }
  }
}

} // namespace
