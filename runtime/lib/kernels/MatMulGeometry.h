//===- MatMulGeometry.h - One matmul call as GEMMs --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What both backends' matmul binders share: the checks of a matmul call and the
// GEMMs it is made of. Each backend only runs the GEMMs (OpenBLAS, cuBLAS).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_KERNELS_MATMULGEOMETRY_H
#define ZRT_LIB_KERNELS_MATMULGEOMETRY_H

#include "zrt/Kernels.h"

#include <cstdint>
#include <vector>

namespace zrt::kernels {

/// C_i = op(A_i) op(B_i), row-major, for each i: A_i starts aOffsets[i] * m * k
/// elements into the lhs, B_i bOffsets[i] * k * n into the rhs, and C_i i * m * n
/// into the result.
struct MatMulGeometry {
  bool transposeA = false, transposeB = false;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> aOffsets, bOffsets;
  int64_t batches() const { return (int64_t)aOffsets.size(); }
  /// Whether the offsets step by one fixed amount (a broadcast one: 0); -1 if not.
  static int64_t uniformStride(const std::vector<int64_t> &offsets);
};

/// numpy.matmul's geometry for `call` (1-D operands promoted to matrices, batch
/// dimensions broadcast; `transpose_lhs` / `transpose_rhs` say an operand is stored
/// with its last two dimensions swapped), checked: shapes, dtypes, the result's
/// shape. Consecutive row-major lhs matrices times one rhs become one GEMM of
/// batches * m rows (a linear layer over [batch, sequence, features] is one
/// product, not one per sample).
MatMulGeometry matMulGeometry(const KernelCall &call);

} // namespace zrt::kernels

#endif // ZRT_LIB_KERNELS_MATMULGEOMETRY_H
