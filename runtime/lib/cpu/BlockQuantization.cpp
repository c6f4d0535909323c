//===- BlockQuantization.cpp - int8 blocks with one scale each ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/BlockQuantization.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"

#include <cstring>
#include <limits>
#include <vector>

using namespace zrt;

namespace {

template <typename T>
void quantize(const T *x, int64_t count, int64_t block, float *scales, int8_t *q,
              QuantizationError &error) {
  for (int64_t b0 = 0, bi = 0; b0 < count; b0 += block, ++bi) {
    int64_t n = std::min(block, count - b0);
    float most = 0;
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
      float v = (float)x[b0 + i];
      finite &= std::isfinite(v);
      most = std::max(most, std::fabs(v));
    }
    if (!finite) { // comes back NaN: the overflow check after the collective sees it
      scales[bi] = std::numeric_limits<float>::quiet_NaN();
      std::memset(q + b0, 0, n);
      continue;
    }
    float scale = most / 127.0f, worst = 0;
    scales[bi] = scale;
    for (int64_t i = 0; i < n; ++i) {
      float v = (float)x[b0 + i];
      float r = scale > 0 ? std::nearbyint(v / scale) : 0.0f;
      r = std::min(127.0f, std::max(-127.0f, r));
      q[b0 + i] = (int8_t)r;
      float e = v - r * scale;
      worst = std::max(worst, std::fabs(e));
      error.errorSquares += (double)e * e;
      error.valueSquares += (double)v * v;
    }
    if (most > 0)
      error.worstBlock = std::max(error.worstBlock, (double)(worst / most));
  }
  error.values += count;
}

} // namespace

void zrt::quantizeBlocks(const void *in, DType t, int64_t count, int64_t block, void *out,
                         QuantizationError &error) {
  ZRT_CHECK(block > 0, "quantization needs blocks of at least one value, not " << block);
  // Messages are packed back to back, so the scales may be unaligned: they are
  // made here and copied in.
  int64_t blocks = (count + block - 1) / block;
  std::vector<float> scales(blocks);
  auto *q = static_cast<int8_t *>(out) + blocks * sizeof(float);
  switch (t) {
  case zero::zplan::F32:
    quantize(static_cast<const float *>(in), count, block, scales.data(), q, error);
    break;
  case zero::zplan::BF16:
    quantize(static_cast<const bf16 *>(in), count, block, scales.data(), q, error);
    break;
  case zero::zplan::F16:
    quantize(static_cast<const f16 *>(in), count, block, scales.data(), q, error);
    break;
  default:
    ZRT_FAIL("quantized collectives take f32, bf16 or f16 buffers, not "
             << dtypeName(t));
  }
  std::memcpy(out, scales.data(), blocks * sizeof(float));
}

void zrt::dequantizeBlocks(const void *in, int64_t count, int64_t block, float *out) {
  int64_t blocks = (count + block - 1) / block;
  const auto *q = static_cast<const int8_t *>(in) + blocks * sizeof(float);
  for (int64_t bi = 0; bi < blocks; ++bi) {
    float scale;
    std::memcpy(&scale, static_cast<const char *>(in) + bi * sizeof(float), sizeof scale);
    for (int64_t i = bi * block, end = std::min(count, i + block); i < end; ++i)
      out[i] = q[i] * scale;
  }
}
