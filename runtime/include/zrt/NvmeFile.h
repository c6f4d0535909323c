//===- NvmeFile.h - A rank's NVMe offload file, direct I/O -------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// NVMe offload keeps a plan's `nvme` buffers (parameter slices, master weights,
// optimizer state) in one file per rank, at the offsets the compiler chose (4096-
// aligned, sizes rounded up to 4096). Reads and writes bypass the page cache
// (O_DIRECT) and are asynchronous (Linux AIO, libaio): a transfer is cut into
// requests of one staging buffer each, from a fixed pool of aligned buffers, and
// as many requests as the pool has buffers are in flight at once (the queue
// depth); one thread issues them and copies between the staging buffers and host
// memory while the disk works. The file is the run's working state, not a
// checkpoint: it is made when the run starts and removed when it ends.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_NVMEFILE_H
#define ZRT_NVMEFILE_H

#include "zrt/Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace zrt {

/// Requests in flight unless told otherwise (zero-run --nvme-queue-depth): enough
/// to keep an NVMe drive busy with 4 MiB requests.
constexpr int kDefaultNvmeQueueDepth = 8;

/// What an NVMe file moved: bytes, and the seconds during which at least one
/// read (write) was in flight (the disk's busy time, for its throughput).
struct NvmeTraffic {
  int64_t read = 0, written = 0;
  double readS = 0, writeS = 0;
};

/// From now on SIGTERM, SIGINT and SIGHUP remove this process's NVMe offload files
/// before they end it (as the signal would have): a killed run leaves no file
/// behind (zero-run calls it at its start).
void removeNvmeFilesOnSignal();

class NvmeFile {
public:
  /// Makes `dir`/zero-opt-PID-rankR.nvme of `bytes` bytes (allocated on the disk
  /// now, so that a full disk fails here, naming the file, not mid-step), opened
  /// for direct I/O, with `queueDepth` staging buffers and requests in flight.
  /// Throws zrt::Error naming the folder or file and the problem (missing, not
  /// writable, full, no O_DIRECT, no AIO).
  NvmeFile(const std::string &dir, int rank, int64_t bytes, int queueDepth);
  ~NvmeFile();
  NvmeFile(const NvmeFile &) = delete;
  NvmeFile &operator=(const NvmeFile &) = delete;

  const std::string &path() const { return path_; }
  int queueDepth() const { return (int)staging_.size(); }

  /// Bytes [offset, offset + bytes) of the file into `dst`. `offset` is a
  /// multiple of 4096; the file's block-rounded region past `bytes` is read and
  /// dropped. One transfer at a time (callers queue on a lock). Each block read
  /// back is checked against the checksum of what was written there: a file
  /// another program overwrote is an error naming it, never other weights.
  void read(int64_t offset, void *dst, int64_t bytes);
  /// `src` into the file at `offset` (the block's tail past `bytes` is written as
  /// zeros). Counts the non-finite values of a floating-point `dtype` for the
  /// buffer that starts at `offset` (see nonFinite).
  void write(int64_t offset, const void *src, int64_t bytes, DType dtype);

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
  /// Moves one transfer through the staging pool, queueDepth() requests in
  /// flight; returns the non-finite values a write's source held.
  int64_t transfer(bool read, int64_t offset, char *host, int64_t bytes, DType dtype);

  std::string path_;
  int fd_ = -1;
  int cleanupSlot_ = -1; ///< its place among the files removed on a signal
  void *aio_ = nullptr; // the AIO context (io_context_t)
  std::mutex transferMutex_;
  int64_t bytes_ = 0;
  uint64_t device_ = 0, inode_ = 0;
  struct Free {
    void operator()(char *p) const;
  };
  std::vector<std::unique_ptr<char, Free>> staging_;
  mutable std::mutex mutex_;
  NvmeTraffic traffic_;
  std::map<int64_t, int64_t> nonFinite_;
  /// Each block written (by its offset): its size and checksum, checked when it
  /// is read back. Under transferMutex_.
  std::map<int64_t, std::pair<int64_t, uint64_t>> checksums_;
};

} // namespace zrt

#endif // ZRT_NVMEFILE_H
