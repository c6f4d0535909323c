//===- LossScalerTest.cpp - DeepSpeed's DynamicLossScaler rule ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The expected sequences are written out by hand from DeepSpeed's update_scale
// (deepspeed/runtime/fp16/loss_scaler.py).
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/LossScaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace zrt;

namespace {

/// The scale used by each step, given which steps overflow.
std::vector<double> scales(LossScaler s, const std::vector<bool> &overflow) {
  std::vector<double> used;
  for (bool o : overflow) {
    used.push_back(s.scale());
    s.update(o);
  }
  return used;
}

double p2(int k) { return std::ldexp(1.0, k); }

TEST(LossScaler, HysteresisDelaysTheFirstHalving) {
  // Hysteresis 2: the first overflow only uses up the counter; every later one
  // halves (the counter is not refilled by overflows).
  LossScaler s(true, p2(40), 1000, 2, 1.0);
  EXPECT_EQ(scales(s, {true, true, true, true, false}),
            (std::vector<double>{p2(40), p2(40), p2(39), p2(38), p2(37)}));
}

TEST(LossScaler, DoublesAfterEachWindowOfGoodSteps) {
  // Window 3 from the start (last overflow "at -1"): steps 0..2 good, so after
  // step 2 the scale doubles; again after step 5.
  LossScaler s(true, p2(4), 3, 2, 1.0);
  EXPECT_EQ(scales(s, {false, false, false, false, false, false, false}),
            (std::vector<double>{p2(4), p2(4), p2(4), p2(5), p2(5), p2(5), p2(6)}));
}

TEST(LossScaler, WindowCountsFromTheLastOverflow) {
  // Hysteresis 1: an overflow halves at once. Overflow at step 1; then steps 2..4
  // are good: (4 - 1) % 3 == 0 doubles after step 4.
  LossScaler s(true, p2(8), 3, 1, 1.0);
  EXPECT_EQ(scales(s, {false, true, false, false, false, false}),
            (std::vector<double>{p2(8), p2(8), p2(7), p2(7), p2(7), p2(8)}));
}

TEST(LossScaler, DoublingRefillsTheCounter) {
  // Hysteresis 2, window 2: overflow (counter 2 -> 1), two good steps double and
  // refill, so the next overflow again only uses up the counter.
  LossScaler s(true, p2(10), 2, 2, 1.0);
  EXPECT_EQ(scales(s, {true, false, false, true, true}),
            (std::vector<double>{p2(10), p2(10), p2(10), p2(11), p2(11)}));
}

TEST(LossScaler, NeverBelowTheMinimumAndStopsThere) {
  LossScaler s(true, 4.0, 1000, 1, 2.0);
  s.update(true); // 4 -> 2, the minimum
  EXPECT_EQ(s.scale(), 2.0);
  EXPECT_THROW(s.update(true), Error);
}

TEST(LossScaler, FixedScaleNeverChanges) {
  LossScaler s(false, 128.0, 1, 1, 1.0);
  EXPECT_EQ(scales(s, {true, true, false, false}),
            (std::vector<double>{128, 128, 128, 128}));
}

TEST(LossScaler, FromPlan) {
  zero::zplan::Plan plan;
  EXPECT_EQ(LossScaler::forPlan(plan).scale(), 1.0);
  EXPECT_FALSE(LossScaler::forPlan(plan).dynamic());
  plan.set_precision("fp16");
  auto *l = plan.mutable_loss_scaling();
  l->set_initial_scale_power(16);
  l->set_window(1000);
  l->set_hysteresis(2);
  l->set_min_scale(1);
  EXPECT_EQ(LossScaler::forPlan(plan).scale(), p2(16));
  EXPECT_TRUE(LossScaler::forPlan(plan).dynamic());
  l->set_scale(512);
  EXPECT_EQ(LossScaler::forPlan(plan).scale(), 512.0);
  EXPECT_FALSE(LossScaler::forPlan(plan).dynamic());
  l->set_window(0);
  EXPECT_THROW(LossScaler::forPlan(plan), Error);
}

} // namespace
