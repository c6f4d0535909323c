//===- VectorLoops.h - Vectorized, threaded loops of the CPU kernels -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CPU kernels' inner loops are functions marked ZRT_VECTORIZED: the compiler
// builds each for plain x86-64, for AVX2 + FMA (x86-64-v3) and for AVX-512
// (x86-64-v4), and the loader picks the best one the CPU has, so one build runs on
// any x86-64. The loops are over runs of contiguous (or broadcast) elements, which
// the compiler auto-vectorizes; forEachRun splits a tensor into such runs and the
// runs over the kernel threads (zrt/ParallelFor.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CPU_VECTORLOOPS_H
#define ZRT_LIB_CPU_VECTORLOOPS_H

#include "KernelUtil.h"

#include "zrt/ParallelFor.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZRT_VECTORIZED                                                                 \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define ZRT_VECTORIZED
#endif

namespace zrt::cpu {

/// Elements below which a kernel stays on one thread: waking the pool costs a
/// few microseconds.
constexpr int64_t kParallelGrain = 1 << 15;

/// `out` with the strides of N tensors read through it, adjacent dimensions merged
/// wherever every tensor walks them as one (a same-shape operand becomes one run,
/// a bias over [batch, sequence, features] a run per row).
template <size_t N> struct Walk {
  Shape shape;
  std::array<Shape, N> strides;
};
template <size_t N> Walk<N> coalesce(const Shape &out, const std::array<Shape, N> &strides) {
  Walk<N> w;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1)
      continue; // any stride: never stepped
    bool merge = !w.shape.empty();
    for (size_t k = 0; k < N && merge; ++k)
      merge = w.strides[k].back() == strides[k][d] * out[d];
    if (merge) {
      w.shape.back() *= out[d];
      for (size_t k = 0; k < N; ++k)
        w.strides[k].back() = strides[k][d];
      continue;
    }
    w.shape.push_back(out[d]);
    for (size_t k = 0; k < N; ++k)
      w.strides[k].push_back(strides[k][d]);
  }
  return w;
}

/// Calls run(outIndex, offsets, innerStrides, count) for runs of consecutive
/// output elements (within one innermost row: input k's element j of the run is at
/// offsets[k] + j * innerStrides[k]), covering `out` once, in parallel.
template <size_t N, typename Run>
void forEachRun(const Shape &out, const std::array<Shape, N> &strides, Run &&run,
                int64_t grain = kParallelGrain) {
  Walk<N> w = coalesce(out, strides);
  if (w.shape.empty()) { // a single element
    w.shape.push_back(1);
    for (size_t k = 0; k < N; ++k)
      w.strides[k].push_back(0);
  }
  int64_t total = 1;
  for (int64_t d : w.shape)
    total *= d;
  size_t rank = w.shape.size();
  int64_t inner = w.shape.back();
  std::array<int64_t, N> innerStride;
  for (size_t k = 0; k < N; ++k)
    innerStride[k] = w.strides[k][rank - 1];
  parallelFor(total, grain, [&](int64_t lo, int64_t hi) {
    // The coordinates and input offsets of element lo.
    Shape idx(rank);
    std::array<int64_t, N> base{};
    for (int64_t d = (int64_t)rank - 1, rest = lo; d >= 0; --d) {
      idx[d] = rest % w.shape[d];
      rest /= w.shape[d];
      if (d < (int64_t)rank - 1)
        for (size_t k = 0; k < N; ++k)
          base[k] += idx[d] * w.strides[k][d];
    }
    int64_t pos = lo;
    while (pos < hi) {
      int64_t at = idx[rank - 1], count = std::min(inner - at, hi - pos);
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k)
        off[k] = base[k] + at * innerStride[k];
      run(pos, off, innerStride, count);
      pos += count;
      idx[rank - 1] = 0;
      for (int64_t d = (int64_t)rank - 2; d >= 0; --d) {
        ++idx[d];
        for (size_t k = 0; k < N; ++k)
          base[k] += w.strides[k][d];
        if (idx[d] < w.shape[d])
          break;
        for (size_t k = 0; k < N; ++k)
          base[k] -= w.strides[k][d] * idx[d];
        idx[d] = 0;
      }
    }
  });
}

/// Reductions keep kLanes partial results, combined at the end: the loop over
/// lanes vectorizes without reassociating anything (a float sum's order is fixed
/// by the code, not by the compiler's flags).
constexpr int kLanes = 16;

/// The largest of x[0..n) (n >= 1); NaN elements are skipped, as std::max does.
/// The kLanes lanes are explicit vectors (16-bit floats compare as f32): written
/// as an array of scalars, GCC kept them in scalar registers (a vmaxss per element).
template <typename T> ZRT_VECTORIZED T maxRun(const T *x, int64_t n) {
  using C = std::conditional_t<sizeof(T) == 2, float, T>;
  constexpr int kWidth = 32 / sizeof(C), kVectors = kLanes / kWidth;
  typedef C Lanes __attribute__((vector_size(32)));
  Lanes lane[kVectors];
  for (int v = 0; v < kVectors; ++v)
    for (int l = 0; l < kWidth; ++l)
      lane[v][l] = C(x[0]);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int v = 0; v < kVectors; ++v) {
      Lanes xv;
      for (int l = 0; l < kWidth; ++l)
        xv[l] = C(x[i + v * kWidth + l]);
      lane[v] = lane[v] < xv ? xv : lane[v];
    }
  C m = lane[0][0];
  for (int l = 1; l < kLanes; ++l)
    m = m < lane[l / kWidth][l % kWidth] ? lane[l / kWidth][l % kWidth] : m;
  for (; i < n; ++i)
    m = m < C(x[i]) ? C(x[i]) : m;
  return T(m);
}

/// The sum of x[0..n) in double.
template <typename T> ZRT_VECTORIZED double sumRun(const T *x, int64_t n) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += (double)x[i + l];
  double s = 0;
  for (int l = 0; l < kLanes; ++l)
    s += lane[l];
  for (; i < n; ++i)
    s += (double)x[i];
  return s;
}

/// The sum of x[0..n) in x's own type (f32 or f64), over kLanes explicit vector
/// lanes: the order is fixed by the code, and the loop vectorizes.
template <typename C> ZRT_VECTORIZED C sumRunInPlace(const C *x, int64_t n) {
  constexpr int kWidth = 32 / sizeof(C), kVectors = kLanes / kWidth;
  typedef C Lanes __attribute__((vector_size(32)));
  Lanes lane[kVectors] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int v = 0; v < kVectors; ++v) {
      Lanes xv;
      for (int l = 0; l < kWidth; ++l)
        xv[l] = x[i + v * kWidth + l];
      lane[v] += xv;
    }
  C s = 0;
  for (int l = 0; l < kLanes; ++l)
    s += lane[l / kWidth][l % kWidth];
  for (; i < n; ++i)
    s += x[i];
  return s;
}

/// acc[j] += x[j] for j < n, in double (a reduction over leading dimensions).
template <typename T> ZRT_VECTORIZED void accumulateRun(const T *x, double *acc, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    acc[j] += (double)x[j];
}

/// finish(j, sum) for each column j < n of the rows x n matrix at `in` (row
/// stride ld): its elements summed in double, row after row (each thread takes
/// columns of its own). reduce_sum over leading axes, and a matmul's lhs_sums.
template <typename T, typename F>
void columnSumsInDouble(const T *in, int64_t rows, int64_t ld, int64_t n, F &&finish) {
  int64_t grain = std::max<int64_t>(64, kParallelGrain / std::max<int64_t>(1, rows));
  parallelFor(n, grain, [&](int64_t lo, int64_t hi) {
    std::vector<double> acc(hi - lo, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      accumulateRun(in + r * ld + lo, acc.data(), hi - lo);
    for (int64_t j = lo; j < hi; ++j)
      finish(j, acc[j - lo]);
  });
}

} // namespace zrt::cpu

#endif // ZRT_LIB_CPU_VECTORLOOPS_H
