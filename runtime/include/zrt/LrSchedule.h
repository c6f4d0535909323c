//===- LrSchedule.h - DeepSpeed's learning-rate schedules ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// WarmupLR, WarmupDecayLR and WarmupCosineLR as deepspeed/runtime/lr_schedules.py
// computes them, operation for operation (so that the rates are DeepSpeed's to the
// bit). With N = max(2, warmup steps) and t the scheduler's last_batch_iteration,
// the warm-up fraction is gamma(t) = (1 / ln N) * ln(t + 1) (log) or t / N (linear)
// while t < N. WarmupLR: lr = min + (max - min) * gamma, gamma = 1 after the
// warm-up; WarmupDecayLR: after the warm-up gamma = max(0, (total - t) /
// max(1, total - N)); WarmupCosineLR: lr = base * ratio, the ratio warming up from
// warmup_min_ratio to 1 by gamma, then max(0, cos_min + (1 - cos_min) r) with
// r = (1 + cos(pi p)) / 2, p = min(1, (t - N + 1) / max(1, total - N)).
//
// DeepSpeed's order: the engine constructs the scheduler at t = -1, which sets the
// optimizer's rate to the minimum (WarmupLR, WarmupDecayLR) or to 0
// (WarmupCosineLR), and steps it after each optimizer step that was not skipped
// for overflow. So an optimizer step after k applied ones uses t = k - 1: the
// first two steps use the rate of t = -1 and t = 0.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LRSCHEDULE_H
#define ZRT_LRSCHEDULE_H

#include "zplan.pb.h"

namespace zrt {

/// The learning rate at the scheduler's iteration `t` (-1: as constructed, before
/// any step). Throws zrt::Error for an unknown schedule or parameters out of range.
double scheduledLr(const zero::zplan::LrSchedule &s, long long t);

/// The learning rate of the optimizer step that follows `applied` applied steps:
/// scheduledLr at t = applied - 1, as DeepSpeed's engine drives its schedulers.
inline double lrAfterAppliedSteps(const zero::zplan::LrSchedule &s, long long applied) {
  return scheduledLr(s, applied - 1);
}

/// Throws zrt::Error naming the problem unless `s` is a schedule zero-run can run.
void checkLrSchedule(const zero::zplan::LrSchedule &s);

} // namespace zrt

#endif // ZRT_LRSCHEDULE_H
