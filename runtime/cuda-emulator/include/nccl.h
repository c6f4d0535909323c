//===- nccl.h - NCCL's collectives, emulated on the host ----------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: the ranks of a communicator are threads of one process (each
// driving its own emulated GPU); a collective runs when every rank's stream
// reaches it, and ranks that disagree on the collective (kind, count, type) are a
// fatal error instead of NCCL's hang. See cuda_runtime.h.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_NCCL_H
#define ZERO_CUDA_EMULATOR_NCCL_H

#include "cuda_runtime.h"

enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
};
enum ncclDataType_t {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
};
enum ncclRedOp_t { ncclSum = 0 };

struct ncclComm;
using ncclComm_t = ncclComm *;
struct ncclUniqueId {
  char internal[128];
};

const char *ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ranks, const int *devices);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
/// Stops the communicator's pending and future collectives (they return without
/// data) and frees it; the other ranks' collectives on the same clique stop too.
ncclResult_t ncclCommAbort(ncclComm_t comm);
/// Options of a new communicator: the emulator takes none (null is NCCL's default).
struct ncclConfig_t {};
#define NCCL_SPLIT_NOCOLOR -1
/// Every rank of `comm` calls it: those passing the same `color` get a communicator
/// of their own, ranked by `key` (then by rank); NCCL_SPLIT_NOCOLOR gets none.
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config);
ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendCount,
                           ncclDataType_t type, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvCount,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/// NCCL 2.28's: rank r receives `count` elements from every rank p at
/// recv + p * count, what p sent from its send + r * count.
ncclResult_t ncclAlltoAll(const void *send, void *recv, size_t count, ncclDataType_t type,
                          ncclComm_t comm, cudaStream_t stream);

#endif // ZERO_CUDA_EMULATOR_NCCL_H
