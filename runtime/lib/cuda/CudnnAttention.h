//===- CudnnAttention.h - Fused attention as cuDNN graphs ---------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// cuDNN 9 runs scaled dot-product attention as one fused (flash) kernel when its
// operation graph has the shape its runtime-fusion engines recognize: the one
// cudnn-frontend's SDPA nodes build for cuDNN before 9.21, whose unified SDPA
// operation has no causal mask. This file builds that graph with the backend API,
// forward (O and the log-sum-exp "Stats", the same f32 [batch, heads, rows] the
// project's kernels keep) and backward (dQ, dK, dV), over the plan's tensors
// where they are: strided heads, K and V read transposed by strides alone.
//
// It takes bf16 and fp16 attention with heads of 8..128 (multiples of 8), grouped
// key/value heads or not, with no mask or a causal one, and 16-byte aligned
// operands. Everything else, and any graph that no engine accepts, is
// refused with the reason, and the caller runs the project's own kernels.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CUDNNATTENTION_H
#define ZRT_LIB_CUDA_CUDNNATTENTION_H

#include "CudaLaunch.h"

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

namespace zrt::cuda {

/// One attention's cuDNN execution plan (forward or backward).
class CudnnAttention {
public:
  /// The operands, in this order: forward q, k, v, out, lse; backward q, k, v,
  /// out, lse, dout, dq, dk, dv. Each is the tensor's base pointer (the shape's
  /// layouts add their offsets).
  static constexpr int kForwardOperands = 5, kBackwardOperands = 9;

  /// Why cuDNN's graph cannot express this attention ("" when it can): the
  /// element type, mask, head size or alignment.
  static std::string unsupported(Elem t, const AttentionShape &a,
                                 const std::vector<const void *> &operands);
  /// Builds and plans the graph; null with the reason (cuDNN missing, or no
  /// engine for the graph: cuDNN's own message) in `why`.
  static std::unique_ptr<CudnnAttention> make(cudnnHandle_t handle, Elem t,
                                              const AttentionShape &a, bool grad,
                                              const std::vector<const void *> &operands,
                                              std::string &why);
  ~CudnnAttention();

  /// What run needs as workspace: the engine's and (backward) the graph's own f32
  /// row sums and dQ accumulator.
  size_t workspaceBytes() const { return workspace_; }
  /// Queues the plan on the handle's stream with `workspace` (device memory of
  /// workspaceBytes(), 256-byte aligned); throws zrt::Error on a cuDNN error.
  void run(cudnnHandle_t handle, void *workspace);

  struct Plan; // an execution plan, shared by attentions of the same shapes

private:
  CudnnAttention() = default;
  std::shared_ptr<Plan> plan_;
  cudnnBackendDescriptor_t pack_ = nullptr; // the variant pack, made at the first run
  void *packWorkspace_ = nullptr;           // the workspace pack_ was made for
  std::vector<int64_t> uids_;
  std::vector<void *> pointers_; // by uid: device operands, host scalars
  std::vector<std::pair<size_t, size_t>> workspaceTensors_; // (index, workspace offset)
  size_t workspace_ = 0;
  float scale_ = 1, negInf_ = 0, one_ = 1; // the by-value scalars' host values
};

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CUDNNATTENTION_H
