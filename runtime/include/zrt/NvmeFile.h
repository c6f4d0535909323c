//===- NvmeFile.h - A rank's NVMe offload file, direct I/O -------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// NVMe offload keeps a plan's `nvme` buffers (parameter slices, master weights,
// optimizer state) in one file per rank, at the offsets the compiler chose (4096-
// aligned, sizes rounded up to 4096). Reads and writes bypass the page cache
// (O_DIRECT) through aligned staging buffers from a fixed pool: one per slot, so
// that as many requests as slots are in flight at once (the host worker's threads
// each take a slot). The file is the run's working state, not a checkpoint: it is
// made when the run starts and removed when it ends.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_NVMEFILE_H
#define ZRT_NVMEFILE_H

#include "zrt/Tensor.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace zrt {

/// What an NVMe file moved: bytes, and the seconds during which at least one
/// read (write) was in flight (the disk's busy time, for its throughput).
struct NvmeTraffic {
  int64_t read = 0, written = 0;
  double readS = 0, writeS = 0;
};

class NvmeFile {
public:
  /// Makes `dir`/zero-opt-PID-rankR.nvme of `bytes` bytes (allocated on the disk
  /// now, so that a full disk fails here, naming the file, not mid-step), opened
  /// for direct I/O, with `slots` staging buffers. Throws zrt::Error naming the
  /// folder or file and the problem (missing, not writable, full, no O_DIRECT).
  NvmeFile(const std::string &dir, int rank, int64_t bytes, int slots);
  ~NvmeFile();
  NvmeFile(const NvmeFile &) = delete;
  NvmeFile &operator=(const NvmeFile &) = delete;

  const std::string &path() const { return path_; }
  int slots() const { return (int)staging_.size(); }

  /// Bytes [offset, offset + bytes) of the file into `dst`, through staging
  /// buffer `slot`. `offset` is a multiple of 4096; the file's block-rounded
  /// region past `bytes` is read and dropped.
  void read(int64_t offset, void *dst, int64_t bytes, int slot);
  /// `src` into the file at `offset`, through staging buffer `slot` (the block's
  /// tail past `bytes` is written as zeros). Counts the non-finite values of a
  /// floating-point `dtype` for the buffer that starts at `buffer` (a write may be
  /// one part of that buffer's; see nonFinite).
  void write(int64_t offset, const void *src, int64_t bytes, DType dtype, int slot,
             int64_t buffer);

  /// A transfer of `bytes` as at most `parts` block-aligned parts [begin, end),
  /// one per staging buffer, in flight at once (at least one part).
  static std::vector<std::pair<int64_t, int64_t>> parts(int64_t bytes, int parts);

  /// Throws naming the file if it was deleted, replaced or cut since it was made
  /// (checked before each step: a read past its end would read nothing).
  void check() const;

  /// Non-finite values among what the writes since resetNonFinite() put at the
  /// buffer starting at `offset` (the weights' check: what a step writes is what
  /// it updated).
  int64_t nonFinite(int64_t offset) const;
  void resetNonFinite();
  void clearNonFinite(int64_t offset);

  /// What moved since the last call (the step's measured traffic).
  NvmeTraffic takeTraffic();

private:
  std::string path_;
  int fd_ = -1;
  int64_t bytes_ = 0;
  uint64_t device_ = 0, inode_ = 0;
  struct Free {
    void operator()(char *p) const;
  };
  std::vector<std::unique_ptr<char, Free>> staging_;
  /// Marks a request's start or end: busy time runs from the first request in
  /// flight to the last one's end.
  void busy(bool read, bool start);

  mutable std::mutex mutex_;
  NvmeTraffic traffic_;
  int inFlight_ = 0;
  std::chrono::steady_clock::time_point busySince_;
  std::map<int64_t, int64_t> nonFinite_;
};

} // namespace zrt

#endif // ZRT_NVMEFILE_H
