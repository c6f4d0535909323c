//===- LossScaler.h - DeepSpeed's dynamic loss scaling ---------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Mixed-precision training multiplies the loss by a scale before backward, so that
// small 16-bit gradients do not flush to zero, and divides the gradients by it
// before the optimizer. A step whose gradients hold inf or NaN is skipped. The
// scale follows DeepSpeed's DynamicLossScaler (fp16): on overflow, with the
// hysteresis counter at 1 (or hysteresis 1) the scale halves, never below the
// minimum (an overflow at the minimum stops training), else the counter drops by
// one; without overflow, when the steps since the last overflow are a multiple of
// the window, the scale doubles and the counter is refilled. A fixed scale (and
// bf16's scale of 1) never changes; overflowing steps are still skipped.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LOSSSCALER_H
#define ZRT_LOSSSCALER_H

#include "zplan.pb.h"

#include <cstdint>
#include <string>

namespace zrt {

class LossScaler {
public:
  /// From the plan: fp16 per its loss_scaling settings, bf16 a fixed 1.
  static LossScaler forPlan(const zero::zplan::Plan &plan);
  /// A fixed scale (`dynamic` false) or DeepSpeed's dynamic one.
  LossScaler(bool dynamic, double scale, int64_t window, int hysteresis, double minScale);

  /// The scale the next step uses.
  double scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  /// After a step: whether its gradients overflowed. Throws zrt::Error when an
  /// overflow happens at the minimum scale.
  void update(bool overflow);

  /// What a checkpoint keeps, and restores.
  struct State {
    double scale;
    int counter;
    int64_t iter, lastOverflowIter;
  };
  State state() const { return {scale_, counter_, iter_, lastOverflowIter_}; }
  /// Restores `s` (from `source`, named in messages), checked against this
  /// scaler's settings: a dynamic scale finite and at least the minimum, the
  /// hysteresis counter 1 to the plan's hysteresis, iterations in order. A fixed
  /// scale stays the plan's. Throws zrt::Error.
  void restore(const State &s, const std::string &source);

private:
  bool dynamic_;
  double scale_, minScale_;
  int64_t window_;
  int hysteresis_, counter_;
  int64_t iter_ = 0, lastOverflowIter_ = -1;
};

} // namespace zrt

#endif // ZRT_LOSSSCALER_H
