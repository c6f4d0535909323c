//===- CudaBinders.h - What the CUDA binders share -----------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Private to the CUDA backend: the helpers every binder uses (CudaBinders.cpp)
// and the binders of the families kept in files of their own, which the kernel
// table (CudaBinders.cpp's cudaKernels) calls.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CUDA_CUDABINDERS_H
#define ZRT_CUDA_CUDABINDERS_H

#include "CudaContext.h"
#include "CudaLaunch.h"

#include "../cpu/KernelUtil.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace zrt::cuda::binders {

using namespace zrt::cpu;

/// Binds the CPU kernel of the call's kind and drops it: the one check of every
/// shape, dtype and attribute, shared by both backends.
void validate(const KernelCall &call);
/// The CUDA kernels' element type of a plan dtype; fails for one they lack.
Elem elemOf(DType t);
/// An operand's elements as the strided kernels index them: extents of 1 dropped,
/// neighbours that step as one merged, 32-bit indexing where every offset fits.
Strided stridedOf(const KernelCall &call, const Shape &shape, const Shape &strides);

/// A device copy of a host array, freed with the closure that uses it.
template <typename T> std::shared_ptr<T> deviceArray(const std::vector<T> &host) {
  T *p = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(1, host.size()) * sizeof(T)));
  ZERO_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return std::shared_ptr<T>(p, [](T *q) { cudaFree(q); });
}

// Elementwise ops, casts, the fused kernels (generated at plan load),
// activation gradients (CudaElementwiseBinders.cpp).
BoundKernel bindBinary(const KernelCall &call, BinaryOp op);
BoundKernel bindPow(const KernelCall &call);
BoundKernel bindUnary(const KernelCall &call, UnaryOp op);
BoundKernel bindWhere(const KernelCall &call);
BoundKernel bindCast(const KernelCall &call);
BoundKernel bindFused(const KernelCall &call);
BoundKernel bindActivationGrad(const KernelCall &call, ActivationGrad op);

// Matrix products on cuBLASLt (CudaMatMulBinders.cpp).
BoundKernel bindMatMul(const KernelCall &call);

// Optimizers, gradient norms and the non-finite count (CudaOptimizerBinders.cpp).
BoundKernel bindNonfiniteCount(const KernelCall &call);
BoundKernel bindSumSquares(const KernelCall &call);
BoundKernel bindClipGradScale(const KernelCall &call);
BoundKernel bindOptimizer(const KernelCall &call, bool adam);
BoundKernel bindAdamW(const KernelCall &call);
BoundKernel bindSgd(const KernelCall &call);

// Collectives on NCCL, their start and wait, host transfers
// (CudaCollectiveBinders.cpp).
enum class Kind { AllGather, ReduceScatter, AllReduce };
BoundKernel bindCollective(const KernelCall &call, Kind kind);
BoundKernel bindStart(const KernelCall &call, Kind kind);
BoundKernel bindWait(const KernelCall &call);
BoundKernel bindAllSlice(const KernelCall &call);
BoundKernel bindTransfer(const KernelCall &call);

} // namespace zrt::cuda::binders

#endif // ZRT_CUDA_CUDABINDERS_H
