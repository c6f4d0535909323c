//===- QuantizedCollectives.cpp - ZeRO++'s int8 collectives ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/QuantizedCollectives.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"

#include <cstring>
#include <vector>

using namespace zrt;

namespace {

/// f32 values -> `count` elements of `t` at `out`.
void store(const float *in, int64_t count, DType t, void *out) {
  switch (t) {
  case zero::zplan::F32:
    std::memcpy(out, in, count * sizeof(float));
    return;
  case zero::zplan::BF16:
    for (int64_t i = 0; i < count; ++i)
      static_cast<bf16 *>(out)[i] = bf16(in[i]);
    return;
  case zero::zplan::F16:
    for (int64_t i = 0; i < count; ++i)
      static_cast<f16 *>(out)[i] = f16(in[i]);
    return;
  default:
    ZRT_FAIL("quantized collectives take f32, bf16 or f16 buffers, not " << dtypeName(t));
  }
}

/// `count` elements of `t` at `in` -> f32, added to `sum`.
void addTo(const void *in, int64_t count, DType t, float *sum) {
  for (int64_t i = 0; i < count; ++i)
    sum[i] += t == zero::zplan::F32   ? static_cast<const float *>(in)[i]
              : t == zero::zplan::BF16 ? (float)static_cast<const bf16 *>(in)[i]
                                       : (float)static_cast<const f16 *>(in)[i];
}

/// Quantizes `count` values (zero-padded to `chunk`) into `wire`.
void pack(Communicator &comm, const char *in, int64_t count, int64_t chunk, DType t,
          int64_t block, char *wire) {
  if (count == chunk) {
    quantizeBlocks(in, t, count, block, wire, comm.quantization);
    return;
  }
  std::vector<char> padded(chunk * dtypeSize(t), 0);
  std::memcpy(padded.data(), in, count * dtypeSize(t));
  quantizeBlocks(padded.data(), t, chunk, block, wire, comm.quantization);
}

/// Counts the wire bytes this rank sends (to the other ranks) and what they
/// would have been unquantized.
void countSent(Communicator &comm, int64_t messages, int64_t wireBytes, int64_t fullBytes) {
  comm.quantization.wireBytes += messages * wireBytes;
  comm.quantization.fullBytes += messages * fullBytes;
}

/// The all-gather of `chunk` values per rank, `count` of them kept (the rest of
/// the last rank's chunk is padding), into `out` as `t`.
void gatherChunks(Communicator &comm, const char *mine, int64_t mineCount, int64_t chunk,
                  int64_t count, DType t, int64_t block, void *out) {
  int n = comm.size();
  int64_t wire = quantizedBytes(chunk, block);
  std::vector<char> sent(wire), received(wire * n);
  pack(comm, mine, mineCount, chunk, t, block, sent.data());
  int64_t counted = comm.allGatherElements;
  comm.allGather(sent.data(), received.data(), wire, zero::zplan::U8);
  comm.allGatherElements = counted;
  countSent(comm, n - 1, wire, chunk * dtypeSize(t));
  std::vector<float> values(chunk);
  size_t width = dtypeSize(t);
  for (int r = 0; r < n; ++r) {
    int64_t first = r * chunk, kept = std::min(chunk, count - first);
    if (kept <= 0)
      break;
    dequantizeBlocks(received.data() + r * wire, chunk, block, values.data());
    store(values.data(), kept, t, static_cast<char *>(out) + first * width);
  }
}

/// This rank's chunk (`chunk` values) of the sum over ranks of `in` (`count`
/// values, chunk r at r * chunk, the last zero-padded), as f32.
std::vector<float> reduceChunks(Communicator &comm, const char *in, int64_t count,
                                int64_t chunk, DType t, int64_t block) {
  int n = comm.size(), me = comm.rank();
  size_t width = dtypeSize(t);
  int64_t wire = quantizedBytes(chunk, block);
  std::vector<char> sent(wire * n), received(wire * n);
  for (int r = 0; r < n; ++r) {
    int64_t first = r * chunk, kept = std::max<int64_t>(0, std::min(chunk, count - first));
    if (r != me) // its own chunk stays exact; a chunk past the end is all padding
      pack(comm, kept ? in + first * width : in, kept, chunk, t, block, sent.data() + r * wire);
  }
  comm.allToAllBytes(sent.data(), received.data(), wire);
  countSent(comm, n - 1, wire, chunk * width);
  std::vector<float> sum(chunk, 0.0f), part(chunk);
  int64_t mineFirst = me * chunk, mineKept = std::max<int64_t>(0, std::min(chunk, count - mineFirst));
  for (int r = 0; r < n; ++r) {
    if (r == me) {
      if (mineKept)
        addTo(in + mineFirst * width, mineKept, t, sum.data());
      continue;
    }
    dequantizeBlocks(received.data() + r * wire, chunk, block, part.data());
    for (int64_t i = 0; i < chunk; ++i)
      sum[i] += part[i];
  }
  return sum;
}

} // namespace

void zrt::quantizedAllGather(Communicator &comm, const void *in, void *out, int64_t count,
                             DType t, int64_t block) {
  // `in` may be this rank's slot of `out`: it is quantized before anything lands.
  gatherChunks(comm, static_cast<const char *>(in), count, count, count * comm.size(), t,
               block, out);
  comm.allGatherElements += count * comm.size();
}

void zrt::quantizedReduceScatterSum(Communicator &comm, const void *in, void *out,
                                    int64_t count, DType t, int64_t block) {
  std::vector<float> sum = reduceChunks(comm, static_cast<const char *>(in),
                                        count * comm.size(), count, t, block);
  store(sum.data(), count, t, out);
  comm.reduceScatterElements += count * comm.size();
}

void zrt::quantizedAllReduceSum(Communicator &comm, const void *in, void *out,
                                int64_t count, DType t, int64_t block) {
  int n = comm.size();
  int64_t chunk = (count + n - 1) / n, first = comm.rank() * chunk;
  int64_t kept = std::max<int64_t>(0, std::min(chunk, count - first));
  std::vector<float> sum = reduceChunks(comm, static_cast<const char *>(in), count, chunk,
                                        t, block);
  std::vector<char> mine(chunk * dtypeSize(t));
  store(sum.data(), chunk, t, mine.data());
  gatherChunks(comm, mine.data(), kept, chunk, count, t, block, out);
  comm.allReduceElements += count;
}
