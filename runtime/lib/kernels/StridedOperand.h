//===- StridedOperand.h - A kernel operand read through a view ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// How a plan gives a kernel's operand as a strided view of its buffer (NAME_shape,
// NAME_strides, NAME_offset): the matmul's operands and result, attention's
// (zplan/AttentionViews.h). Checked here once for both.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_STRIDEDOPERAND_H
#define ZRT_LIB_KERNELS_STRIDEDOPERAND_H

#include "zrt/Kernels.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zrt::kernels {

/// An operand as a kernel reads it: its shape and, per dimension, how many
/// elements of its tensor one step along it moves; `offset`: where element 0 is.
struct StridedOperand {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  void swapLastTwo() {
    size_t r = shape.size();
    std::swap(shape[r - 1], shape[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
  }
};

/// Operand `name` of `call` (a matmul's "lhs", "rhs", "out"; attention's names),
/// over tensor `t`: the tensor
/// itself, its last two dimensions swapped (transpose_NAME), or a view
/// (NAME_shape, NAME_strides, NAME_offset) checked to stay inside it.
StridedOperand stridedOperandOf(const KernelCall &call, const std::string &name,
                                const TensorView &t);

/// Whether a view a kernel writes covers its tensor once: as many
/// elements as the tensor, and no two at the same place (each stride, in
/// increasing order, is past every element the smaller ones reach).
bool coversOnce(const StridedOperand &v, int64_t numel);

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_STRIDEDOPERAND_H
