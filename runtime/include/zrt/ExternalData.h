//===- ExternalData.h - ONNX external data, read safely --------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Shared by the compiler (integer constants it folds) and the runtime (parameter
// values): one reading of ONNX's external-data rules, one set of checks.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_EXTERNALDATA_H
#define ZRT_EXTERNALDATA_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace zrt {

/// Parses a decimal integer that fits int64 and is not negative: digits only, no
/// sign, no spaces. False otherwise.
bool parseNonNegative(const std::string &text, int64_t &out);

/// The bytes of tensor `t`'s external data: `length` bytes (or to the end of the
/// file) at `offset` of the file `location` names, relative to `baseDir`, the
/// model's folder. The file's real path (symbolic links resolved) must lie inside
/// the folder's real path and be a regular file; offset and length must be
/// decimal integers and lie inside it. Throws zrt::Error naming `what` (e.g.
/// "initializer 'w'") and the problem.
std::string readExternalData(const onnx::TensorProto &t, const std::string &baseDir,
                             const std::string &what);

/// Where a tensor's external data lies, checked as readExternalData checks it:
/// `path` as the model names it (for messages), `real` resolved.
struct ExternalSpan {
  std::string path, real;
  int64_t offset = 0, length = 0;
};
ExternalSpan resolveExternalData(const onnx::TensorProto &t, const std::string &baseDir,
                                 const std::string &what);
/// Reads bytes [from, from + count) of the span into `out`: a sharded start reads
/// only its rank's slice of a tensor. Throws naming `what` if the range lies
/// outside the span or the file ends early.
void readExternalRange(const ExternalSpan &span, int64_t from, int64_t count, char *out,
                       const std::string &what);

} // namespace zrt

#endif // ZRT_EXTERNALDATA_H
