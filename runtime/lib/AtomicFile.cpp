//===- AtomicFile.cpp - Files written whole or not at all -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/AtomicFile.h"
#include "zrt/Error.h"

#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <optional>
#include <pthread.h>
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

/// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the process's own
/// streams, whatever they are (a terminal, a pipe, a file the shell redirected).
bool ownStream(const std::string &path) {
  for (const char *prefix : {"/dev/fd/", "/proc/self/fd/"})
    if (path.rfind(prefix, 0) == 0) {
      std::string n = path.substr(std::strlen(prefix));
      return !n.empty() && n.find_first_not_of("0123456789") == std::string::npos;
    }
  return path == "/dev/stdout" || path == "/dev/stderr";
}

/// Character devices written through: /dev/null (1,3) and terminals (4,*: the
/// virtual consoles and serial lines; 5,0 /dev/tty; 5,1 the console; 136-143,*:
/// pseudo-terminals), told apart by number: opening a device to ask it can act
/// (a watchdog starts counting).
bool streamDevice(dev_t dev) {
  unsigned ma = major(dev), mi = minor(dev);
  return (ma == 1 && mi == 3) || ma == 4 || (ma == 5 && mi <= 1) || (ma >= 136 && ma <= 143);
}

/// Where and how an output named `path` is written.
struct Target {
  std::string path;    ///< the file replaced (a link's target) or opened
  bool stream = false; ///< written through, not replaced
  std::string problem; ///< why nothing is written there ("is a socket"); "" if it can be
};

Target targetOf(const std::string &path) {
  Target t;
  t.path = path;
  if (path.empty() || path.back() == '/') {
    t.problem = "is not a file name";
    return t;
  }
  if (ownStream(path)) {
    t.stream = true;
    return t;
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      t.problem = std::string("cannot be examined: ") + std::strerror(errno);
    return t; // a new file
  }
  if (S_ISLNK(st.st_mode)) {
    char to[4096];
    ssize_t n = ::readlink(path.c_str(), to, sizeof to - 1);
    std::string link = n >= 0 ? std::string(to, (size_t)n) : "?";
    if (::stat(path.c_str(), &st) != 0) {
      t.problem = "is a symbolic link to '" + link + "', which " +
                  (errno == ENOENT ? std::string("does not exist")
                                   : std::string("cannot be reached: ") + std::strerror(errno)) +
                  ": nothing is written through a dangling link (name the file itself, or "
                  "remove the link)";
      return t;
    }
    if (char *real = ::realpath(path.c_str(), nullptr)) {
      t.path = real;
      std::free(real);
    }
  }
  if (S_ISREG(st.st_mode))
    return t;
  if (S_ISDIR(st.st_mode))
    t.problem = "is a folder, not a file";
  else if (S_ISFIFO(st.st_mode) || (S_ISCHR(st.st_mode) && streamDevice(st.st_rdev)))
    t.stream = true;
  else if (S_ISCHR(st.st_mode))
    t.problem = "is a character device: of devices, only /dev/null and terminals are "
                "written to (and no file is put in a device's place)";
  else if (S_ISBLK(st.st_mode))
    t.problem = "is a block device: nothing is written to it (and no file is put in its "
                "place)";
  else if (S_ISSOCK(st.st_mode))
    t.problem = "is a socket: nothing is written to it (and no file is put in its place)";
  else
    t.problem = "is a special file, not a regular one";
  return t;
}

} // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  Target target = targetOf(path_);
  ZRT_CHECK(target.problem.empty(), "cannot write '" << path_ << "': it " << target.problem);
  if (target.stream) {
    // O_NONBLOCK: a fifo nobody reads is an error now, not a wait forever.
    stream_ = true;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    ZRT_CHECK(fd_ >= 0, "cannot write '" << path_ << "': "
                                         << (errno == ENXIO ? "it is a fifo that nobody reads "
                                                              "(start its reader first)"
                                                            : std::strerror(errno)));
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    return;
  }
  target_ = target.path; // a link's target: the link stays
  std::string folder = folderOf(target_);
  // Hidden, beside the target: the rename stays inside one file system.
  temp_ = folder + "/." + baseOf(target_) + ".tmp-XXXXXX";
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

namespace {

/// While it lives, a write to a pipe whose reader went away fails with EPIPE on
/// this thread instead of raising SIGPIPE, which would end the process without a
/// word (or its NVMe files' removal).
class NoSigpipe {
public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    hadOne_ = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    if (!hadOne_) { // take the one this thread's writes raised, if any
      timespec none{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &none) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

private:
  sigset_t pipe_, old_;
  bool hadOne_;
};

} // namespace

void AtomicFile::overwrite(size_t offset, const void *data, size_t bytes) {
  ZRT_CHECK(fd_ >= 0 && !stream_, "cannot write '" << path_ << "' out of order");
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd_, p, bytes, (off_t)offset);
    if (n < 0 && errno == EINTR)
      continue;
    failed_ |= n <= 0;
    ZRT_CHECK(n > 0, "cannot write '" << path_ << "': "
                                      << (n < 0 ? std::strerror(errno) : "no progress")
                                      << "; the previous file, if any, is unchanged");
    p += n;
    bytes -= (size_t)n;
    offset += (size_t)n;
  }
}

void AtomicFile::write(const void *data, size_t bytes) {
  ZRT_CHECK(fd_ >= 0, "cannot write '" << path_ << "': the file is already closed");
  std::optional<NoSigpipe> quiet;
  if (stream_)
    quiet.emplace();
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    failed_ |= n <= 0;
    ZRT_CHECK(n > 0, "cannot write '" << path_ << "': "
                                      << (n < 0 && errno == EPIPE
                                              ? "its reader went away (Broken pipe)"
                                          : n < 0 ? std::strerror(errno)
                                                  : "no progress")
                                      << (stream_ ? ""
                                                  : "; the previous file, if any, is "
                                                    "unchanged"));
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
  if (stream_) {
    int closed = ::close(fd_);
    fd_ = -1;
    ZRT_CHECK(closed == 0, "cannot write '" << path_ << "': " << std::strerror(errno));
    return;
  }
  int rc = ::fsync(fd_);
  int err = errno;
  int closed = ::close(fd_);
  fd_ = -1;
  ZRT_CHECK(rc == 0 && closed == 0,
            "cannot write '" << path_ << "': " << std::strerror(rc ? err : errno)
                             << "; the previous file, if any, is unchanged");
  ZRT_CHECK(::rename(temp_.c_str(), target_.c_str()) == 0,
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
  Target target = targetOf(path);
  if (!target.problem.empty())
    return flag + " '" + path + "' " + target.problem;
  if (target.stream)
    return ""; // a fifo's reader is looked for when it is written: opening it here
               // would end the reader's input
  std::string folder = folderOf(target.path);
  struct stat st;
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
