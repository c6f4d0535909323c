//===- LrSchedule.cpp - DeepSpeed's learning-rate schedules ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/LrSchedule.h"
#include "zrt/Error.h"

#include <algorithm>
#include <cmath>

using namespace zrt;

void zrt::checkLrSchedule(const zero::zplan::LrSchedule &s) {
  const std::string &k = s.kind();
  ZRT_CHECK(k == "warmup" || k == "warmup-decay" || k == "warmup-cosine",
            "the plan's learning-rate schedule '" << k << "' is not warmup, warmup-decay "
                                                  << "or warmup-cosine");
  ZRT_CHECK(s.warmup_type() == "log" || s.warmup_type() == "linear",
            "the plan's warm-up type '" << s.warmup_type() << "' is not log or linear");
  ZRT_CHECK(s.warmup_steps() >= 0 && s.total_steps() >= 0,
            "the plan's schedule has negative step counts");
}

namespace {

/// The warm-up fraction gamma(t), 0 <= t < N, as DeepSpeed writes it (the log
/// form multiplies by a precomputed 1 / ln N).
double warmupGamma(const zero::zplan::LrSchedule &s, long long t, double n) {
  if (s.warmup_type() == "log") {
    double inverseLogWarmUp = 1.0 / std::log(n);
    return inverseLogWarmUp * std::log((double)t + 1);
  }
  return (double)t / n;
}

} // namespace

double zrt::scheduledLr(const zero::zplan::LrSchedule &s, long long t) {
  checkLrSchedule(s);
  double n = std::max<double>(2, (double)s.warmup_steps());
  double total = (double)s.total_steps();
  if (s.kind() == "warmup-cosine") {
    if (t < 0) // "before it has started": every group's rate is 0
      return 0.0;
    double ratio;
    if (t < n) {
      ratio = warmupGamma(s, t, n);
      ratio = s.warmup_min_ratio() + ratio * (1.0 - s.warmup_min_ratio());
    } else {
      double realLastStep = (double)t - n + 1;
      double realTotalSteps = std::max(1.0, total - n);
      double progress = std::min(1.0, realLastStep / realTotalSteps);
      ratio = (1 + std::cos(M_PI * progress)) / 2;
      ratio = std::max(0.0, s.cos_min_ratio() + (1.0 - s.cos_min_ratio()) * ratio);
    }
    return s.base_lr() * ratio;
  }
  if (t < 0) // the minimum, set when the scheduler is constructed
    return s.min_lr();
  double gamma;
  if (t < n)
    gamma = warmupGamma(s, t, n);
  else if (s.kind() == "warmup")
    gamma = 1.0;
  else
    gamma = std::max(0.0, (total - (double)t) / std::max(1.0, total - n));
  return s.min_lr() + (s.max_lr() - s.min_lr()) * gamma;
}
