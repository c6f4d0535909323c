//===- KernelMathTest.cpp - The shared kernels' exp, erf and GELU against libm ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "../lib/kernels/ElementwiseMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace zrt::kernels;

namespace {

/// About a million f32 values evenly spread over the bit patterns in [lo, hi], and
/// the worst relative error of f against the f64 reference.
template <typename F, typename R>
double worstRelativeError(float lo, float hi, F f, R reference, float *where) {
  double worst = 0;
  auto visit = [&](float x) {
    double want = reference((double)x), got = f(x);
    double err = want == 0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want);
    // Below f32's smallest normal the polynomial gives 0: not an error.
    if (std::fabs(want) < std::numeric_limits<float>::min())
      err = 0;
    if (err > worst) {
      worst = err;
      *where = x;
    }
  };
  // Non-negative floats order as their bit patterns: walk [0, |end|] per sign.
  auto walk = [&](float end, float sign) {
    uint32_t last = zrt::floatBits(end);
    for (uint32_t bits = 0; bits <= last; bits += 1 + last / (1u << 19))
      visit(sign * zrt::bitsFloat(bits));
    visit(sign * end);
  };
  if (lo < 0)
    walk(-lo, -1.0f);
  walk(hi, 1.0f);
  return worst;
}

TEST(KernelMath, ExpIsWithinTwoUlp) {
  float where = 0;
  double worst = worstRelativeError(
      -87.0f, 88.7f, [](float x) { return (double)expF32(x); },
      [](double x) { return std::exp(x); }, &where);
  EXPECT_LT(worst, 2.4e-7) << "at x = " << where; // 2 ulp of f32
}

TEST(KernelMath, ExpLimits) {
  EXPECT_EQ(expF32(0.0f), 1.0f);
  EXPECT_EQ(expF32(100.0f), INFINITY);
  EXPECT_EQ(expF32(INFINITY), INFINITY);
  EXPECT_EQ(expF32(-100.0f), 0.0f);
  EXPECT_EQ(expF32(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(expF32(NAN)));
  // The largest finite results stay finite (2^n is built in two halves).
  EXPECT_TRUE(std::isfinite(expF32(88.7f)));
  EXPECT_NEAR(expF32(88.7f) / std::exp((double)88.7f), 1.0, 2.4e-7);
}

// 4 x 2^-23: the rational erf's f32 rounding (utils/fit-erf.py prints 3.8e-7).
TEST(KernelMath, ErfIsWithinFourUlp) {
  float where = 0;
  double worst = worstRelativeError(
      -6.0f, 6.0f, [](float x) { return (double)erfF32(x); },
      [](double x) { return std::erf(x); }, &where);
  EXPECT_LT(worst, 4.8e-7) << "at x = " << where;
  EXPECT_EQ(erfF32(0.0f), 0.0f);
  EXPECT_EQ(erfF32(3.9375f), 1.0f);
  EXPECT_EQ(erfF32(-5.0f), -1.0f);
  EXPECT_EQ(erfF32(INFINITY), 1.0f);
  EXPECT_EQ(erfF32(-INFINITY), -1.0f);
  EXPECT_TRUE(std::isnan(erfF32(NAN)));
}

TEST(KernelMath, TinyArgumentsKeepRelativeAccuracy) {
  for (float x : {1e-38f, 1e-20f, 1e-7f, 1e-3f, 0.5f, 0.999f, 1.0f, 3.999f}) {
    EXPECT_NEAR(erfF32(x) / std::erf((double)x), 1.0, 2.4e-7) << x;
    EXPECT_NEAR(expF32(-x) / std::exp(-(double)x), 1.0, 2.4e-7) << x;
  }
}

/// GELU and its gradient in f32 against f64 references over [-10, 10]. Their error
/// is absolute, not relative: for x < 0, 1 + erf(x / sqrt 2) cancels (PyTorch's
/// formula does the same), so both are compared within a few f32 roundings of
/// max(1, |x|).
TEST(KernelMath, GeluAndItsGradientMatchTheirDefinitions) {
  auto phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  auto density = [](double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); };
  double worstGelu = 0, worstGrad = 0;
  for (int i = -200000; i <= 200000; ++i) {
    float x = 1e-4f * (float)i;
    double scale = std::max(1.0, std::fabs((double)x));
    double gelu = (double)unary<UnaryOp::Gelu>(x), want = (double)x * phi(x);
    worstGelu = std::max(worstGelu, std::fabs(gelu - want) / scale);
    double grad = (double)geluGrad(x, 1.0f), wantGrad = phi(x) + (double)x * density(x);
    worstGrad = std::max(worstGrad, std::fabs(grad - wantGrad) / scale);
  }
  EXPECT_LT(worstGelu, 4.8e-7);
  EXPECT_LT(worstGrad, 4.8e-7);
  // The gradient is the derivative (in f64: central differences of gelu).
  for (double x : {-4.0, -1.3, -0.2, 0.0, 0.7, 2.5, 6.0}) {
    double h = 1e-5, fd = (gelu(x + h) - gelu(x - h)) / (2 * h);
    EXPECT_NEAR(geluGrad(x, 1.0), fd, 1e-8) << x;
    EXPECT_NEAR(geluGrad(x, -3.0), -3.0 * fd, 3e-8) << x;
  }
  EXPECT_EQ(unary<UnaryOp::Gelu>(0.0f), 0.0f);
  EXPECT_EQ(unary<UnaryOp::Gelu>(100.0f), 100.0f);
  EXPECT_EQ(unary<UnaryOp::Gelu>(-100.0f), -0.0f);
  EXPECT_EQ(geluGrad(100.0f, 2.0f), 2.0f);
  EXPECT_TRUE(std::isnan(unary<UnaryOp::Gelu>(NAN)));
  EXPECT_TRUE(std::isnan(geluGrad(NAN, 1.0f)));
  // 16-bit elements compute in f32 and round once.
  zrt::bf16 b(1.5f);
  EXPECT_EQ((float)geluGrad(b, zrt::bf16(1.0f)), (float)zrt::bf16(geluGrad(1.5f, 1.0f)));
}

/// GELU's tanh form and its gradient in f32 (tanh from expF32) against f64
/// references over [-10, 10], absolutely within a few f32 roundings of max(1, |x|)
/// as above; the f64 gradient against central differences of the f64 form.
TEST(KernelMath, GeluTanhAndItsGradientMatchTheirDefinitions) {
  const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
  auto form = [&](double x) {
    return 0.5 * x * (1 + std::tanh(beta * (x + kappa * x * x * x)));
  };
  auto slope = [&](double x) {
    double t = std::tanh(beta * (x + kappa * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x);
  };
  double worstGelu = 0, worstGrad = 0;
  for (int i = -200000; i <= 200000; ++i) {
    float x = 1e-4f * (float)i;
    double scale = std::max(1.0, std::fabs((double)x));
    double gelu = (double)unary<UnaryOp::GeluTanh>(x);
    worstGelu = std::max(worstGelu, std::fabs(gelu - form(x)) / scale);
    worstGrad = std::max(worstGrad, std::fabs((double)geluTanhGrad(x, 1.0f) - slope(x)) / scale);
  }
  EXPECT_LT(worstGelu, 4.8e-7);
  EXPECT_LT(worstGrad, 4.8e-7);
  for (double x : {-4.0, -1.3, -0.2, 0.0, 0.7, 2.5, 6.0}) {
    double h = 1e-5, fd = (geluTanh(x + h) - geluTanh(x - h)) / (2 * h);
    EXPECT_NEAR(geluTanhGrad(x, 1.0), fd, 1e-8) << x;
    EXPECT_NEAR(geluTanhGrad(x, -3.0), -3.0 * fd, 3e-8) << x;
  }
  EXPECT_EQ(unary<UnaryOp::GeluTanh>(0.0f), 0.0f);
  EXPECT_EQ(unary<UnaryOp::GeluTanh>(100.0f), 100.0f);
  EXPECT_EQ(unary<UnaryOp::GeluTanh>(-100.0f), -0.0f);
  EXPECT_EQ(geluTanhGrad(100.0f, 2.0f), 2.0f);
  EXPECT_TRUE(std::isnan(unary<UnaryOp::GeluTanh>(NAN)));
  EXPECT_TRUE(std::isnan(geluTanhGrad(NAN, 1.0f)));
  zrt::bf16 b(1.5f);
  EXPECT_EQ((float)geluTanhGrad(b, zrt::bf16(1.0f)), (float)zrt::bf16(geluTanhGrad(1.5f, 1.0f)));
}

} // namespace
