//===- KernelMathTest.cpp - The shared kernels' exp and erf against libm ---===//
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

} // namespace
