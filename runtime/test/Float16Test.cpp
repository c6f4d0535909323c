//===- Float16Test.cpp - bf16 and f16 conversions -------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Exhaustive over the 16-bit patterns, and against the rounding rule (to nearest,
// ties to even) at every midpoint between neighbouring 16-bit values.
//
//===----------------------------------------------------------------------===//

#include "zrt/Float16.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace zrt;

namespace {

template <typename H> float wide(uint16_t bits) {
  H h;
  h.bits = bits;
  return (float)h;
}

/// Every finite 16-bit value converts to f32 and back to itself; the midpoint
/// between it and its successor rounds to whichever of the two is even.
template <typename H> void checkExhaustive() {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = wide<H>((uint16_t)b);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan((float)H(f))) << b;
      continue;
    }
    EXPECT_EQ(H(f).bits, b) << "round trip of " << f;
    if (std::isinf(f) || (b & 0x7fff) == 0x7fff)
      continue;
    uint16_t next = (uint16_t)(b + 1);
    float g = wide<H>(next);
    if (!std::isfinite(g) || (b & 0x8000) != (next & 0x8000))
      continue;
    double mid = ((double)f + (double)g) / 2;
    if ((float)mid != mid)
      continue; // not representable in f32: no exact tie to test
    uint16_t even = (b & 1) ? next : (uint16_t)b;
    EXPECT_EQ(H((float)mid).bits, even) << "tie between " << f << " and " << g;
    // Just off the midpoint, the nearer neighbour wins.
    EXPECT_EQ(H(std::nextafter((float)mid, f)).bits, b) << f;
    EXPECT_EQ(H(std::nextafter((float)mid, g)).bits, next) << g;
  }
}

TEST(Float16, BFloat16Exhaustive) { checkExhaustive<bf16>(); }
TEST(Float16, HalfExhaustive) { checkExhaustive<f16>(); }

TEST(Float16, KnownValues) {
  EXPECT_EQ(f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(f16(65504.0f).bits, 0x7bff);     // the largest half
  EXPECT_EQ(f16(65520.0f).bits, 0x7c00);     // rounds to inf
  EXPECT_EQ(f16(5.9604645e-8f).bits, 0x0001); // the smallest subnormal
  EXPECT_EQ(f16(2.9802322e-8f).bits, 0x0000); // half of it: tie to even, zero
  EXPECT_EQ(f16(-0.0f).bits, 0x8000);
  EXPECT_EQ(bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bf16(3.0e38f).bits, 0x7f62);
  EXPECT_EQ(bf16(3.4028235e38f).bits, 0x7f80); // f32's max rounds to inf
  EXPECT_TRUE(std::isinf((float)f16(1e6f)));
}

} // namespace
