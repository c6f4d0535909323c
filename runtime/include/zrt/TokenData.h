//===- TokenData.h - Token files and the deterministic batch order -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TOKENDATA_H
#define ZRT_TOKENDATA_H

#include <cstdint>
#include <string>
#include <vector>

namespace zrt {

/// A flat file of tokens: u8 (any text file is a byte-level corpus), u16 or u32,
/// little-endian.
class TokenData {
public:
  /// Reads `path`; `format` is "u8", "u16" or "u32". Throws zrt::Error.
  static TokenData load(const std::string &path, const std::string &format);

  int64_t size() const { return (int64_t)tokens_.size(); }
  uint32_t at(int64_t i) const { return tokens_[i]; }

  /// Start of global sample `k` (docs/Design.md, "Data and the training loop"): sample
  /// g of step s is k = s * G + g with G the global batch, unless the global batch
  /// changed (a checkpoint resumed on another world size): k counts the samples
  /// consumed before. Starts at (k * T) mod (L - T - 1); with `shuffle`, a hash
  /// of (seed, k) replaces the sequential position.
  int64_t sampleStart(int64_t k, int64_t seqLen, bool shuffle, uint64_t seed) const;

  /// Fills `tokens` and `targets` ([batch, seqLen], row-major) with the global
  /// samples firstSample .. firstSample + batch - 1; targets are the tokens
  /// shifted by one.
  void fillBatch(int64_t firstSample, int64_t batch, int64_t seqLen, bool shuffle,
                 uint64_t seed, int64_t *tokens, int64_t *targets) const;

private:
  std::vector<uint32_t> tokens_;
};

} // namespace zrt

#endif // ZRT_TOKENDATA_H
