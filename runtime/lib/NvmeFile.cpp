//===- NvmeFile.cpp - A rank's NVMe offload file, direct I/O --------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/NvmeFile.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zplan/PlanFormat.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
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

} // namespace

void NvmeFile::Free::operator()(char *p) const { std::free(p); }

NvmeFile::NvmeFile(const std::string &dir, int rank, int64_t bytes, int slots)
    : bytes_(bytes) {
  struct stat st;
  bool exists = ::stat(dir.c_str(), &st) == 0;
  ZRT_CHECK(exists && S_ISDIR(st.st_mode),
            "--nvme-path " << dir << ": " << (exists ? "not a folder" : std::strerror(errno)));
  path_ = dir + "/zero-opt-" + std::to_string(::getpid()) + "-rank" + std::to_string(rank) +
          ".nvme";
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0600);
  ZRT_CHECK(fd_ >= 0, "cannot make the NVMe offload file " << path_ << ": "
                                                           << std::strerror(errno)
                                                           << (errno == EINVAL
                                                                   ? " (the folder's file "
                                                                     "system has no direct "
                                                                     "I/O, O_DIRECT)"
                                                                   : ""));
  try {
    int err = ::posix_fallocate(fd_, 0, bytes);
    ZRT_CHECK(err == 0, "cannot allocate " << bytes << " bytes for the NVMe offload file "
                                           << path_ << ": " << std::strerror(err));
    ZRT_CHECK(::fstat(fd_, &st) == 0, "cannot stat " << path_ << ": " << std::strerror(errno));
    device_ = st.st_dev;
    inode_ = st.st_ino;
    for (int s = 0; s < std::max(1, slots); ++s) {
      void *p = nullptr;
      ZRT_CHECK(::posix_memalign(&p, kNvmeAlignment, kStagingBytes) == 0,
                "cannot allocate the NVMe staging buffers");
      staging_.emplace_back(static_cast<char *>(p));
    }
  } catch (...) {
    ::close(fd_);
    ::unlink(path_.c_str());
    throw;
  }
}

NvmeFile::~NvmeFile() {
  ::close(fd_);
  ::unlink(path_.c_str());
}

void NvmeFile::busy(bool read, bool start) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (start) {
    if (inFlight_++ == 0)
      busySince_ = now;
    return;
  }
  if (--inFlight_ == 0)
    (read ? traffic_.readS : traffic_.writeS) +=
        std::chrono::duration<double>(now - busySince_).count();
}

namespace {
/// busy(start) now, busy(end) when the request returns or throws.
struct InFlight {
  std::function<void(bool)> mark;
  explicit InFlight(std::function<void(bool)> m) : mark(std::move(m)) { mark(true); }
  ~InFlight() { mark(false); }
};
} // namespace

void NvmeFile::read(int64_t offset, void *dst, int64_t bytes, int slot) {
  InFlight inFlight([this](bool start) { busy(true, start); });
  char *stage = staging_.at(slot).get();
  char *out = static_cast<char *>(dst);
  for (int64_t done = 0; done < bytes;) {
    int64_t n = std::min(kStagingBytes, bytes - done), len = roundUp(n);
    ssize_t got = ::pread(fd_, stage, len, offset + done);
    if (got < 0 && errno == EINTR)
      continue;
    ZRT_CHECK(got == len, "reading " << len << " bytes at offset " << offset + done
                                     << " of the NVMe offload file " << path_ << " failed: "
                                     << (got < 0 ? std::strerror(errno)
                                                 : "it ends early (was it cut?)"));
    std::memcpy(out + done, stage, n);
    done += n;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  traffic_.read += bytes;
}

void NvmeFile::write(int64_t offset, const void *src, int64_t bytes, DType dtype, int slot,
                     int64_t buffer) {
  InFlight inFlight([this](bool start) { busy(false, start); });
  char *stage = staging_.at(slot).get();
  const char *in = static_cast<const char *>(src);
  int64_t bad = nonFiniteIn(in, bytes, dtype);
  for (int64_t done = 0; done < bytes;) {
    int64_t n = std::min(kStagingBytes, bytes - done), len = roundUp(n);
    std::memcpy(stage, in + done, n);
    std::memset(stage + n, 0, len - n);
    ssize_t put = ::pwrite(fd_, stage, len, offset + done);
    if (put < 0 && errno == EINTR)
      continue;
    ZRT_CHECK(put == len, "writing " << len << " bytes at offset " << offset + done
                                     << " of the NVMe offload file " << path_ << " failed: "
                                     << (put < 0 ? std::strerror(errno) : "a short write"));
    done += n;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  traffic_.written += bytes;
  nonFinite_[buffer] += bad;
}

std::vector<std::pair<int64_t, int64_t>> NvmeFile::parts(int64_t bytes, int parts) {
  int64_t step = roundUp((bytes + parts - 1) / std::max(1, parts));
  step = std::max(step, kNvmeAlignment);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t begin = 0; begin < bytes || out.empty(); begin += step)
    out.push_back({begin, std::min(bytes, begin + step)});
  return out;
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
