//===- Float16.h - bfloat16 and IEEE half as storage types -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// 16-bit floats are storage only: every kernel converts them to f32 in registers,
// computes in f32 and rounds once when it stores (round to nearest, ties to even,
// as PyTorch and the hardware conversions do). The types convert implicitly to and
// from float, so a kernel templated on its element type computes in f32 with them.
// The CUDA kernels use the same types (the layout of __nv_bfloat16 and __half, the
// rounding of __float2bfloat16_rn and __float2half_rn): one definition for both
// backends and the emulator.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_FLOAT16_H
#define ZRT_FLOAT16_H

#include "zrt/RtcStd.h"

#ifdef __CUDACC__
#define ZRT_HOST_DEVICE __host__ __device__
#else
#define ZRT_HOST_DEVICE
#endif

namespace zrt {

ZRT_HOST_DEVICE inline uint32_t floatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
ZRT_HOST_DEVICE inline float bitsFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

/// f32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
ZRT_HOST_DEVICE inline uint16_t bf16FromFloat(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
ZRT_HOST_DEVICE inline float floatFromBf16(uint16_t h) { return bitsFloat((uint32_t)h << 16); }

/// f32 -> IEEE binary16 bits, round to nearest even (overflow gives inf,
/// underflow subnormals and zero, as a hardware conversion does).
ZRT_HOST_DEVICE inline uint16_t f16FromFloat(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (a >= 0x477ff000u) // rounds to >= 65520: inf
    return sign | 0x7c00u;
  if (a < 0x38800000u) { // below the smallest normal half (2^-14): subnormal or 0
    // The value in units of 2^-24, rounded to nearest even, by adding in float.
    float v = bitsFloat(a) + 0.5f; // 0.5 = 2^-1: aligns 2^-24 to the mantissa's last bit
    return sign | (uint16_t)(floatBits(v) - floatBits(0.5f));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits.
  uint32_t r = a + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u);
  return sign | (uint16_t)(r >> 13);
}
ZRT_HOST_DEVICE inline float floatFromF16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) // inf, NaN
    return bitsFloat(sign | 0x7f800000u | (man << 13));
  if (exp == 0) // zero, subnormal: man * 2^-24
    return bitsFloat(sign) + (sign ? -1.0f : 1.0f) * (float)man * 5.9604644775390625e-8f;
  return bitsFloat(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  ZRT_HOST_DEVICE bf16(float f) : bits(bf16FromFloat(f)) {}
  ZRT_HOST_DEVICE operator float() const { return floatFromBf16(bits); }
};

struct f16 {
  uint16_t bits = 0;
  f16() = default;
  ZRT_HOST_DEVICE f16(float f) : bits(f16FromFloat(f)) {}
  ZRT_HOST_DEVICE operator float() const { return floatFromF16(bits); }
};

static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2);

/// Floating point for the kernels: float, double and the 16-bit storage types.
template <typename T>
inline constexpr bool isFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

/// What a kernel computes T in: f32 for the 16-bit types, T itself otherwise.
template <typename T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, bf16> || std::is_same_v<T, f16>, float, T>;

} // namespace zrt

#endif // ZRT_FLOAT16_H
