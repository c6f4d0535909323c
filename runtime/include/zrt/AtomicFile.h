//===- AtomicFile.h - Files written whole or not at all --------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Every file zero-run and zero-opt write (weights, plans, logs, traces, outputs)
// goes through here: the bytes go to a temporary file in the target's folder,
// every write and the close are checked, the data is flushed to the disk, and only
// then is the temporary file renamed over the target. A failure (a full disk, a
// size limit) is an error, the temporary file is removed, and the previous file at
// the target stays whole.
//
// Only a regular file (or a new path) is replaced; a symbolic link to one is
// followed and its target replaced, the link kept. What is no regular file is
// never renamed over: a fifo, a terminal, /dev/null and the process's own
// streams (/dev/stdout, /dev/fd/N) are written through as streams (whole or
// not at all cannot hold there); any other device, a socket, a folder or a
// dangling link is refused with a message naming it.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_ATOMICFILE_H
#define ZRT_ATOMICFILE_H

#include <cstddef>
#include <string>

namespace zrt {

class AtomicFile {
public:
  /// Creates the temporary file beside `path`; throws zrt::Error if it cannot.
  explicit AtomicFile(std::string path);
  /// Without commit(), removes the temporary file: the target is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  /// Appends bytes; throws zrt::Error naming the target and the system's reason.
  void write(const void *data, size_t bytes);
  void write(const std::string &text) { write(text.data(), text.size()); }
  /// Writes over bytes already written, at `offset` (a header whose checksum is
  /// known once the rest is written); not on a stream (a device or fifo).
  void overwrite(size_t offset, const void *data, size_t bytes);
  /// printf-style text, appended and checked like write().
  void printf(const char *format, ...) __attribute__((format(printf, 2, 3)));
  /// Flushes to the disk, closes and renames over the target; throws on failure,
  /// and after any failed write (a file missing a part is never committed).
  void commit();
  const std::string &path() const { return path_; }

private:
  std::string path_, target_, temp_; ///< target_: path_, or the file a link names
  int fd_ = -1;
  bool failed_ = false;
  bool stream_ = false; ///< written through: no temporary file, no rename
};

/// `bytes` into `path`, whole or not at all; throws zrt::Error on failure.
void writeFileAtomically(const std::string &path, const std::string &bytes);
/// The same without exceptions (for the compiler): false with `error` set.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

/// Checks, before any work is done, that a file can be written at `path`: a
/// regular file or a new path in a writable folder, or something written through
/// (see above); not a folder, a device, a socket or a dangling link. Throws
/// zrt::Error naming `flag` (the option that gave the path).
void checkWritable(const std::string &path, const std::string &flag);
/// The same without exceptions: "" when writable, else the message.
std::string whyNotWritable(const std::string &path, const std::string &flag);

} // namespace zrt

#endif // ZRT_ATOMICFILE_H
