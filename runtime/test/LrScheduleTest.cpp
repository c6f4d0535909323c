//===- LrScheduleTest.cpp - DeepSpeed's schedules at chosen iterations ----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Expected values worked out by hand from deepspeed/runtime/lr_schedules.py.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/LrSchedule.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace zrt;

namespace {

zero::zplan::LrSchedule schedule(const char *kind, const char *type, int64_t warmup,
                                 int64_t total) {
  zero::zplan::LrSchedule s;
  s.set_kind(kind);
  s.set_warmup_type(type);
  s.set_warmup_steps(warmup);
  s.set_total_steps(total);
  s.set_min_lr(0.0);
  s.set_max_lr(1e-3);
  s.set_base_lr(1e-3);
  return s;
}

TEST(LrSchedule, WarmupLog) {
  auto s = schedule("warmup", "log", 10, 0);
  EXPECT_EQ(scheduledLr(s, 0), 0.0); // ln 1 = 0: the minimum
  EXPECT_NEAR(scheduledLr(s, 4), 1e-3 * std::log(5.0) / std::log(10.0), 1e-18);
  EXPECT_EQ(scheduledLr(s, 10), 1e-3);
  EXPECT_EQ(scheduledLr(s, 1000), 1e-3);
}

TEST(LrSchedule, WarmupLinearFromAMinimum) {
  auto s = schedule("warmup", "linear", 10, 0);
  s.set_min_lr(1e-4);
  EXPECT_NEAR(scheduledLr(s, 5), 1e-4 + 0.9e-3 * 0.5, 1e-18);
}

TEST(LrSchedule, OneWarmupStepCountsAsTwo) {
  auto s = schedule("warmup", "linear", 1, 0); // N = max(2, 1)
  EXPECT_NEAR(scheduledLr(s, 1), 0.5e-3, 1e-18);
}

TEST(LrSchedule, WarmupDecay) {
  auto s = schedule("warmup-decay", "linear", 10, 20);
  EXPECT_NEAR(scheduledLr(s, 15), 0.5e-3, 1e-18); // (20 - 15) / (20 - 10)
  EXPECT_EQ(scheduledLr(s, 25), 0.0);
}

TEST(LrSchedule, WarmupCosine) {
  auto s = schedule("warmup-cosine", "log", 10, 30);
  s.set_cos_min_ratio(0.1);
  EXPECT_NEAR(scheduledLr(s, 9), 1e-3, 1e-18);
  // p = (10 - 10 + 1) / 20
  EXPECT_NEAR(scheduledLr(s, 10), 1e-3 * (0.1 + 0.9 * (1 + std::cos(M_PI * 0.05)) / 2),
              1e-18);
  EXPECT_NEAR(scheduledLr(s, 29), 1e-4, 1e-18);
  EXPECT_NEAR(scheduledLr(s, 100), 1e-4, 1e-18); // p stays at 1
  s.set_warmup_min_ratio(0.5);
  EXPECT_NEAR(scheduledLr(s, 0), 0.5e-3, 1e-18);
}

TEST(LrSchedule, StepsFollowDeepSpeedsEngine) {
  // The engine constructs the scheduler at t = -1 (the minimum; WarmupCosineLR's
  // rate is 0 then) and steps it after each applied optimizer step.
  auto s = schedule("warmup", "linear", 10, 0);
  s.set_min_lr(1e-4);
  EXPECT_EQ(lrAfterAppliedSteps(s, 0), 1e-4);
  EXPECT_EQ(lrAfterAppliedSteps(s, 1), 1e-4); // t = 0: gamma 0
  EXPECT_EQ(lrAfterAppliedSteps(s, 2), scheduledLr(s, 1));
  EXPECT_EQ(scheduledLr(schedule("warmup-decay", "log", 10, 20), -1), 0.0);
  auto c = schedule("warmup-cosine", "linear", 10, 30);
  c.set_warmup_min_ratio(0.5);
  EXPECT_EQ(lrAfterAppliedSteps(c, 0), 0.0);
  EXPECT_EQ(lrAfterAppliedSteps(c, 1), 0.5e-3);
}

TEST(LrSchedule, BadSchedules) {
  EXPECT_THROW(scheduledLr(schedule("onecycle", "log", 10, 0), 0), Error);
  EXPECT_THROW(scheduledLr(schedule("warmup", "cubic", 10, 0), 0), Error);
}

} // namespace
