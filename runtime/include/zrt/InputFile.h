//===- InputFile.h - Files read only as regular files of bounded size -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Every file zero-run and zero-opt read (plans, models, tensors, token data,
// checkpoints, configs, machine files) is opened here first: without blocking (a
// fifo would wait forever for a writer), checked to be a regular file (not a
// device such as /dev/zero, a fifo or a folder), and its size checked against
// what such a file can be before a byte is read. What is wrong is an error naming
// the file, what it was given as, and the problem.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_INPUTFILE_H
#define ZRT_INPUTFILE_H

#include <cstdint>
#include <string>
#include <string_view>

namespace zrt {

/// Protobuf's limit for one message (a plan, an ONNX model, a tensor file).
inline constexpr int64_t kMaxProtobufBytes = INT32_MAX;
/// JSON files: DeepSpeed configs and machine files are a few KB; manifests grow
/// with the checkpoint's tensors and chunks (tens of bytes each).
inline constexpr int64_t kMaxConfigBytes = int64_t(4) << 20;
inline constexpr int64_t kMaxManifestBytes = int64_t(256) << 20;
/// Deeper than any of the project's JSON files nest (a config: 4 levels); parsers
/// that recurse per level are never given more.
inline constexpr int kMaxJsonDepth = 64;

/// An open regular file: the descriptor (closed on destruction) and its size.
class InputFile {
public:
  /// Opens `path` given as `what` ("plan", "data file") for reading. Throws
  /// zrt::Error unless it is a regular file of at most `maxBytes` bytes.
  InputFile(const std::string &path, const std::string &what, int64_t maxBytes);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  int fd() const { return fd_; }
  int64_t size() const { return size_; }
  /// The whole file; throws if it cannot be read or changed size while read.
  std::string readAll() const;

private:
  std::string path_, what_;
  int fd_ = -1;
  int64_t size_ = 0;
};

/// The whole regular file `path` (at most `maxBytes`); throws zrt::Error.
std::string readInputFile(const std::string &path, const std::string &what,
                          int64_t maxBytes);
/// The same without exceptions (for the compiler): false with `error` set.
bool readInputFile(const std::string &path, const std::string &what, int64_t maxBytes,
                   std::string &out, std::string &error);

/// "" when the JSON text `text` nests arrays and objects at most `maxDepth` deep,
/// else a message saying how deep it goes. Looks only at brackets outside strings,
/// so it is linear and never recurses; the parser runs afterwards.
std::string jsonNestingProblem(std::string_view text, int maxDepth = kMaxJsonDepth);

/// A size for messages: "10.0 GiB", "312 bytes".
std::string describeBytes(int64_t bytes);

} // namespace zrt

#endif // ZRT_INPUTFILE_H
