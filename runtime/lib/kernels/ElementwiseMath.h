//===- ElementwiseMath.h - Elementwise arithmetic, both backends -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The one definition of the elementwise ops' arithmetic: the CPU kernels run these
// functions in vectorized loops, the CUDA kernels call them per thread (nvcc
// compiles them as __host__ __device__). 16-bit floats compute in f32.
//
// exp and erf in f32 are polynomials with no branches and no calls, so that a
// loop over them vectorizes (libm's expf and erff are calls the compiler cannot
// vectorize) and both backends round alike: error within 2 ulp of the exact
// value (test/KernelMathTest.cpp checks them against libm over the f32 range).
// Loops over them vectorize only without -ftrapping-math (GCC's default keeps
// the selects below as branches): the CPU kernels build with -fno-trapping-math,
// which changes no result (nothing reads the floating-point exception flags).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_ELEMENTWISEMATH_H
#define ZRT_LIB_KERNELS_ELEMENTWISEMATH_H

#include "zrt/Float16.h"

#include <cmath>
#include <cstdint>

namespace zrt::kernels {

enum class UnaryOp { Neg, Sqrt, Reciprocal, Exp, Log, Relu, Tanh, Sigmoid, Erf };
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
/// exact), e^r by its Taylor polynomial to r^7 (truncation 7e-9), times 2^n built in
/// the exponent bits in two halves (each stays a normal number). Results below
/// f32's smallest normal are 0; above its largest, inf; NaN stays NaN.
ZRT_HOST_DEVICE inline float expF32(float x) {
  const float log2e = 1.44269504088896341f, ln2Hi = 0.693145751953125f,
              ln2Lo = 1.42860682030941723e-6f;
  // Clamped so that NaN becomes a number too (a NaN converted to an integer below
  // would be undefined); the result for NaN is x itself.
  float c = x > -87.3365f ? x : -87.3365f;
  c = c < 88.7228f ? c : 88.7228f;
  // n = floor(y + 1/2) by truncating a positive number: a conversion that
  // vectorizes on any x86-64 (floor needs SSE4.1). y >= -126 here.
  float y = c * log2e;
  int32_t e = (int32_t)(y + 128.5f) - 128;
  float n = (float)e;
  float r = (c - n * ln2Hi) - n * ln2Lo;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t half = e / 2;
  float scaled = p * bitsFloat((uint32_t)(half + 127) << 23) *
                 bitsFloat((uint32_t)(e - half + 127) << 23);
  scaled = x < -87.3365f ? 0.0f : scaled;
  scaled = x > 88.7228f ? INFINITY : scaled;
  return x != x ? x : scaled;
}

/// erf in f32: |x| < 1: x P(x^2); 1 <= |x| < 4: 1 - e^(-x^2) Q(1/|x|); beyond, 1
/// (erf(4) is 1 in f32). P and Q: least-squares fits in relative error, in double,
/// on Chebyshev nodes (utils/fit-erf.py); 1.8e-7 relative error at most.
ZRT_HOST_DEVICE inline float erfF32(float x) {
  float a = std::fabs(x), a2 = a * a;
  float p = 7.8981391647118905e-05f;
  p = p * a2 - 0.00080243353240722071f;
  p = p * a2 + 0.005190051765517012f;
  p = p * a2 - 0.026854807774318118f;
  p = p * a2 + 0.11283612415474192f;
  p = p * a2 - 0.37612628842901052f;
  p = p * a2 + 1.1283791665102916f;
  float small = p * a;
  float t = 1.0f / (a < 1.0f ? 1.0f : a);
  float q = 0.032063788302343368f;
  q = q * t - 0.18718474121599782f;
  q = q * t + 0.45619119229056332f;
  q = q * t - 0.56147565137545974f;
  q = q * t + 0.25930491838408493f;
  q = q * t + 0.21877616816523815f;
  q = q * t - 0.37169698575915228f;
  q = q * t + 0.019604565594861817f;
  q = q * t + 0.56188565668130008f;
  q = q * t + 0.0001146724350756731f;
  float large = 1.0f - expF32(-a2) * q;
  float r = a < 1.0f ? small : (a < 4.0f ? large : 1.0f);
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
template <typename C> ZRT_HOST_DEVICE inline C erfOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return erfF32(x);
  else
    return std::erf(x);
}

/// Op K on one element (C: a compute type). Neg applies to every type; the
/// others to floats.
template <UnaryOp K, typename C> ZRT_HOST_DEVICE inline C unary(C v) {
  if constexpr (K == UnaryOp::Neg)
    return (C)-v;
  else if constexpr (K == UnaryOp::Sqrt)
    return std::sqrt(v);
  else if constexpr (K == UnaryOp::Reciprocal)
    return C(1) / v;
  else if constexpr (K == UnaryOp::Exp)
    return expOf(v);
  else if constexpr (K == UnaryOp::Log)
    return std::log(v);
  else if constexpr (K == UnaryOp::Relu)
    return v > C(0) ? v : C(0);
  else if constexpr (K == UnaryOp::Tanh)
    return std::tanh(v);
  else if constexpr (K == UnaryOp::Sigmoid)
    return C(1) / (C(1) + expOf(-v));
  else
    return erfOf(v);
}

/// The same, with the op chosen at run time (a GPU thread's switch).
template <typename C> ZRT_HOST_DEVICE inline C unary(UnaryOp op, C v) {
  switch (op) {
  case UnaryOp::Neg:
    return unary<UnaryOp::Neg>(v);
  case UnaryOp::Sqrt:
    return unary<UnaryOp::Sqrt>(v);
  case UnaryOp::Reciprocal:
    return unary<UnaryOp::Reciprocal>(v);
  case UnaryOp::Exp:
    return unary<UnaryOp::Exp>(v);
  case UnaryOp::Log:
    return unary<UnaryOp::Log>(v);
  case UnaryOp::Relu:
    return unary<UnaryOp::Relu>(v);
  case UnaryOp::Tanh:
    return unary<UnaryOp::Tanh>(v);
  case UnaryOp::Sigmoid:
    return unary<UnaryOp::Sigmoid>(v);
  default:
    return unary<UnaryOp::Erf>(v);
  }
}

/// Add, Sub, Mul, Div (Equal compares elements of the storage type: the kernels
/// write it as a bool). Integer division by zero is each backend's error to report
/// before it gets here.
template <BinaryOp K, typename C> ZRT_HOST_DEVICE inline C binary(C x, C y) {
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

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_ELEMENTWISEMATH_H
