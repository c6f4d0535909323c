//===- ElementwiseMath.h - Elementwise arithmetic, both backends -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The one definition of the elementwise ops' arithmetic: the CPU kernels run these
// functions in vectorized loops, the CUDA kernels call them per thread (nvcc
// compiles them as __host__ __device__). 16-bit floats compute in f32.
//
// exp and erf in f32 are a polynomial and a rational function with no branches
// and no calls, so that a loop over them vectorizes (libm's expf and erff are calls
// the compiler cannot vectorize) and both backends round alike: relative error
// within 2.4e-7 (exp: 2 x 2^-23) and 4.8e-7 (erf) of the exact value
// (test/KernelMathTest.cpp checks them against libm over the f32 range).
// Loops over them vectorize only without -ftrapping-math (GCC's default keeps
// the selects below as branches): the CPU kernels build with -fno-trapping-math,
// which changes no result (nothing reads the floating-point exception flags).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_ELEMENTWISEMATH_H
#define ZRT_LIB_KERNELS_ELEMENTWISEMATH_H

#include "zrt/Float16.h"
#include "zrt/RtcStd.h"

namespace zrt::kernels {

/// The unary ops, in the order of their records (zplan/UnaryOps.def).
enum class UnaryOp {
#define ZERO_UNARY_OP(ID, ...) ID,
#include "zplan/UnaryOps.def"
};
enum class BinaryOp { Add, Sub, Mul, Div, Equal };

/// The type an element's arithmetic happens in: 16-bit floats widen to f32.
template <typename T> struct ComputeTypeOf {
  using type = T;
};
template <> struct ComputeTypeOf<bf16> {
  using type = float;
};
template <> struct ComputeTypeOf<f16> {
  using type = float;
};
template <typename T> using ComputeType = typename ComputeTypeOf<T>::type;

/// e^x in f32: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so that n ln2 is
/// exact), e^r by a degree-6 polynomial (a fit in relative error, 1.9e-9 before
/// rounding), times 2^n built in the exponent bits in two halves (each stays a
/// normal number). Results below f32's smallest normal are 0; above its largest,
/// inf; NaN stays NaN. The polynomial is evaluated in Estrin's form (powers of r
/// and pairs of terms, which do not wait for each other) rather than Horner's
/// chain: a vectorized loop over it waits on latency, not on arithmetic.
ZRT_HOST_DEVICE inline float expF32(float x) {
  const float log2e = 1.44269504088896341f, ln2Hi = 0.693145751953125f,
              ln2Lo = 1.42860682030941723e-6f;
  // Clamped so that NaN becomes a number too (a NaN converted to an integer below
  // would be undefined); the result for NaN is x itself.
  float c = x > -87.3365f ? x : -87.3365f;
  c = c < 88.7228f ? c : 88.7228f;
  // n = the integer nearest y: adding 1.5 * 2^23 leaves it in the low mantissa bits
  // (|y| < 2^22), no conversion or floor needed.
  const float shifter = 12582912.0f;
  float t = c * log2e + shifter;
  float n = t - shifter;
  int32_t e = (int32_t)(floatBits(t) - floatBits(shifter));
  float r = (c - n * ln2Hi) - n * ln2Lo;
  float r2 = r * r, r4 = r2 * r2;
  float p01 = 1.0f + 1.0000000363231936f * r, p23 = 0.4999999207979507f + 0.16666420169867774f * r;
  float p456 = (0.04166822557428504f + 0.008374815803154958f * r) + 0.0013836845727700766f * r2;
  float p = (p01 + p23 * r2) + p456 * r4;
  int32_t half = e >> 1; // floor(e / 2)
  float scaled = p * bitsFloat((uint32_t)(half + 127) << 23) *
                 bitsFloat((uint32_t)(e - half + 127) << 23);
  scaled = x < -87.3365f ? 0.0f : scaled;
  scaled = x > 88.7228f ? INFINITY : scaled;
  return x != x ? x : scaled;
}

/// erf in f32: one rational function, x P(x^2) / Q(x^2) for |x| < 3.9375, and 1
/// beyond (erf(3.9375) is 1 in f32). One formula, not pieces: a vectorized loop
/// computes every piece for every element, so a piecewise erf (a polynomial near 0,
/// e^(-x^2) times another beyond) cost four times as much. P and Q: a fit in
/// relative error (utils/fit-erf.py); 3.8e-7 relative error at most, from rounding
/// P and Q in f32 (the fit itself is within 6e-8).
ZRT_HOST_DEVICE inline float erfF32(float x) {
  const float hi = 3.9375f;
  float a = std::fabs(x);
  float c = a < hi ? a : hi; // NaN becomes hi here; the result for NaN is x
  // P and Q in Estrin's form (see expF32).
  float u = c * c, u2 = u * u, u4 = u2 * u2;
  float p01 = 1.1283791062638944f + 0.2014628347727232f * u;
  float p23 = 0.05077560334268081f + 0.0037629903754765126f * u;
  float p45 = 0.00014297408842652275f - 1.9535866420013204e-06f * u;
  float p = (p01 + u2 * p23) + u4 * (p45 + u2 * 1.9735000245102441e-08f);
  float q01 = 1.0f + 0.51187336371567638f * u;
  float q23 = 0.11563248281341679f + 0.01448184893729346f * u;
  float q = (q01 + u2 * q23) + u4 * 0.00096977003734976554f;
  float r = c * p / q;
  r = a < hi ? r : 1.0f;
  r = x < 0 ? -r : r;
  return x != x ? x : r;
}

/// e^x: the polynomial in f32, libm in f64.
template <typename C> ZRT_HOST_DEVICE inline C expOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return expF32(x);
  else
    return std::exp(x);
}
/// tanh in f32 as 1 - 2 / (e^(2x) + 1), from expF32: a vectorizable form (libm's
/// tanh is a call per element) whose absolute error, about 1e-7, is what GELU's
/// 1 + tanh and 1 - tanh^2 see; +-1 beyond f32's e^x range, NaN for NaN.
ZRT_HOST_DEVICE inline float tanhF32(float x) {
  return 1.0f - 2.0f / (expF32(2.0f * x) + 1.0f);
}
/// tanh for GELU's tanh form: tanhF32 in f32, libm in f64.
template <typename C> ZRT_HOST_DEVICE inline C geluTanhOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return tanhF32(x);
  else
    return std::tanh(x);
}
template <typename C> ZRT_HOST_DEVICE inline C erfOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return erfF32(x);
  else
    return std::erf(x);
}

/// GELU in its exact form, x Phi(x) = x/2 (1 + erf(x / sqrt 2)), as PyTorch's CPU
/// kernel computes it: x 1/2 (1 + erf(x 1/sqrt 2)) (C: a compute type).
template <typename C> ZRT_HOST_DEVICE inline C gelu(C x) {
  const C half = C(0.5), invSqrt2 = C(0.70710678118654752440);
  return x * half * (C(1) + erfOf(x * invSqrt2));
}

/// GELU's tanh approximation as PyTorch computes it (approximate="tanh"):
/// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (C: a compute type).
template <typename C> ZRT_HOST_DEVICE inline C geluTanh(C x) {
  const C half = C(0.5), beta = C(0.79788456080286535588), kappa = C(0.044715);
  C t = geluTanhOf(beta * (x + kappa * x * x * x));
  return half * x * (C(1) + t);
}

/// Op K on one element (C: a compute type): its record's arithmetic
/// (zplan/UnaryOps.def). Neg applies to every type; the others to floats.
template <UnaryOp K, typename C> ZRT_HOST_DEVICE inline C unary(C v) {
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, COST, FUSION, ONNX, OPSETS, ARITHMETIC)      \
  if constexpr (K == UnaryOp::ID)                                                        \
    return ARITHMETIC;                                                                   \
  else
#include "zplan/UnaryOps.def"
    static_assert(K != K, "a unary op without a record");
}

/// The same, with the op chosen at run time (a GPU thread's switch).
template <typename C> ZRT_HOST_DEVICE inline C unary(UnaryOp op, C v) {
  switch (op) {
#define ZERO_UNARY_OP(ID, ...)                                                            \
  case UnaryOp::ID:                                                                     \
    return unary<UnaryOp::ID>(v);
#include "zplan/UnaryOps.def"
  }
  return v; // not reached: every UnaryOp has its case
}

/// Add, Sub, Mul, Div (Equal compares elements of the storage type: the kernels
/// write it as a bool). Integer division by zero is each backend's error to report
/// before it gets here.
/// On a GPU the f32 ones are rounding intrinsics, which the compiler never contracts
/// with a neighbour into a fused multiply-add: in a generated fused kernel a Mul
/// instruction and the Add that reads it stay two roundings, as in the interpreter
/// and in the unfused kernels.
template <BinaryOp K, typename C> ZRT_HOST_DEVICE inline C binary(C x, C y) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<C, float>) {
    if constexpr (K == BinaryOp::Add)
      return __fadd_rn(x, y);
    else if constexpr (K == BinaryOp::Sub)
      return __fsub_rn(x, y);
    else if constexpr (K == BinaryOp::Mul)
      return __fmul_rn(x, y);
    else
      return __fdiv_rn(x, y);
  }
#endif
  if constexpr (K == BinaryOp::Add)
    return x + y;
  else if constexpr (K == BinaryOp::Sub)
    return x - y;
  else if constexpr (K == BinaryOp::Mul)
    return x * y;
  else
    return x / y;
}
template <typename C> ZRT_HOST_DEVICE inline C binary(BinaryOp op, C x, C y) {
  switch (op) {
  case BinaryOp::Add:
    return binary<BinaryOp::Add>(x, y);
  case BinaryOp::Sub:
    return binary<BinaryOp::Sub>(x, y);
  case BinaryOp::Mul:
    return binary<BinaryOp::Mul>(x, y);
  default:
    return binary<BinaryOp::Div>(x, y);
  }
}

/// x^y as both backends compute Pow (in f64, whatever the operand types).
template <typename T, typename U> ZRT_HOST_DEVICE inline T power(T x, U y) {
  return (T)std::pow((double)x, (double)y);
}

/// relu's gradient: `grad` where the forward input is positive, else 0.
template <typename T> ZRT_HOST_DEVICE inline T reluGrad(T input, T grad) {
  return input > T(0) ? grad : T(0);
}

/// GELU's gradient, grad (Phi(x) + x phi(x)) with phi the standard normal density,
/// as PyTorch's gelu_backward computes it: Phi(x) = 1/2 (1 + erf(x 1/sqrt 2)),
/// phi(x) = 1/sqrt(2 pi) e^(x x -1/2); in T's compute type, rounded once.
template <typename T> ZRT_HOST_DEVICE inline T geluGrad(T input, T grad) {
  using C = ComputeType<T>;
  const C half = C(0.5), invSqrt2 = C(0.70710678118654752440),
          invSqrt2Pi = C(0.39894228040143267794);
  C x = C(input);
  C cdf = half * (C(1) + erfOf(x * invSqrt2));
  C pdf = invSqrt2Pi * expOf(x * x * C(-0.5));
  return T(C(grad) * (cdf + x * pdf));
}

/// gelu_tanh's gradient as PyTorch's gelu_backward (approximate="tanh") computes
/// it: with t = tanh(sqrt(2/pi) (x + 0.044715 x^3)), grad (1/2 (1 + t) +
/// x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2)); in T's compute type, rounded once.
template <typename T> ZRT_HOST_DEVICE inline T geluTanhGrad(T input, T grad) {
  using C = ComputeType<T>;
  const C half = C(0.5), beta = C(0.79788456080286535588), kappa = C(0.044715);
  C x = C(input), x2 = x * x;
  C t = geluTanhOf(beta * (x + kappa * x2 * x));
  C dInner = beta * (C(1) + C(3) * kappa * x2);
  C d = half * (C(1) + t) + half * x * (C(1) - t * t) * dInner;
  return T(C(grad) * d);
}

/// The gradients of the activations with a kernel of their own, from the forward
/// input and the output's gradient.
enum class ActivationGrad { Relu, Gelu, GeluTanh };
template <ActivationGrad K, typename T>
ZRT_HOST_DEVICE inline T activationGrad(T input, T grad) {
  if constexpr (K == ActivationGrad::Relu)
    return reluGrad(input, grad);
  else if constexpr (K == ActivationGrad::Gelu)
    return geluGrad(input, grad);
  else
    return geluTanhGrad(input, grad);
}
template <typename T>
ZRT_HOST_DEVICE inline T activationGrad(ActivationGrad op, T input, T grad) {
  return op == ActivationGrad::Relu   ? reluGrad(input, grad)
         : op == ActivationGrad::Gelu ? geluGrad(input, grad)
                                      : geluTanhGrad(input, grad);
}

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_ELEMENTWISEMATH_H
