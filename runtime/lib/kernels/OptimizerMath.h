//===- OptimizerMath.h - AdamW and SGD per element, both backends -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// torch.optim.AdamW's and torch.optim.SGD's arithmetic, written once: the CPU
// kernels run it in vectorized loops, the CUDA kernels per thread. Per-step
// scalars in double, as Python computes them in torch.optim; elements in the
// parameter's type T (f32 or f64).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_OPTIMIZERMATH_H
#define ZRT_LIB_KERNELS_OPTIMIZERMATH_H

#include "zrt/Float16.h"

#include <cmath>
#include <cstdint>

namespace zrt::kernels {

template <typename T> struct AdamWStep {
  T decay, stepSize, bc2Sqrt, beta1, beta2, oneMinusBeta1, oneMinusBeta2, eps;
};

/// The scalars of step t (1-based) at learning rate lr.
template <typename T>
ZRT_HOST_DEVICE inline AdamWStep<T> adamwStep(double lr, double b1, double b2, double eps,
                                              double weightDecay, int64_t t) {
  double bc1 = 1.0 - std::pow(b1, (double)t), bc2 = 1.0 - std::pow(b2, (double)t);
  return {T(1.0 - lr * weightDecay), T(-(lr / bc1)), T(std::sqrt(bc2)), T(b1), T(b2),
          T(1.0 - b1), T(1.0 - b2), T(eps)};
}

/// One element: p, m, v updated from the gradient g (already scaled).
template <typename T>
ZRT_HOST_DEVICE inline void adamwElement(const AdamWStep<T> &s, T g, T &p, T &m, T &v) {
  T param = p * s.decay;
  m = m * s.beta1 + g * s.oneMinusBeta1;
  v = v * s.beta2 + s.oneMinusBeta2 * g * g;
  // The square root in T (a double overload would round later than PyTorch does).
  T denom = T(std::sqrt(v)) / s.bc2Sqrt + s.eps;
  p = param + s.stepSize * (m / denom);
}

template <typename T> struct SgdStep {
  T negativeLr, momentum, weightDecay;
  bool hasMomentum, hasWeightDecay;
};
template <typename T>
ZRT_HOST_DEVICE inline SgdStep<T> sgdStep(double lr, double momentum, double weightDecay) {
  return {T(-lr), T(momentum), T(weightDecay), momentum != 0.0, weightDecay != 0.0};
}

/// One element: p and the momentum buffer b. The buffer starts at zero, so the
/// first step gives the gradient itself, as PyTorch's clone does.
template <typename T>
ZRT_HOST_DEVICE inline void sgdElement(const SgdStep<T> &s, T g, T &p, T &b) {
  T d = s.hasWeightDecay ? g + p * s.weightDecay : g;
  b = s.hasMomentum ? b * s.momentum + d : d;
  p = p + b * s.negativeLr;
}

/// torch.nn.utils.clip_grad_norm_ folded into the optimizer's gradient scale: the
/// gradients' norm (from their sum of squares, times the scale already on them)
/// and the new scale, scale * min(1, maxNorm / (norm + 1e-6)).
struct ClippedScale {
  float scale, norm;
};
ZRT_HOST_DEVICE inline ClippedScale clippedScale(float sumSquares, float scale,
                                                 double maxNorm) {
  double s = scale, norm = std::sqrt((double)sumSquares) * s;
  double coef = maxNorm / (norm + 1e-6);
  coef = coef < 1.0 ? coef : 1.0;
  return {(float)(s * coef), (float)norm};
}

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_OPTIMIZERMATH_H
