//===- RankOrderSum.cpp - Sums over ranks, in rank order ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "RankOrderSum.h"

#include "zrt/Error.h"
#include "zrt/Float16.h"

#include <cstring>

using namespace zrt;

namespace {

template <typename T> void addTo(void *acc, const void *x, int64_t count) {
  T *a = static_cast<T *>(acc);
  const T *b = static_cast<const T *>(x);
  for (int64_t i = 0; i < count; ++i)
    a[i] += b[i];
}

/// acc += x, elementwise.
void addTo(void *acc, const void *x, int64_t count, DType t) {
  switch (t) {
  case zero::zplan::F32:
    return addTo<float>(acc, x, count);
  case zero::zplan::F64:
    return addTo<double>(acc, x, count);
  case zero::zplan::I64:
    return addTo<int64_t>(acc, x, count);
  case zero::zplan::I32:
    return addTo<int32_t>(acc, x, count);
  default:
    ZRT_FAIL("summing " << dtypeName(t) << " across ranks is not supported");
  }
}

/// 16-bit floats add in f32 and round once at the end.
template <typename H>
void sum16(const std::vector<const void *> &from, size_t offset, int64_t count,
           std::vector<char> &sum) {
  std::vector<float> acc(count, 0.0f);
  for (const void *p : from) {
    const H *x = reinterpret_cast<const H *>(static_cast<const char *>(p) + offset);
    for (int64_t i = 0; i < count; ++i)
      acc[i] += (float)x[i];
  }
  H *out = reinterpret_cast<H *>(sum.data());
  for (int64_t i = 0; i < count; ++i)
    out[i] = H(acc[i]);
}

} // namespace

void zrt::sumInRankOrder(const std::vector<const void *> &from, size_t offset,
                         int64_t count, DType t, std::vector<char> &sum) {
  sum.assign(count * dtypeSize(t), 0);
  if (t == zero::zplan::BF16)
    return sum16<bf16>(from, offset, count, sum);
  if (t == zero::zplan::F16)
    return sum16<f16>(from, offset, count, sum);
  for (const void *p : from)
    addTo(sum.data(), static_cast<const char *>(p) + offset, count, t);
}
