//===- CheckpointReader.h - Reads tensors out of a checkpoint ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Opens a checkpoint folder (or the one a folder's `latest` names), checks its
// manifest (zrt/CheckpointManifest.h) and the size and header of every rank
// file, and then reads any range
// of elements of any tensor, from whichever files hold it: only those bytes (in
// checksummed chunks), never a whole file or the whole model. Every chunk read is
// checked against the manifest's checksum first.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CHECKPOINTREADER_H
#define ZRT_CHECKPOINTREADER_H

#include "zrt/CheckpointManifest.h"
#include "zrt/InputFile.h"
#include "zrt/Tensor.h"

#include "checkpoint.pb.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zrt {

class CheckpointReader {
public:
  /// Throws zrt::Error naming the file and what is wrong with it.
  explicit CheckpointReader(const std::string &path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader &) = delete;
  CheckpointReader &operator=(const CheckpointReader &) = delete;

  const zero::zplan::CheckpointManifest &manifest() const { return m_; }
  const std::string &folder() const { return folder_; }
  const std::string &manifestPath() const { return manifestPath_; }
  /// The tensor `name`, or null.
  const zero::zplan::CheckpointTensor *tensor(const std::string &name) const;

  /// Elements [first, first + count) of tensor `name`, converted to `dtype` (float
  /// types into each other; others only to themselves), into `dst`.
  void read(const std::string &name, int64_t first, int64_t count, DType dtype,
            char *dst);
  /// Checks the chunks given to `rank` of `world` (chunk c of file q to rank
  /// (q + c) mod world) that this reader has not read: with every rank of a job
  /// calling it, each byte of the checkpoint is checked by some rank.
  void verifyUnread(int rank, int world);
  /// Payload bytes read so far (each chunk counted once), and in all files.
  int64_t bytesRead() const { return bytesRead_; }
  int64_t totalBytes() const;

private:
  struct Source {
    int64_t first, count; // elements of the tensor
    int file;
    int64_t offset; // payload bytes
    DType dtype;
  };
  struct File {
    std::string path;
    std::unique_ptr<InputFile> input;
    int64_t payload = 0;
    std::vector<bool> verified;
    int64_t cached = -1; // the chunk in `cache`
    std::vector<char> cache;
  };
  const char *chunk(int file, int64_t index, int64_t &size);
  void copy(int file, int64_t offset, int64_t bytes, char *dst);

  zero::zplan::CheckpointManifest m_;
  std::string folder_, manifestPath_;
  std::map<std::string, std::vector<Source>> sources_;
  std::map<std::string, int> tensors_;
  std::vector<File> files_;
  int64_t bytesRead_ = 0;
};

} // namespace zrt

#endif // ZRT_CHECKPOINTREADER_H
