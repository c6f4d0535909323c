//===- MpiCommunicator.cpp - Collectives over MPI -------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The plan's collectives are MPI's non-blocking ones (MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Iallreduce), completed by MPI_Wait on the
// communication thread that AsyncCollectives runs, so they progress while the
// compute thread works.
//
//===----------------------------------------------------------------------===//

#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/Watchdog.h"

// The C API only: the deprecated MPI C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>

using namespace zrt;

/// Turns an MPI error code into a zrt::Error naming the call, file and line.
#define ZERO_MPI_CHECK(call)                                                        \
  do {                                                                              \
    int zero_mpi_rc_ = (call);                                                      \
    if (zero_mpi_rc_ != MPI_SUCCESS) {                                              \
      char zero_mpi_msg_[MPI_MAX_ERROR_STRING];                                     \
      int zero_mpi_len_ = 0;                                                        \
      MPI_Error_string(zero_mpi_rc_, zero_mpi_msg_, &zero_mpi_len_);                \
      ZRT_FAIL(#call << " failed at " << __FILE__ << ":" << __LINE__ << ": "        \
                     << std::string(zero_mpi_msg_, zero_mpi_len_));                 \
    }                                                                               \
  } while (0)

namespace {

MPI_Datatype mpiType(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return MPI_FLOAT;
  case zero::zplan::F64:
    return MPI_DOUBLE;
  case zero::zplan::I64:
    return MPI_INT64_T;
  case zero::zplan::I32:
    return MPI_INT32_T;
  case zero::zplan::BF16:
  case zero::zplan::F16:
    return MPI_UINT16_T; // moved as bits; summed by sum16Op below
  case zero::zplan::U8:
    return MPI_UINT8_T; // bytes: the quantized collectives' wire form
  default:
    ZRT_FAIL("no MPI datatype for " << dtypeName(t));
  }
}

/// MPI has no 16-bit float types: their sums are user-defined operations that
/// widen each pair to f32, add and round once.
template <typename H> void sum16(void *in, void *inout, int *len, MPI_Datatype *) {
  const H *a = static_cast<const H *>(in);
  H *b = static_cast<H *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = H((float)a[i] + (float)b[i]);
}
MPI_Op sumOp(DType t) {
  static MPI_Op bf16Sum = MPI_OP_NULL, f16Sum = MPI_OP_NULL;
  if (t == zero::zplan::BF16) {
    if (bf16Sum == MPI_OP_NULL)
      ZERO_MPI_CHECK(MPI_Op_create(&sum16<bf16>, /*commute=*/1, &bf16Sum));
    return bf16Sum;
  }
  if (t == zero::zplan::F16) {
    if (f16Sum == MPI_OP_NULL)
      ZERO_MPI_CHECK(MPI_Op_create(&sum16<f16>, /*commute=*/1, &f16Sum));
    return f16Sum;
  }
  return MPI_SUM;
}

/// MPI counts are int: large buckets are split into pieces that fit.
constexpr int64_t kMaxCount = 1 << 30;

class MpiCommunicator final : public Communicator {
public:
  /// MPI_COMM_WORLD (finalized with this communicator), or a group of it.
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    ZERO_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    ZERO_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~MpiCommunicator() override {
    if (comm_ == MPI_COMM_WORLD)
      MPI_Finalize();
    else
      MPI_Comm_free(&comm_);
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm group;
    WatchedWait watched(rank_, "a split of the ranks into groups");
    ZERO_MPI_CHECK(MPI_Comm_split(comm_, color, key, &group));
    return std::make_unique<MpiCommunicator>(group);
  }
  /// A failed rank ends the whole job: the others may be waiting for it inside a
  /// collective, where nothing else would reach them.
  void abort(const std::string &) override { MPI_Abort(MPI_COMM_WORLD, 1); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override {
    return std::string(comm_ == MPI_COMM_WORLD ? "MPI (" : "MPI group (") +
           std::to_string(size_) + " ranks)";
  }

  void allGather(const void *in, void *out, int64_t count, DType t) override {
    ZRT_CHECK(count <= kMaxCount, "all-gather of " << count << " elements per rank "
                                                   << "exceeds MPI's int counts");
    MPI_Request request;
    ZERO_MPI_CHECK(MPI_Iallgather(in, (int)count, mpiType(t), out, (int)count,
                                  mpiType(t), comm_, &request));
    wait(request, "an all-gather");
    allGatherElements += count * size_;
  }
  void reduceScatterSum(const void *in, void *out, int64_t count, DType t) override {
    ZRT_CHECK(count <= kMaxCount, "reduce-scatter of " << count << " elements per "
                                                       << "rank exceeds MPI's int counts");
    MPI_Request request;
    ZERO_MPI_CHECK(MPI_Ireduce_scatter_block(in, out, (int)count, mpiType(t), sumOp(t),
                                             comm_, &request));
    wait(request, "a reduce-scatter");
    reduceScatterElements += count * size_;
  }
  void allReduceSum(const void *in, void *out, int64_t count, DType t) override {
    int64_t size = dtypeSize(t);
    for (int64_t done = 0; done < count; done += kMaxCount) {
      int n = (int)std::min(kMaxCount, count - done);
      const char *src = static_cast<const char *>(in) + done * size;
      char *dst = static_cast<char *>(out) + done * size;
      MPI_Request request;
      ZERO_MPI_CHECK(MPI_Iallreduce(src == dst ? MPI_IN_PLACE : src, dst, n, mpiType(t),
                                    sumOp(t), comm_, &request));
      wait(request, "an all-reduce");
    }
    allReduceElements += count;
  }
  void allToAllBytes(const void *in, void *out, size_t bytes) override {
    ZRT_CHECK(bytes <= (size_t)kMaxCount, "all-to-all of " << bytes << " bytes per rank "
                                                          << "exceeds MPI's int counts");
    MPI_Request request;
    ZERO_MPI_CHECK(MPI_Ialltoall(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, comm_,
                                 &request));
    wait(request, "an all-to-all");
  }
  void gatherToRoot(const void *in, void *out, int64_t count, DType t) override {
    ZRT_CHECK(count <= kMaxCount, "gather of " << count << " elements per rank "
                                               << "exceeds MPI's int counts");
    WatchedWait watched(rank_, "a gather to rank 0");
    ZERO_MPI_CHECK(MPI_Gather(in, (int)count, mpiType(t), out, (int)count, mpiType(t), 0,
                              comm_));
  }
  double meanOf(double v) override {
    double sum = 0;
    WatchedWait watched(rank_, "the mean of the loss over ranks");
    ZERO_MPI_CHECK(MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, comm_));
    return sum / size_;
  }
  void broadcast(void *data, size_t bytes) override {
    WatchedWait watched(rank_, "a broadcast from rank 0");
    ZERO_MPI_CHECK(MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, comm_));
  }
  std::vector<int64_t> gatherInts(int64_t v) override {
    std::vector<int64_t> all(size_);
    WatchedWait watched(rank_, "a gather to rank 0");
    ZERO_MPI_CHECK(
        MPI_Gather(&v, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, 0, comm_));
    return rank_ == 0 ? all : std::vector<int64_t>{v};
  }

  std::vector<int64_t> allGatherInts(int64_t v) override {
    std::vector<int64_t> all(size_);
    WatchedWait watched(rank_, "the ranks' agreement");
    ZERO_MPI_CHECK(MPI_Allgather(&v, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T,
                                 comm_));
    return all;
  }

private:
  /// Completes a non-blocking collective, under the watchdog.
  void wait(MPI_Request &request, const char *what) {
    WatchedWait watched(rank_, what);
    ZERO_MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

} // namespace

std::unique_ptr<Communicator> zrt::makeMpiCommunicatorIfLaunched(int *argc,
                                                                 char ***argv) {
  // Only a process that mpirun (or another PMI launcher) started joins MPI: a plain
  // single-rank run needs no launcher.
  bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                  std::getenv("PMIX_RANK");
  if (!launched)
    return nullptr;
  // Started collectives run on a communication thread while the compute thread
  // waits or computes: never two threads in MPI at once.
  int provided = 0;
  ZRT_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) == MPI_SUCCESS,
            "MPI_Init_thread failed");
  ZRT_CHECK(provided >= MPI_THREAD_SERIALIZED,
            "this MPI does not support MPI_THREAD_SERIALIZED");
  return std::make_unique<MpiCommunicator>();
}
