//===- CudaDevice.cpp - A GPU as the plan's device ------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "zrt/Communicator.h"
#include "zrt/Device.h"

using namespace zrt;
using namespace zrt::cuda;

namespace {

Context *current = nullptr;

class CudaDevice final : public Device {
public:
  CudaDevice(int ordinal, Communicator &host) {
    ZRT_CHECK(!current, "only one CUDA device per process");
    ctx_.ordinal = ordinal;
    ZERO_CUDA_CHECK(cudaSetDevice(ordinal));
    ZERO_CUDA_CHECK(cudaStreamCreate(&ctx_.compute));
    ZERO_CUDA_CHECK(cudaStreamCreate(&ctx_.comm));
    ZERO_CUBLAS_CHECK(cublasCreate(&ctx_.blas));
    ZERO_CUBLAS_CHECK(cublasSetStream(ctx_.blas, ctx_.compute));
    // fp32 GEMMs stay fp32 (no TF32): parity with the CPU backend comes first.
    ZERO_CUBLAS_CHECK(cublasSetMathMode(ctx_.blas, CUBLAS_DEFAULT_MATH));
    ZERO_CUDA_CHECK(cudaMalloc(&ctx_.errorFlag, sizeof(int)));
    ZERO_CUDA_CHECK(cudaMemset(ctx_.errorFlag, 0, sizeof(int)));
    ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&ctx_.ready, cudaEventDisableTiming));
    ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&ctx_.doneSync, cudaEventDisableTiming));
    // NCCL over the host communicator's ranks: rank 0 makes the unique id and the
    // host communicator (MPI under mpirun) hands it to the others.
    ctx_.ranks = host.size();
    ncclUniqueId id;
    if (host.rank() == 0)
      ZERO_NCCL_CHECK(ncclGetUniqueId(&id));
    host.broadcast(&id, sizeof(id));
    ZERO_NCCL_CHECK(ncclCommInitRank(&ctx_.nccl, host.size(), id, host.rank()));
    name_ = "cuda:" + std::to_string(ordinal);
    current = &ctx_;
  }
  ~CudaDevice() override {
    cudaStreamSynchronize(ctx_.compute);
    cudaStreamSynchronize(ctx_.comm);
    for (cudaEvent_t e : ctx_.done)
      cudaEventDestroy(e);
    cudaEventDestroy(ctx_.ready);
    cudaEventDestroy(ctx_.doneSync);
    if (ctx_.nccl)
      ncclCommDestroy(ctx_.nccl);
    cublasDestroy(ctx_.blas);
    cudaFree(ctx_.errorFlag);
    cudaStreamDestroy(ctx_.comm);
    cudaStreamDestroy(ctx_.compute);
    current = nullptr;
  }
  std::string name() const override { return name_; }
  void *allocate(size_t bytes) override {
    void *p = nullptr;
    ZERO_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    ZERO_CUDA_CHECK(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
  }
  void release(void *memory) override { cudaFree(memory); }
  void upload(void *device, const void *host, size_t bytes) override {
    ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.compute));
    ZERO_CUDA_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void *host, const void *device, size_t bytes) override {
    synchronize();
    ZERO_CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  void synchronize() override {
    ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.compute));
    ZERO_CUDA_CHECK(cudaStreamSynchronize(ctx_.comm));
    int flag = 0;
    ZERO_CUDA_CHECK(cudaMemcpy(&flag, ctx_.errorFlag, sizeof(int), cudaMemcpyDeviceToHost));
    if (flag) {
      ZERO_CUDA_CHECK(cudaMemset(ctx_.errorFlag, 0, sizeof(int)));
      ZRT_FAIL("a kernel on " << name_
                              << " found an index or label out of range (a token "
                                 "id beyond the vocabulary?)");
    }
  }
  const KernelTable &kernels() const override { return cudaKernels(); }

private:
  Context ctx_;
  std::string name_;
};

} // namespace

Context &zrt::cuda::context() {
  ZRT_CHECK(current, "no CUDA device is active");
  return *current;
}

bool zrt::cudaBackendBuilt() { return true; }

int zrt::cudaDeviceCount() {
  int n = 0;
  // No driver or no GPU is not an error here: the caller falls back to the CPU.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Device> zrt::makeCudaDevice(int ordinal, Communicator &host) {
  int n = cudaDeviceCount();
  ZRT_CHECK(ordinal >= 0 && ordinal < n,
            "GPU " << ordinal << " is not present (" << n << " visible)");
  return std::make_unique<CudaDevice>(ordinal, host);
}
