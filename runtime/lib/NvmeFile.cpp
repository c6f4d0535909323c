//===- NvmeFile.cpp - A rank's NVMe offload file, direct I/O --------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/NvmeFile.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zplan/PlanFormat.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <fcntl.h>
#include <libaio.h>
#include <sstream>
#include <utility>
#include <sys/stat.h>
#include <unistd.h>

using namespace zrt;

namespace {

/// Bytes one staging buffer holds: a request's size (NVMe drives reach their
/// bandwidth from about 1 MiB per request).
constexpr int64_t kStagingBytes = 4 << 20;

int64_t roundUp(int64_t n) { return (n + kNvmeAlignment - 1) / kNvmeAlignment * kNvmeAlignment; }

template <typename T> int64_t countNonFinite(const char *p, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    bad += !std::isfinite((float)v);
  }
  return bad;
}

int64_t nonFiniteIn(const char *p, int64_t bytes, DType dtype) {
  switch (dtype) {
  case zero::zplan::F32:
    return countNonFinite<float>(p, bytes / 4);
  case zero::zplan::F64: {
    int64_t bad = 0;
    for (int64_t i = 0; i < bytes / 8; ++i) {
      double v;
      std::memcpy(&v, p + i * 8, 8);
      bad += !std::isfinite(v);
    }
    return bad;
  }
  case zero::zplan::BF16:
    return countNonFinite<bf16>(p, bytes / 2);
  case zero::zplan::F16:
    return countNonFinite<f16>(p, bytes / 2);
  default:
    return 0;
  }
}

/// A checksum of one block of the file (`bytes` a multiple of 32): xxHash64's
/// round over four lanes of 64-bit words, merged. Several GB/s on one core, cheap
/// next to the disk; it finds bytes that changed, not a forger's.
uint64_t blockChecksum(const char *p, int64_t bytes) {
  constexpr uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full;
  auto round = [](uint64_t acc, uint64_t w) {
    acc += w * P2;
    acc = (acc << 31) | (acc >> 33);
    return acc * P1;
  };
  uint64_t lane[4] = {P1 + P2, P2, 0, 0 - P1};
  for (int64_t i = 0; i + 32 <= bytes; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = round(lane[k], w);
    }
  uint64_t h = (uint64_t)bytes;
  for (uint64_t l : lane)
    h = (h ^ round(0, l)) * P1 + P2;
  return h ^ (h >> 29);
}

/// The NVMe files this process has open, for removeNvmeFilesOnSignal's handler:
/// fixed slots of fixed size, claimed and released with atomics, so that the
/// handler reads them without a lock or an allocation (it may run at any moment).
constexpr int kCleanupSlots = 256;
constexpr size_t kCleanupPathBytes = 4096;
struct CleanupSlot {
  std::atomic<int> state{0}; // 0 free, 1 being written, 2 holds a path
  char path[kCleanupPathBytes];
};
CleanupSlot cleanupSlots[kCleanupSlots];

int claimCleanupSlot(const std::string &path) {
  if (path.size() >= kCleanupPathBytes)
    return -1;
  for (int i = 0; i < kCleanupSlots; ++i) {
    int expected = 0;
    if (cleanupSlots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(cleanupSlots[i].path, path.c_str(), path.size() + 1);
      cleanupSlots[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void releaseCleanupSlot(int i) {
  if (i >= 0)
    cleanupSlots[i].state.store(0);
}

extern "C" void removeFilesAndDie(int sig) {
  for (CleanupSlot &slot : cleanupSlots)
    if (slot.state.load() == 2)
      ::unlink(slot.path); // async-signal-safe
  ::signal(sig, SIG_DFL);
  ::raise(sig); // ends the process as the signal would have
}

} // namespace

void zrt::removeNvmeFilesOnSignal() {
  struct sigaction action {};
  action.sa_handler = removeFilesAndDie;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP})
    ::sigaction(sig, &action, nullptr);
}

void NvmeFile::Free::operator()(char *p) const { std::free(p); }

NvmeFile::NvmeFile(const std::string &dir, int rank, int64_t bytes, int queueDepth)
    : bytes_(bytes) {
  struct stat st;
  bool exists = ::stat(dir.c_str(), &st) == 0;
  ZRT_CHECK(exists && S_ISDIR(st.st_mode),
            "--nvme-path " << dir << ": " << (exists ? "not a folder" : std::strerror(errno)));
  path_ = dir + "/zero-opt-" + std::to_string(::getpid()) + "-rank" + std::to_string(rank) +
          ".nvme";
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0600);
  ZRT_CHECK(fd_ >= 0 || errno != EEXIST,
            "cannot make the NVMe offload file "
                << path_ << ": a file of that name is there, left by an earlier run whose "
                << "process had this process id and was killed before it could remove it "
                << "(or a run in another container, using the same folder, has this id); "
                << "if no such run is going, remove it (rm '" << path_ << "') and start again");
  ZRT_CHECK(fd_ >= 0, "cannot make the NVMe offload file " << path_ << ": "
                                                           << std::strerror(errno)
                                                           << (errno == EINVAL
                                                                   ? " (the folder's file "
                                                                     "system has no direct "
                                                                     "I/O, O_DIRECT)"
                                                                   : ""));
  cleanupSlot_ = claimCleanupSlot(path_);
  try {
    int err = ::posix_fallocate(fd_, 0, bytes);
    ZRT_CHECK(err == 0, "cannot allocate " << bytes << " bytes for the NVMe offload file "
                                           << path_ << ": " << std::strerror(err));
    ZRT_CHECK(::fstat(fd_, &st) == 0, "cannot stat " << path_ << ": " << std::strerror(errno));
    device_ = st.st_dev;
    inode_ = st.st_ino;
    queueDepth = std::max(1, queueDepth);
    for (int s = 0; s < queueDepth; ++s) {
      void *p = nullptr;
      ZRT_CHECK(::posix_memalign(&p, kNvmeAlignment, kStagingBytes) == 0,
                "cannot allocate the NVMe staging buffers");
      staging_.emplace_back(static_cast<char *>(p));
    }
    io_context_t ctx = nullptr;
    err = io_setup(queueDepth, &ctx); // libaio returns -errno
    ZRT_CHECK(err == 0, "cannot set up asynchronous I/O (Linux AIO, io_setup) for the "
                        "NVMe offload file " << path_ << ": " << std::strerror(-err)
                                             << (err == -EAGAIN ? " (the system's "
                                                                  "fs.aio-max-nr is "
                                                                  "reached)"
                                                                : ""));
    aio_ = ctx;
  } catch (...) {
    ::close(fd_);
    ::unlink(path_.c_str());
    releaseCleanupSlot(cleanupSlot_);
    throw;
  }
}

NvmeFile::~NvmeFile() {
  io_destroy(static_cast<io_context_t>(aio_)); // waits for requests still in flight
  ::close(fd_);
  ::unlink(path_.c_str());
  releaseCleanupSlot(cleanupSlot_);
}

int64_t NvmeFile::transfer(bool read, int64_t offset, char *host, int64_t bytes,
                           DType dtype) {
  std::lock_guard<std::mutex> one(transferMutex_); // the staging pool is one
  auto begin = std::chrono::steady_clock::now();
  auto ctx = static_cast<io_context_t>(aio_);
  int depth = queueDepth();
  std::vector<struct iocb> cbs(depth);
  std::vector<int64_t> at(depth), len(depth); // each request's host bytes
  std::vector<uint64_t> written(depth);       // a write request's checksum
  std::vector<int> idle(depth);
  for (int i = 0; i < depth; ++i)
    idle[i] = depth - 1 - i;
  std::vector<struct io_event> events(depth);
  int64_t next = 0, bad = 0;
  int inFlight = 0;
  std::string failure, changed;
  while (next < bytes || inFlight > 0) {
    // Keep the queue full: a write's bytes are checked and staged while the
    // requests before it are on the disk.
    while (failure.empty() && next < bytes && !idle.empty()) {
      int slot = idle.back();
      char *stage = staging_[slot].get();
      int64_t n = std::min(kStagingBytes, bytes - next), blocks = roundUp(n);
      if (!read) {
        bad += nonFiniteIn(host + next, n, dtype);
        std::memcpy(stage, host + next, n);
        std::memset(stage + n, 0, blocks - n);
        written[slot] = blockChecksum(stage, blocks);
      }
      struct iocb *cb = &cbs[slot];
      if (read)
        io_prep_pread(cb, fd_, stage, blocks, offset + next);
      else
        io_prep_pwrite(cb, fd_, stage, blocks, offset + next);
      cb->data = reinterpret_cast<void *>(static_cast<intptr_t>(slot));
      int put = io_submit(ctx, 1, &cb);
      if (put == -EAGAIN || put == -EINTR)
        break; // the kernel's queue is full: reap, then try again
      if (put != 1) {
        failure = std::string("submitting a request failed: ") +
                  (put < 0 ? std::strerror(-put) : "none was taken");
        break;
      }
      idle.pop_back();
      at[slot] = next;
      len[slot] = n;
      next += n;
      ++inFlight;
    }
    if (inFlight == 0)
      break; // a failed submission with nothing left in flight
    int got = io_getevents(ctx, 1, depth, events.data(), nullptr);
    if (got == -EINTR)
      continue;
    if (got < 0) { // cannot wait for them: the staging buffers stay theirs
      ZRT_FAIL("waiting for the NVMe offload file " << path_ << " failed: "
                                                   << std::strerror(-got));
    }
    for (int e = 0; e < got; ++e) {
      int slot = (int)reinterpret_cast<intptr_t>(events[e].data);
      long res = (long)events[e].res;
      --inFlight;
      idle.push_back(slot);
      if (res != roundUp(len[slot])) {
        if (failure.empty()) {
          std::ostringstream os;
          os << (read ? "reading " : "writing ") << roundUp(len[slot]) << " bytes at offset "
             << offset + at[slot] << " failed: "
             << (res < 0 ? std::strerror((int)-res)
                 : read  ? "it ends early (was it cut?)"
                         : "a short write");
          failure = os.str();
        }
        continue;
      }
      // Each block is read back as it was written (the same requests: a buffer
      // moves whole at its offset), or the file changed under the run.
      int64_t blockAt = offset + at[slot], blocks = roundUp(len[slot]);
      if (!read) {
        checksums_[blockAt] = {blocks, written[slot]};
        continue;
      }
      auto known = checksums_.find(blockAt);
      if (known != checksums_.end() && changed.empty()) {
        std::ostringstream os;
        if (known->second.first != blocks)
          os << "reading " << blocks << " bytes at offset " << blockAt << ", where a block of "
             << known->second.first << " bytes was written, cannot be checked";
        else if (known->second.second != blockChecksum(staging_[slot].get(), blocks))
          os << "the " << blocks << " bytes at offset " << blockAt
             << " read back differ from what this run wrote there (another program wrote "
                "to it, or the disk returned other data)";
        changed = os.str();
      }
      if (changed.empty())
        std::memcpy(host + at[slot], staging_[slot].get(), len[slot]);
    }
  }
  ZRT_CHECK(failure.empty(), failure << " (the NVMe offload file " << path_ << ")");
  ZRT_CHECK(changed.empty(), "the NVMe offload file "
                                 << path_ << " changed under the run: " << changed
                                 << "; the run's parameters and optimizer state were in it "
                                    "(resume from the last checkpoint)");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::lock_guard<std::mutex> lock(mutex_);
  (read ? traffic_.read : traffic_.written) += bytes;
  (read ? traffic_.readS : traffic_.writeS) += seconds;
  return bad;
}

void NvmeFile::read(int64_t offset, void *dst, int64_t bytes) {
  transfer(true, offset, static_cast<char *>(dst), bytes, zero::zplan::U8);
}

void NvmeFile::write(int64_t offset, const void *src, int64_t bytes, DType dtype) {
  int64_t bad = transfer(false, offset, const_cast<char *>(static_cast<const char *>(src)),
                         bytes, dtype);
  std::lock_guard<std::mutex> lock(mutex_);
  nonFinite_[offset] += bad;
}

void NvmeFile::check() const {
  struct stat byPath, byFd;
  ZRT_CHECK(::stat(path_.c_str(), &byPath) == 0,
            "the NVMe offload file " << path_ << " is gone: " << std::strerror(errno)
                                     << "; the run's parameters and optimizer state "
                                        "were in it (resume from the last checkpoint)");
  ZRT_CHECK(::fstat(fd_, &byFd) == 0,
            "cannot stat the NVMe offload file " << path_ << ": " << std::strerror(errno));
  ZRT_CHECK((uint64_t)byPath.st_dev == device_ && (uint64_t)byPath.st_ino == inode_,
            "the NVMe offload file " << path_ << " was replaced by another file; the "
                                        "run's parameters and optimizer state were in it "
                                        "(resume from the last checkpoint)");
  ZRT_CHECK(byFd.st_size >= bytes_,
            "the NVMe offload file " << path_ << " was cut to " << byFd.st_size
                                     << " bytes of " << bytes_
                                     << "; the run's parameters and optimizer state were "
                                        "in it (resume from the last checkpoint)");
}

int64_t NvmeFile::nonFinite(int64_t offset) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = nonFinite_.find(offset);
  return it == nonFinite_.end() ? 0 : it->second;
}

void NvmeFile::clearNonFinite(int64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  nonFinite_.erase(offset);
}

void NvmeFile::resetNonFinite() {
  std::lock_guard<std::mutex> lock(mutex_);
  nonFinite_.clear();
}

NvmeTraffic NvmeFile::takeTraffic() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(traffic_, NvmeTraffic{});
}
