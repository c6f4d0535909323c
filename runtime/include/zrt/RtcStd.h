//===- RtcStd.h - What the kernel headers take from the C++ library -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The headers of the kernels' arithmetic (Float16.h, lib/kernels/*Math.h) are
// compiled three ways: by the host compiler, by nvcc, and by NVRTC at plan load
// (the generated fused kernels, lib/cuda/FusedKernelSource.h). NVRTC has no C++
// library: for it this header declares the few names they use, from CUDA's
// built-in math functions; everywhere else it includes the library's headers.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RTCSTD_H
#define ZRT_RTCSTD_H

#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

namespace std {
using ::erf;
using ::exp;
using ::fabs;
using ::log;
using ::pow;
using ::sqrt;
using ::tanh;
template <class A, class B> inline constexpr bool is_same_v = false;
template <class A> inline constexpr bool is_same_v<A, A> = true;
template <class T> inline constexpr bool is_floating_point_v = false;
template <> inline constexpr bool is_floating_point_v<float> = true;
template <> inline constexpr bool is_floating_point_v<double> = true;
template <bool C, class A, class B> struct conditional {
  using type = A;
};
template <class A, class B> struct conditional<false, A, B> {
  using type = B;
};
template <bool C, class A, class B> using conditional_t = typename conditional<C, A, B>::type;
} // namespace std
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#endif

#endif // ZRT_RTCSTD_H
