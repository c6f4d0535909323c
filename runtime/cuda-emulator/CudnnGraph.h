//===- CudnnGraph.h - The emulated cuDNN's operation graphs -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: the tensors and operations of a finalized operation graph, as
// Cudnn.cpp interprets them and CudnnSdpaReference.cpp checks them.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_CUDNNGRAPH_H
#define ZERO_CUDA_EMULATOR_CUDNNGRAPH_H

#include "cudnn.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zero_cuda_emulator::detail {

struct Tensor {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  int64_t uid = 0, alignment = 0;
  bool isVirtual = false, byValue = false;
  bool operator==(const Tensor &o) const {
    return type == o.type && dims == o.dims && strides == o.strides && uid == o.uid &&
           isVirtual == o.isVirtual && byValue == o.byValue;
  }
};

enum class OpKind { Pointwise, Matmul, Reduction, Reshape };
struct Op {
  OpKind kind;
  int64_t mode = 0; // pointwise mode or reduction operator
  int64_t axis = 0; // GEN_INDEX
  std::vector<Tensor> ins;
  Tensor out;
};

struct Graph {
  std::vector<Op> ops;                 // in an order that runs (producers first)
  std::map<int64_t, Tensor> boundary;  // the non-virtual tensors, by uid
};

/// Why the heuristic offers no engine for `g`: an attention graph (its first
/// matmul takes two 16-bit tensors the caller gives) whose matmuls' operands do
/// not have the data types and virtuality cudnn-frontend gives the same SDPA; ""
/// for a graph that matches, or that is not an attention.
std::string sdpaReferenceMismatch(const Graph &g);

} // namespace zero_cuda_emulator::detail

#endif // ZERO_CUDA_EMULATOR_CUDNNGRAPH_H
