//===- Communicator.h - Collectives among the ranks of a run ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_COMMUNICATOR_H
#define ZRT_COMMUNICATOR_H

#include "zrt/BlockQuantization.h"
#include "zrt/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zrt {

/// The collectives a plan uses, on flat buffers; every rank calls them in the same
/// order (the plan guarantees it). Counts are per rank unless said otherwise.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  /// out[r * count .. (r+1) * count) = rank r's in[0 .. count).
  virtual void allGather(const void *in, void *out, int64_t count, DType t) = 0;
  /// out = the sum over ranks of in[rank * count .. (rank+1) * count).
  virtual void reduceScatterSum(const void *in, void *out, int64_t count, DType t) = 0;
  /// out = the sum over ranks of in, count elements.
  virtual void allReduceSum(const void *in, void *out, int64_t count, DType t) = 0;
  /// Personalized exchange: rank p receives in[p * bytes .. (p+1) * bytes), and
  /// out[r * bytes ..] is what rank r sent this rank. `in` and `out` do not
  /// overlap. Not counted as a plan collective (its callers count).
  virtual void allToAllBytes(const void *in, void *out, size_t bytes) = 0;
  /// Rank 0 receives every rank's `count` elements, in rank order.
  virtual void gatherToRoot(const void *in, void *out, int64_t count, DType t) = 0;
  /// The mean over ranks of one double (for logging).
  virtual double meanOf(double v) = 0;
  /// Every rank's value, on rank 0 (others get their own only).
  virtual std::vector<int64_t> gatherInts(int64_t v) = 0;
  /// Every rank's value, on every rank (for what the ranks must agree on; not
  /// counted as a plan collective).
  virtual std::vector<int64_t> allGatherInts(int64_t v) = 0;
  /// Rank 0's `bytes` at `data` to every rank (NCCL's unique id, say).
  virtual void broadcast(void *data, size_t bytes) = 0;
  /// The ranks that pass the same `color`, as a communicator of their own,
  /// ordered by `key` (equal keys: by rank here). Every rank calls it, in the same
  /// order as its other collectives. The group uses this communicator's
  /// connections and lives no longer than it.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  /// Called by a rank that failed (`why`: its error): ranks that can see it
  /// (threads of this process, TCP peers) stop waiting in collectives and fail
  /// too, instead of hanging.
  virtual void abort(const std::string &why = {}) {}

  /// Full-tensor elements moved by plan collectives so far, per kind (what the
  /// compiler's report predicts): an all-gather counts its output, a
  /// reduce-scatter its input, an all-reduce its buffer.
  int64_t allGatherElements = 0, reduceScatterElements = 0, allReduceElements = 0;
  /// What the quantized collectives (qwZ, qgZ) lost and sent so far.
  QuantizationError quantization;
};

/// One rank, no launcher: every collective is a copy.
std::unique_ptr<Communicator> makeLocalCommunicator();

/// `ranks` communicators for ranks that are threads of this process, one each;
/// collectives go through shared memory and sum in rank order.
std::vector<std::unique_ptr<Communicator>> makeThreadCommunicators(int ranks);

/// The ranks of an `mpirun` launch (MPI_COMM_WORLD), or null when this process was
/// not started by an MPI launcher (then MPI is never initialized).
std::unique_ptr<Communicator> makeMpiCommunicatorIfLaunched(int *argc, char ***argv);

} // namespace zrt

#endif // ZRT_COMMUNICATOR_H
