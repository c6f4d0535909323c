//===- Error.h - The runtime's one exception type --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_ERROR_H
#define ZRT_ERROR_H

#include <sstream>
#include <stdexcept>
#include <string>

namespace zrt {

/// Every runtime failure (bad plan, bad model, bad input, kernel error) is an Error
/// with a message that names the thing at fault; zero-run prints it and exits 1.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &what) : std::runtime_error(what) {}
};

/// A failure that every rank of a run found together (after agreeing on it in a
/// collective): each rank reports it and exits, none needs to end the others.
class AgreedError : public Error {
public:
  using Error::Error;
};

} // namespace zrt

/// Throws zrt::Error with a message built by streaming. The message is for the
/// user, so it names the plan, buffer or kernel at fault rather than a source line:
///   ZRT_CHECK(n >= 0, "buffer " << i << " has negative size " << n);
#define ZRT_CHECK(cond, msg)                                                      \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::ostringstream zrt_os_;                                                 \
      zrt_os_ << msg;                                                             \
      throw ::zrt::Error(zrt_os_.str());                                          \
    }                                                                             \
  } while (0)

#define ZRT_FAIL(msg) ZRT_CHECK(false, msg)

#endif // ZRT_ERROR_H
