//===- MatMulGeometry.h - One matmul call as GEMMs --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What both backends' matmul binders share: the checks of a matmul call and the
// GEMMs it is made of. Each backend only runs the GEMMs (OpenBLAS, cuBLASLt).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_MATMULGEOMETRY_H
#define ZRT_LIB_KERNELS_MATMULGEOMETRY_H

#include "zrt/Kernels.h"

#include <cstdint>
#include <vector>

namespace zrt::kernels {

/// One operand of the GEMMs: the tensor it is read from (or written to), where
/// each product's matrix starts in it (elements), its leading dimension, and
/// whether BLAS reads it transposed (a column-major matrix).
struct GemmOperand {
  int tensor = 0; // an input (0: lhs, 1: rhs) or, for C, output 0
  bool transpose = false;
  int64_t ld = 1;
  std::vector<int64_t> offsets;
};

/// C_i = op(A_i) op(B_i), row-major, for each product i; with an epilogue,
/// C_i = op(A_i) op(B_i) + bias + addend_i, each product starting its
/// accumulator from addend + bias.
struct MatMulGeometry {
  int64_t m = 0, n = 0, k = 0;
  GemmOperand a, b, c;
  /// The epilogue's inputs (indices into the call's inputs, -1: none): `bias`,
  /// n values added to every row; `addend`, the result's shape, read as C lies.
  int bias = -1, addend = -1;
  /// Output 1 when the call also gives lhs_sums (a 2-D product, no result view:
  /// m values, each row of op(A) summed over k); -1 when not.
  int lhsSums = -1;
  /// `activation = "gelu_tanh"`: with `preActivation` (output 1), C = GELU(P) and
  /// the output holds P = op(A) op(B) + bias; with `activationInput` (an input),
  /// C = gelu_tanh_grad(that input, op(A) op(B)). Both lie as C does (no views).
  bool geluTanh = false;
  int preActivation = -1, activationInput = -1;
  int64_t batches() const { return (int64_t)c.offsets.size(); }
  /// Whether the offsets step by one fixed amount from the first (a broadcast
  /// one: 0); -1 if not.
  static int64_t uniformStride(const std::vector<int64_t> &offsets);
  /// The products in consecutive groups of `size`, within each of which A, B and
  /// C step by fixed strides (the same in every group): a strided-batched call
  /// per group. The largest such size.
  struct Groups {
    int64_t size = 1, strideA = 0, strideB = 0, strideC = 0;
  };
  Groups uniformGroups() const;
};

/// numpy.matmul's geometry for `call` (1-D operands promoted to matrices, batch
/// dimensions broadcast), checked: shapes, dtypes, the result's shape.
/// An operand is its tensor as it lies, or a strided view of it:
///  - `transpose_lhs` / `transpose_rhs`: the tensor with its last two dimensions
///    swapped;
///  - `lhs_shape`, `lhs_strides`, `lhs_offset` (and rhs_..., out_...): element
///    (i...) of the operand is element offset + sum(i_d strides_d) of the tensor
///    (a head split or merge, a slice, read or written in place). A view must
///    stay inside its tensor, its matrices must be BLAS layouts (one of the last
///    two strides 1), and the result's view must cover its tensor once.
/// With `operand_segments` [1, 1, b, a] (or [1, 1, b, a, g]) the inputs after lhs
/// and rhs are a bias (b = 1: [n], or ones then n), an addend (a = 1: the result's
/// shape) and an activation's input (g = 1: the result's shape), of the result's
/// dtype; then the result is no view. A second output is lhs_sums ([m], of 2-D
/// operands: a bias gradient beside its weight gradient), or with `activation`
/// "gelu_tanh" and no activation input, the pre-activation (the result's shape).
/// Consecutive row-major lhs matrices times one rhs become one GEMM of batches *
/// m rows (a linear layer over [batch, sequence, features] is one product, not
/// one per sample); a column-major result is computed as C^T = B^T A^T.
MatMulGeometry matMulGeometry(const KernelCall &call);

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_MATMULGEOMETRY_H
