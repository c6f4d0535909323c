//===- NormalizationMath.h - Softmax and layer norm per element -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The per-element formulas of softmax, layer norm and their gradients, written
// once for both backends. How the row sums are formed differs (16 lanes in double
// on the CPU, a block reduction in double on a GPU); what each element gets from
// them is defined here, in the tensor's compute type (f32 for f32 and 16-bit
// tensors), as PyTorch's CPU kernels compute it.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_NORMALIZATIONMATH_H
#define ZRT_LIB_KERNELS_NORMALIZATIONMATH_H

#include "ElementwiseMath.h"

namespace zrt::kernels {

/// e^(x - mx) in the tensor's type (16-bit: in f32), as PyTorch computes softmax.
template <typename T> ZRT_HOST_DEVICE inline T shiftedExp(T x, T mx) {
  using C = ComputeType<T>;
  return T(expOf(C(x) - C(mx)));
}

/// Softmax's input after its prologue (compute.softmax's folded scale and bias):
/// x scale, then plus `*bias` when there is one, each rounded to T as the multiply
/// and add kernels would (a scale of 1 leaves x as it is).
template <typename T>
ZRT_HOST_DEVICE inline T softmaxInput(T x, T scale, const T *bias) {
  using C = ComputeType<T>;
  T scaled = T(binary<BinaryOp::Mul>(C(x), C(scale)));
  return bias ? T(binary<BinaryOp::Add>(C(scaled), C(*bias))) : scaled;
}

/// Softmax: e^(x - mx) / sum, with sum the row's sum of shiftedExp in double.
template <typename T> ZRT_HOST_DEVICE inline T softmaxOf(T x, T mx, double sum) {
  return T(shiftedExp(x, mx) * T(1.0 / sum));
}

/// Log-softmax: x - (mx + log(sum)), the shift in the tensor's type.
template <typename T> ZRT_HOST_DEVICE inline T logSoftmaxShift(T mx, double sum) {
  return T(mx + T(std::log(sum)));
}

/// Softmax's input gradient from its output y, the output's gradient g and the
/// row's sum of g y (formed in double): y (g - sum), in T's compute type as
/// PyTorch's softmax backward computes it.
template <typename T> ZRT_HOST_DEVICE inline T softmaxInputGrad(T y, T g, double dot) {
  using C = ComputeType<T>;
  return T(C(y) * (C(g) - C(dot)));
}
/// The same times `scale` (in T), as a multiply kernel after it would compute it:
/// the gradient rounded to T, the product in T's compute type. A scale of 1 leaves
/// the gradient as it is.
template <typename T>
ZRT_HOST_DEVICE inline T scaledSoftmaxInputGrad(T y, T g, double dot, T scale) {
  using C = ComputeType<T>;
  return T(C(softmaxInputGrad(y, g, dot)) * C(scale));
}

/// The layer norm's rstd from the row's mean of squared deviations.
ZRT_HOST_DEVICE inline double inverseStdDev(double variance, double eps) {
  return 1.0 / std::sqrt(variance + eps);
}

/// Layer norm's input gradient, with xhat = (x - mu) r, gx = gy scale and the
/// row means of gx and gx xhat: r (gx - mean(gx) - xhat mean(gx xhat)). C: the
/// tensor's compute type (f32 for f32 and 16-bit tensors, as PyTorch computes it);
/// the row sums are formed per backend and rounded to C.
template <typename C> ZRT_HOST_DEVICE inline C layerNormXhat(C x, C mu, C r) {
  return (x - mu) * r;
}
/// Layer norm: xhat scale + bias, in T's compute type C, from the row's mean and
/// rstd (formed in double) rounded to C.
template <typename T, typename C = ComputeType<T>>
ZRT_HOST_DEVICE inline T normalized(T x, C mu, C r, T scale, T bias) {
  return T(layerNormXhat(C(x), mu, r) * C(scale) + C(bias));
}
template <typename C>
ZRT_HOST_DEVICE inline C layerNormInputGrad(C r, C xhat, C gx, C meanG, C meanGX) {
  return r * (gx - meanG - xhat * meanGX);
}
/// The input gradient `dx` stored in T, plus `acc` (layer_norm_grad's accumulate)
/// when there is one, as the add kernel after it would round them.
template <typename T, typename C>
ZRT_HOST_DEVICE inline T layerNormStored(C dx, const T *acc) {
  return acc ? T(C(T(dx)) + C(*acc)) : T(dx);
}

/// Softmax cross-entropy's gradient per score: coef (e^logp - [k == label]), in
/// the compute type C of the scores, as PyTorch's log-softmax backward computes it.
template <typename C>
ZRT_HOST_DEVICE inline C crossEntropyGrad(C coef, C logp, bool isLabel) {
  return coef * (expOf(logp) - (isLabel ? C(1) : C(0)));
}

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_NORMALIZATIONMATH_H
