//===- LossScaler.cpp - DeepSpeed's dynamic loss scaling ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/LossScaler.h"
#include "zrt/Error.h"

#include <algorithm>
#include <cmath>

using namespace zrt;

LossScaler LossScaler::forPlan(const zero::zplan::Plan &plan) {
  if (plan.precision() != "fp16")
    return LossScaler(false, 1.0, 1, 1, 1.0);
  const auto &l = plan.loss_scaling();
  ZRT_CHECK(l.window() >= 1 && l.hysteresis() >= 1 && l.min_scale() > 0 &&
                l.scale() >= 0 && l.initial_scale_power() >= 0 &&
                l.initial_scale_power() <= 120,
            "the plan's loss-scaling settings are invalid (window " << l.window()
                << ", hysteresis " << l.hysteresis() << ", min scale " << l.min_scale()
                << ")");
  if (l.scale() > 0)
    return LossScaler(false, l.scale(), 1, 1, l.min_scale());
  return LossScaler(true, std::ldexp(1.0, l.initial_scale_power()), l.window(),
                    l.hysteresis(), l.min_scale());
}

LossScaler::LossScaler(bool dynamic, double scale, int64_t window, int hysteresis,
                       double minScale)
    : dynamic_(dynamic), scale_(scale), minScale_(minScale), window_(window),
      hysteresis_(hysteresis), counter_(hysteresis) {}

void LossScaler::update(bool overflow) {
  if (!dynamic_)
    return;
  if (overflow) {
    if (hysteresis_ == 1 || counter_ == 1) {
      ZRT_CHECK(scale_ != minScale_,
                "the gradients overflow at the minimum loss scale "
                    << scale_ << " (--min-loss-scale); stopping");
      scale_ = std::max(scale_ / 2, minScale_);
    } else {
      --counter_;
    }
    lastOverflowIter_ = iter_;
  } else if ((iter_ - lastOverflowIter_) % window_ == 0) {
    counter_ = hysteresis_;
    scale_ *= 2;
  }
  ++iter_;
}

void LossScaler::restore(const State &s, const std::string &source) {
  ZRT_CHECK(std::isfinite(s.scale) && s.scale > 0,
            source << ": the loss scale " << s.scale << " is not finite and positive");
  ZRT_CHECK(s.iter >= 0 && s.lastOverflowIter >= -1 && s.lastOverflowIter < s.iter,
            source << ": the loss scaler's iterations (" << s.iter << ", last overflow "
                   << s.lastOverflowIter << ") are out of order");
  if (dynamic_) {
    ZRT_CHECK(s.scale >= minScale_,
              source << ": the loss scale " << s.scale << " is below this plan's minimum "
                     << minScale_);
    ZRT_CHECK(s.counter >= 1 && s.counter <= hysteresis_,
              source << ": the hysteresis counter " << s.counter << " is not 1 to this "
                     << "plan's hysteresis " << hysteresis_);
    scale_ = s.scale;
    counter_ = s.counter;
  }
  iter_ = s.iter;
  lastOverflowIter_ = s.lastOverflowIter;
}
