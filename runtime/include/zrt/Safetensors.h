//===- Safetensors.h - Hugging Face's weight files --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The format save_pretrained writes: an 8-byte little-endian header length, a
// JSON header mapping each tensor's name to its dtype, shape and byte range in the
// data that follows, then the data. Read with every range, dtype and size checked
// against the file before any tensor is; written whole or not at all.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_SAFETENSORS_H
#define ZRT_SAFETENSORS_H

#include "zrt/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace zrt {

/// One tensor of a safetensors file: where its bytes are in the data section.
struct SafetensorsEntry {
  DType dtype = zero::zplan::DTYPE_INVALID;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

class SafetensorsFile {
public:
  /// Reads and checks the header of `path`; throws zrt::Error naming the file and
  /// the problem (not a regular file, a header that is not the format's JSON, an
  /// unknown dtype, a byte range outside the file or not the shape's size).
  explicit SafetensorsFile(const std::string &path);

  const std::string &path() const { return path_; }
  const std::map<std::string, SafetensorsEntry> &entries() const { return entries_; }
  /// The entry named `name`, or null.
  const SafetensorsEntry *find(const std::string &name) const;
  /// The bytes of entry `name` (which must exist), as stored.
  std::vector<char> read(const std::string &name) const;
  /// `rows` runs of `runBytes` bytes of entry `name`, the first at byte `offset` of
  /// its data and each `strideBytes` after the last, packed into `out`: a slice of
  /// a tensor (rows = 1) or a block of columns of a matrix. Only those bytes are
  /// read; every run must lie within the entry.
  void readRuns(const std::string &name, int64_t offset, int64_t runBytes, int64_t strideBytes,
                int64_t rows, char *out) const;

private:
  std::string path_;
  int64_t dataStart_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
};

/// A tensor to write: its name and bytes.
struct NamedTensor {
  std::string name;
  TensorView view;
};

/// Writes `tensors` (in that order) with `metadata` as the header's __metadata__,
/// atomically (zrt/AtomicFile.h).
void writeSafetensors(const std::string &path, const std::vector<NamedTensor> &tensors,
                      const std::map<std::string, std::string> &metadata);

/// `s` as a JSON string literal (quotes, backslashes and control characters
/// escaped): the header's names, and an index's.
std::string jsonString(const std::string &s);

/// The header of such a file: length, JSON, padding to 8 bytes; tensors are laid out
/// in order, each `bytes[k]` long. Shared with consolidation, which writes its
/// tensors' data as it reads them.
std::string safetensorsHeader(const std::vector<std::string> &names,
                              const std::vector<DType> &dtypes,
                              const std::vector<std::vector<int64_t>> &shapes,
                              const std::map<std::string, std::string> &metadata);

} // namespace zrt

#endif // ZRT_SAFETENSORS_H
