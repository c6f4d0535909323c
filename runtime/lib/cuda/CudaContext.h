//===- CudaContext.h - The process's GPU: streams, cuBLASLt, NCCL -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CUDACONTEXT_H
#define ZRT_LIB_CUDA_CUDACONTEXT_H

#include "CudaLaunch.h"
#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/Kernels.h"

#include <cublasLt.h>
#include <cudnn.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

/// Errors from CUDA, cuBLASLt and NCCL name the call, file and line.
#define ZERO_CUDA_CHECK(call)                                                       \
  do {                                                                              \
    cudaError_t zero_rc_ = (call);                                                  \
    ZRT_CHECK(zero_rc_ == cudaSuccess, #call << " failed at " << __FILE__ << ":"    \
                                             << __LINE__ << ": "                    \
                                             << cudaGetErrorString(zero_rc_));      \
  } while (0)
#define ZERO_CUBLAS_CHECK(call)                                                     \
  do {                                                                              \
    cublasStatus_t zero_rc_ = (call);                                               \
    ZRT_CHECK(zero_rc_ == CUBLAS_STATUS_SUCCESS,                                    \
              #call << " failed at " << __FILE__ << ":" << __LINE__                 \
                    << ": cuBLAS status " << (int)zero_rc_);                        \
  } while (0)
#define ZERO_NCCL_CHECK(call)                                                       \
  do {                                                                              \
    ncclResult_t zero_rc_ = (call);                                                 \
    ZRT_CHECK(zero_rc_ == ncclSuccess, #call << " failed at " << __FILE__ << ":"    \
                                             << __LINE__ << ": "                    \
                                             << ncclGetErrorString(zero_rc_));      \
  } while (0)

namespace zrt::cuda {

class GeneratedKernels;

/// The one GPU a process (rank) drives. Kernels run on `compute`, collectives on
/// `comm`; events order the two where the plan's data flows between them.
struct Context {
  int ordinal = 0;
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaStream_t copy = nullptr; // host <-> device copies of an offloaded optimizer
  std::vector<cudaEvent_t> copyEvents; // owned: the copies' and fences' events
  cublasLtHandle_t blasLt = nullptr;
  void *gemmWorkspace = nullptr; // cuBLASLt's, for the compute stream's GEMMs
  size_t gemmWorkspaceBytes = 0;
  Scratch scratch; // the compute stream's kernels' (column sums' partial sums)
  bool allowTf32 = false; // f32 GEMMs may round their operands to TF32
  bool cudnnAttention = true; // 16-bit attention on cuDNN where it takes it
  cudnnHandle_t dnn = nullptr; // made by the first attention planned on cuDNN
  void *attentionWorkspace = nullptr; // cuDNN attention's, grown when one is bound
  size_t attentionWorkspaceBytes = 0;
  std::vector<void *> retiredWorkspaces; // outgrown, freed with the device
  /// The quantized collectives' messages sent and received, and an all-reduce's
  /// sums: one set for all of them (they run one at a time on `comm`), grown as
  /// their kernels are bound.
  Scratch quantizeSent, quantizeReceived, quantizeSums;
  ncclComm_t nccl = nullptr;
  /// NCCL communicators of the groups of ranks (hybrid sharding, hpZ), split from
  /// `nccl`, by the host communicator that binds their collectives.
  std::map<const Communicator *, ncclComm_t> groupNccl;
  // Another rank's thread may abort (and so free) `nccl` while this rank enqueues a
  // collective: both hold ncclMutex, and nothing uses `nccl` once ncclAborted.
  std::mutex ncclMutex;
  std::atomic<bool> ncclAborted{false};
  int ranks = 1;
  int *errorFlag = nullptr; // set by kernels that find bad data
  cudaEvent_t ready = nullptr, doneSync = nullptr;
  // The fused programs' own kernels (null: the interpreter kernel runs them).
  std::shared_ptr<GeneratedKernels> generated;
  std::vector<cudaEvent_t> done; // per collective request
  /// The kernels bound off their fast path, by what they fell back to (a cuDNN
  /// attention on the project's kernels, a GELU or bias gradient outside the
  /// GEMM's epilogue, a fused program on the interpreter kernel): said in one line
  /// once the plan is bound (each reason's first case is said when bound).
  std::map<std::string, int> fallbacks;
};

/// The context of this process's CUDA device (made by makeCudaDevice).
Context &context();

/// A new event that `ctx` owns (destroyed with it): the offload copies' and fences'.
inline cudaEvent_t ownedEvent(Context &ctx) {
  cudaEvent_t e = nullptr;
  ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  ctx.copyEvents.push_back(e);
  return e;
}

/// The CUDA kernel table (validation shared with the CPU table).
const KernelTable &cudaKernels();

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CUDACONTEXT_H
