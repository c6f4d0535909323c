//===- LrSchedule.h - DeepSpeed's learning-rate schedules ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// WarmupLR, WarmupDecayLR and WarmupCosineLR as deepspeed/runtime/lr_schedules.py
// computes them. With N = max(2, warmup steps) and t the schedule's iteration,
// the warm-up fraction is gamma(t) = ln(t + 1) / ln(N) (log) or t / N (linear) while
// t < N. WarmupLR: lr = min + (max - min) * gamma, gamma = 1 after the warm-up;
// WarmupDecayLR: after the warm-up gamma = max(0, (total - t) / max(1, total - N));
// WarmupCosineLR: lr = base * ratio, the ratio warming up from warmup_min_ratio to
// 1 by gamma, then max(0, cos_min + (1 - cos_min) (1 + cos(pi p)) / 2) with
// p = min(1, (t - N + 1) / max(1, total - N)).
//
// DeepSpeed's order: optimizer step k (counting only the steps that were not
// skipped for overflow) uses the schedule at t = k - 1; the first step uses t = 0.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LRSCHEDULE_H
#define ZRT_LRSCHEDULE_H

#include "zplan.pb.h"

namespace zrt {

/// The learning rate of schedule iteration `t` (t >= 0). Throws zrt::Error for an
/// unknown schedule or parameters out of range.
double scheduledLr(const zero::zplan::LrSchedule &s, long long t);

/// Throws zrt::Error naming the problem unless `s` is a schedule zero-run can run.
void checkLrSchedule(const zero::zplan::LrSchedule &s);

} // namespace zrt

#endif // ZRT_LRSCHEDULE_H
