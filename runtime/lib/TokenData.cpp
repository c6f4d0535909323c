//===- TokenData.cpp - Token files and the deterministic batch order ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/TokenData.h"
#include "zrt/Error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <sstream>

using namespace zrt;

TokenData TokenData::load(const std::string &path, const std::string &format) {
  int width = format == "u8" ? 1 : format == "u16" ? 2 : format == "u32" ? 4 : 0;
  ZRT_CHECK(width, "--data-format=" << format << " is not one of u8, u16, u32");
  struct stat st;
  ZRT_CHECK(::stat(path.c_str(), &st) == 0,
            "cannot open data file '" << path << "': " << std::strerror(errno));
  ZRT_CHECK(S_ISREG(st.st_mode), "data file '" << path << "' is not a regular file"
                                               << (S_ISDIR(st.st_mode) ? " (a folder)" : ""));
  std::ifstream in(path, std::ios::binary);
  ZRT_CHECK(in, "cannot open data file '" << path << "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  ZRT_CHECK(bytes.size() % width == 0, "data file '" << path << "' has " << bytes.size()
                                                     << " bytes, not a multiple of "
                                                     << width << " (" << format << ")");
  TokenData d;
  d.tokens_.resize(bytes.size() / width);
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  for (size_t i = 0; i < d.tokens_.size(); ++i) {
    uint32_t v = 0;
    for (int k = 0; k < width; ++k)
      v |= (uint32_t)p[i * width + k] << (8 * k);
    d.tokens_[i] = v;
  }
  return d;
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
  uint64_t sample = (uint64_t)k;
  if (shuffle)
    return (int64_t)(splitmix64(seed ^ splitmix64(sample)) % (uint64_t)span);
  return (int64_t)((sample * (uint64_t)seqLen) % (uint64_t)span);
}

void TokenData::fillBatch(int64_t firstSample, int64_t batch, int64_t seqLen,
                          bool shuffle, uint64_t seed, int64_t *tokens,
                          int64_t *targets) const {
  for (int64_t b = 0; b < batch; ++b) {
    int64_t start = sampleStart(firstSample + b, seqLen, shuffle, seed);
    for (int64_t t = 0; t < seqLen; ++t) {
      tokens[b * seqLen + t] = tokens_[start + t];
      targets[b * seqLen + t] = tokens_[start + t + 1];
    }
  }
}
