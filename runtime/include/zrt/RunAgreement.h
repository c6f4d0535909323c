//===- RunAgreement.h - What every rank of a run must agree on -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Ranks launched by mpirun each get their own command line. Ranks given different
// plans, initial weights, data, data order, step counts or checkpoint settings
// would train a silent mix of two runs, or wait for each other in collectives one
// of them never calls. Before anything runs, the ranks exchange a value per thing
// that must agree (a number, or a hash of what a file holds) and stop, each with
// the same message naming the first rank that differs from rank 0 and how.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_RUNAGREEMENT_H
#define ZRT_RUNAGREEMENT_H

#include "zrt/Communicator.h"

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zrt {

/// One thing the ranks must agree on: `what` names it ("--steps"); `value` is a
/// hash of it (a plan, a file's contents), or the thing itself: a number (a
/// count, a seed) or a flag given or not, printed as such in the message.
struct AgreedValue {
  enum Kind { Hash, Number, Flag };
  std::string what;
  int64_t value;
  Kind kind = Hash;
};

/// Every rank calls it with the same list (same order, same names); returns when
/// every rank's values equal rank 0's, else throws zrt::AgreedError on every rank
/// naming the first rank and value that differ.
void agreeAcrossRanks(Communicator &comm, const std::vector<AgreedValue> &values);

/// A 64-bit hash of `bytes` bytes at `data`, eight bytes at a step (FNV-1a's
/// multiply on words): for comparing large files quickly, not a checksum format.
uint64_t contentHash(const void *data, size_t bytes, uint64_t seed = 0);

/// A hash of every initializer of `model` (names, types, shapes and values,
/// external data read from `modelDir` unless `externalBytes` is false): what a
/// run's initial weights are.
uint64_t initializerFingerprint(const onnx::ModelProto &model, const std::string &modelDir,
                                bool externalBytes = true);

} // namespace zrt

#endif // ZRT_RUNAGREEMENT_H
