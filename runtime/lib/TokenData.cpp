//===- TokenData.cpp - Token files and the deterministic batch order ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/TokenData.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zrt/RunAgreement.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

using namespace zrt;

/// The file's pages, mapped read-only; unmapped with the last TokenData using it.
struct TokenData::Mapping {
  void *base = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (base != MAP_FAILED)
      ::munmap(base, bytes);
  }
};

TokenData TokenData::load(const std::string &path, const std::string &format) {
  int width = format == "u8" ? 1 : format == "u16" ? 2 : format == "u32" ? 4 : 0;
  ZRT_CHECK(width, "--data-format=" << format << " is not one of u8, u16, u32");
  InputFile file(path, "data file", INT64_MAX);
  ZRT_CHECK(file.size() % width == 0, "data file '" << path << "' has " << file.size()
                                                    << " bytes, not a multiple of "
                                                    << width << " (" << format << ")");
  auto mapping = std::make_shared<Mapping>();
  TokenData d;
  d.width_ = width;
  d.size_ = file.size() / width;
  if (file.size() > 0) {
    mapping->bytes = (size_t)file.size();
    mapping->base = ::mmap(nullptr, mapping->bytes, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    ZRT_CHECK(mapping->base != MAP_FAILED,
              "cannot map data file '" << path << "': " << std::strerror(errno));
    d.bytes_ = static_cast<const unsigned char *>(mapping->base);
  }
  d.mapping_ = std::move(mapping);
  return d;
}

uint32_t TokenData::at(int64_t i) const {
  const unsigned char *p = bytes_ + i * width_;
  uint32_t v = 0;
  for (int k = 0; k < width_; ++k)
    v |= (uint32_t)p[k] << (8 * k);
  return v;
}

uint64_t TokenData::fingerprint() const {
  return contentHash(bytes_, (size_t)(size_ * width_), (uint64_t)width_);
}

/// splitmix64: a fixed, portable mixing function, so that a shuffled run can be
/// reproduced on any machine.
static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int64_t TokenData::sampleStart(int64_t k, int64_t seqLen, bool shuffle,
                               uint64_t seed) const {
  int64_t span = size() - seqLen - 1;
  ZRT_CHECK(span > 0, "the data has " << size() << " tokens; a sample needs "
                                      << seqLen + 2 << " or more");
  ZRT_CHECK(k >= 0, "sample " << k << " is before the start of the data");
  uint64_t sample = (uint64_t)k;
  if (shuffle)
    return (int64_t)(splitmix64(seed ^ splitmix64(sample)) % (uint64_t)span);
  // In 128 bits: k * T does not wrap for any k a checkpoint may carry.
  return (int64_t)(((unsigned __int128)sample * (uint64_t)seqLen) % (uint64_t)span);
}

void TokenData::fillBatch(int64_t firstSample, int64_t batch, int64_t seqLen,
                          bool shuffle, uint64_t seed, int64_t *tokens,
                          int64_t *targets) const {
  for (int64_t b = 0; b < batch; ++b) {
    int64_t start = sampleStart(firstSample + b, seqLen, shuffle, seed);
    for (int64_t t = 0; t < seqLen; ++t) {
      tokens[b * seqLen + t] = at(start + t);
      targets[b * seqLen + t] = at(start + t + 1);
    }
  }
}
