//===- ExternalData.cpp - ONNX external data, read safely -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/ExternalData.h"
#include "zrt/ParameterInputs.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace zrt;

bool zrt::parseNonNegative(const std::string &text, int64_t &out) {
  if (text.empty() || text.size() > 19)
    return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v))
      return false;
  }
  out = v;
  return true;
}

namespace {

/// realpath(3), or "" with errno set.
std::string realPath(const std::string &path) {
  char *r = ::realpath(path.c_str(), nullptr);
  if (!r)
    return "";
  std::string s(r);
  std::free(r);
  return s;
}

} // namespace

ExternalSpan zrt::resolveExternalData(const onnx::TensorProto &t,
                                      const std::string &baseDir,
                                      const std::string &what) {
  ZRT_CHECK(!hasNoValues(t),
            what << " has no values: the model was exported without its weights; give "
                    "them with --init CHECKPOINT (a save_pretrained folder) or generate "
                    "them with --random-init SEED");
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v;
      ZRT_CHECK(parseNonNegative(kv.value(), v),
                what << ": external data " << kv.key() << " '" << kv.value()
                     << "' is not a non-negative decimal integer");
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  ZRT_CHECK(!location.empty(), what << ": external data without a location");
  ZRT_CHECK(location[0] != '/', what << ": external data location '" << location
                                     << "' is an absolute path; it must be relative "
                                        "to the model's folder");
  std::string dir = baseDir.empty() ? "." : baseDir;
  std::string realDir = realPath(dir);
  ZRT_CHECK(!realDir.empty(), what << ": the model's folder '" << dir
                                   << "' cannot be resolved: " << std::strerror(errno));
  std::string path = dir + "/" + location;
  std::string real = realPath(path);
  ZRT_CHECK(!real.empty(), what << ": cannot open external data file '" << path
                                << "': " << std::strerror(errno));
  // Inside the folder, symbolic links followed: a link that points out is refused.
  std::string prefix = realDir == "/" ? "/" : realDir + "/";
  ZRT_CHECK(real.compare(0, prefix.size(), prefix) == 0,
            what << ": external data location '" << location << "' resolves to '"
                 << real << "', outside the model's folder '" << realDir << "'");
  InputFile f(real, what + ": external data file", INT64_MAX);
  int64_t size = f.size();
  if (length < 0)
    length = offset <= size ? size - offset : 0;
  ZRT_CHECK(offset <= size && length <= size - offset,
            what << ": external data of " << length << " bytes at offset " << offset
                 << " lies outside '" << path << "' (" << size << " bytes)");
  return ExternalSpan{path, real, offset, length};
}

void zrt::readExternalRange(const ExternalSpan &span, int64_t from, int64_t count,
                            char *out, const std::string &what) {
  ZRT_CHECK(from >= 0 && count >= 0 && from <= span.length && count <= span.length - from,
            what << ": bytes [" << from << ", " << from + count << ") lie outside its "
                 << span.length << " bytes of external data");
  InputFile f(span.real, what + ": external data file", INT64_MAX);
  // The file may have changed since it was resolved: a short read is an error.
  int64_t done = 0;
  while (done < count) {
    ssize_t n = ::pread(f.fd(), out + done, (size_t)(count - done),
                        span.offset + from + done);
    if (n < 0 && errno == EINTR)
      continue;
    ZRT_CHECK(n > 0, what << ": reading '" << span.path << "' failed: "
                          << (n < 0 ? std::strerror(errno) : "unexpected end of file"));
    done += n;
  }
}

std::string zrt::readExternalData(const onnx::TensorProto &t, const std::string &baseDir,
                                  const std::string &what) {
  ExternalSpan span = resolveExternalData(t, baseDir, what);
  std::string bytes((size_t)span.length, '\0');
  readExternalRange(span, 0, span.length, bytes.data(), what);
  return bytes;
}
