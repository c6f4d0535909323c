//===- AtomicFile.cpp - Files written whole or not at all -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/AtomicFile.h"
#include "zrt/Error.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace zrt;

namespace {

std::string folderOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  ZRT_CHECK(!path_.empty() && path_.back() != '/',
            "cannot write '" << path_ << "': not a file name");
  std::string folder = folderOf(path_);
  // Hidden, beside the target: the rename stays inside one file system.
  temp_ = folder + "/." + baseOf(path_) + ".tmp-XXXXXX";
  std::vector<char> name(temp_.begin(), temp_.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());
  ZRT_CHECK(fd_ >= 0, "cannot write '" << path_ << "': cannot create a temporary file in '"
                                       << folder << "': " << std::strerror(errno));
  temp_ = name.data();
  // mkstemp makes it 0600; a finished file gets the usual permissions. umask can
  // only be read by setting it, so that is done once (ranks as threads write
  // their traces at the same time).
  static const mode_t mask = [] {
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  ::fchmod(fd_, 0666 & ~mask);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temp_.empty())
    ::unlink(temp_.c_str());
}

void AtomicFile::write(const void *data, size_t bytes) {
  ZRT_CHECK(fd_ >= 0, "cannot write '" << path_ << "': the file is already closed");
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    failed_ |= n <= 0;
    ZRT_CHECK(n > 0, "cannot write '" << path_ << "': "
                                      << (n < 0 ? std::strerror(errno) : "no progress")
                                      << "; the previous file, if any, is unchanged");
    p += n;
    bytes -= (size_t)n;
  }
}

void AtomicFile::printf(const char *format, ...) {
  char small[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  ZRT_CHECK(n >= 0, "cannot format a line for '" << path_ << "'");
  if ((size_t)n < sizeof(small)) {
    write(small, (size_t)n);
    return;
  }
  std::vector<char> big((size_t)n + 1);
  va_start(args, format);
  std::vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  write(big.data(), (size_t)n);
}

void AtomicFile::commit() {
  ZRT_CHECK(fd_ >= 0, "cannot write '" << path_ << "': the file is already closed");
  ZRT_CHECK(!failed_, "cannot write '" << path_ << "': a write failed; the previous "
                                       << "file, if any, is unchanged");
  int rc = ::fsync(fd_);
  int err = errno;
  int closed = ::close(fd_);
  fd_ = -1;
  ZRT_CHECK(rc == 0 && closed == 0,
            "cannot write '" << path_ << "': " << std::strerror(rc ? err : errno)
                             << "; the previous file, if any, is unchanged");
  ZRT_CHECK(::rename(temp_.c_str(), path_.c_str()) == 0,
            "cannot write '" << path_ << "': " << std::strerror(errno)
                             << "; the previous file, if any, is unchanged");
  temp_.clear();
}

void zrt::writeFileAtomically(const std::string &path, const std::string &bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

bool zrt::writeFileAtomically(const std::string &path, const std::string &bytes,
                              std::string &error) {
  try {
    writeFileAtomically(path, bytes);
    return true;
  } catch (const Error &e) {
    error = e.what();
    return false;
  }
}

std::string zrt::whyNotWritable(const std::string &path, const std::string &flag) {
  std::string folder = folderOf(path);
  struct stat st;
  if (path.empty() || path.back() == '/')
    return flag + " '" + path + "' is not a file name";
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return flag + " '" + path + "' is a folder, not a file";
  if (::stat(folder.c_str(), &st) != 0)
    return flag + " '" + path + "': folder '" + folder + "' does not exist";
  if (!S_ISDIR(st.st_mode))
    return flag + " '" + path + "': '" + folder + "' is not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return flag + " '" + path + "': folder '" + folder + "' is not writable";
  return "";
}

void zrt::checkWritable(const std::string &path, const std::string &flag) {
  std::string why = whyNotWritable(path, flag);
  ZRT_CHECK(why.empty(), why);
}
