//===- InputFile.cpp - Files read only as regular files of bounded size ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/InputFile.h"
#include "zrt/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace zrt;

namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a fifo";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "a special file";
}

} // namespace

std::string zrt::describeBytes(int64_t bytes) {
  char buf[64];
  if (bytes >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / 1073741824.0);
  else if (bytes >= (int64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%lld bytes", (long long)bytes);
  return buf;
}

InputFile::InputFile(const std::string &path, const std::string &what, int64_t maxBytes)
    : path_(path), what_(what) {
  // O_NONBLOCK: opening a fifo would otherwise wait for a writer. It changes nothing
  // for a regular file, the only kind read past the check below.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  ZRT_CHECK(fd_ >= 0, "cannot open " << what << " '" << path
                                          << "': " << std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    ZRT_FAIL("cannot read " << what << " '" << path << "': " << std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    ZRT_FAIL(what << " '" << path << "' is " << kindOf(st.st_mode)
                    << ", not a regular file");
  }
  size_ = st.st_size;
  if (size_ > maxBytes) {
    ::close(fd_);
    fd_ = -1;
    ZRT_FAIL(what << " '" << path << "' has " << describeBytes(size_) << ", more than the "
                  << describeBytes(maxBytes) << " it can have");
  }
}

InputFile::~InputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string InputFile::readAll() const {
  std::string bytes((size_t)size_, '\0');
  int64_t done = 0;
  while (done < size_) {
    ssize_t n = ::pread(fd_, bytes.data() + done, (size_t)(size_ - done), done);
    if (n < 0 && errno == EINTR)
      continue;
    ZRT_CHECK(n > 0, "cannot read " << what_ << " '" << path_ << "': "
                                        << (n < 0 ? std::strerror(errno)
                                                  : "it became shorter while read"));
    done += n;
  }
  char extra;
  ZRT_CHECK(::pread(fd_, &extra, 1, size_) == 0,
            what_ << " '" << path_ << "' grew while it was read");
  return bytes;
}

std::string zrt::readInputFile(const std::string &path, const std::string &what,
                               int64_t maxBytes) {
  return InputFile(path, what, maxBytes).readAll();
}

bool zrt::readInputFile(const std::string &path, const std::string &what,
                        int64_t maxBytes, std::string &out, std::string &error) {
  try {
    out = readInputFile(path, what, maxBytes);
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

std::string zrt::jsonNestingProblem(std::string_view text, int maxDepth) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return "it nests arrays and objects more than " + std::to_string(maxDepth) +
               " deep (at byte " + std::to_string(i) + ")";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return "";
}
