//===- TokenData.h - Token files and the deterministic batch order -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TOKENDATA_H
#define ZRT_TOKENDATA_H

#include <cstdint>
#include <memory>
#include <string>

namespace zrt {

/// A flat file of tokens: u8 (any text file is a byte-level corpus), u16 or u32,
/// little-endian. The file is mapped, not copied: a corpus larger than memory
/// trains, and only the samples a run takes are ever read.
class TokenData {
public:
  /// Maps `path` (a regular file); `format` is "u8", "u16" or "u32". Throws
  /// zrt::Error.
  static TokenData load(const std::string &path, const std::string &format);

  int64_t size() const { return size_; }
  uint32_t at(int64_t i) const;
  /// A hash of the file's contents (zrt/RunAgreement.h's contentHash): reads it all.
  uint64_t fingerprint() const;

  /// Start of global sample `k` (docs/Design.md, "Data and the training loop"): sample
  /// g of step s is k = s * G + g with G the global batch, unless the global batch
  /// changed (a checkpoint resumed on another world size): k counts the samples
  /// consumed before. Starts at (k * T) mod (L - T - 1), computed exactly for any
  /// k >= 0; with `shuffle`, a hash of (seed, k) replaces the sequential position.
  int64_t sampleStart(int64_t k, int64_t seqLen, bool shuffle, uint64_t seed) const;

  /// Fills `tokens` and `targets` ([batch, seqLen], row-major) with the global
  /// samples firstSample .. firstSample + batch - 1; targets are the tokens
  /// shifted by one.
  void fillBatch(int64_t firstSample, int64_t batch, int64_t seqLen, bool shuffle,
                 uint64_t seed, int64_t *tokens, int64_t *targets) const;

private:
  struct Mapping;
  std::shared_ptr<const Mapping> mapping_;
  const unsigned char *bytes_ = nullptr;
  int width_ = 1;
  int64_t size_ = 0;
};

} // namespace zrt

#endif // ZRT_TOKENDATA_H
