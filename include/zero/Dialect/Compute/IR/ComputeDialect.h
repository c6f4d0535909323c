//===- ComputeDialect.h - The graph-level compute dialect --------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTEDIALECT_H
#define ZERO_DIALECT_COMPUTE_IR_COMPUTEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>
#include <optional>
#include <utility>

#include "zero/Dialect/Compute/IR/ComputeOpsDialect.h.inc"
#include "zero/Dialect/Compute/IR/ComputeInterfaces.h.inc"

#define GET_OP_CLASSES
#include "zero/Dialect/Compute/IR/ComputeOps.h.inc"

namespace zero::compute {

/// The ONNX (numpy) broadcast of two shapes, or failure if they do not broadcast.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// The value of `v` when a compute.constant of one float element defines it.
std::optional<double> scalarConstant(mlir::Value v);

/// An additive attention mask value at or below this hides its key exactly as
/// -inf does: exp of it relative to any realistic score is 0 in f32 and f64
/// (exporters write -1e9 or the float minimum).
constexpr double kAttentionHidden = -1e4;

/// Whether `count` mask values (element k read by `at`; the leading dimensions
/// repeat one [tq, tk] block, as exporters repeat it per sample) are the causal
/// mask: key j hidden from query i exactly when j > i. Additive: 0 where kept,
/// at most kAttentionHidden where hidden; boolean (0 or 1): true where kept.
bool isCausalMask(int64_t count, int64_t tq, int64_t tk, bool additive,
                  llvm::function_ref<double(int64_t)> at);

/// Checks that `axis` names a dimension of a rank-`rank` operand (0 for a scalar):
/// "axis A is out of range for rank R".
mlir::LogicalResult verifyAxis(mlir::Operation *op, int64_t axis, int64_t rank);

/// Whether `bias` adds one value per column of a `result` (a linear layer's):
/// [N] or ones then N, N the result's last dimension, of its element type.
bool isColumnBias(mlir::ShapedType bias, mlir::ShapedType result);

/// Checks the operands the cross-entropy ops share: `scores` (named `scoresName`)
/// of rank >= 2 as [N, C, ...], labels of its shape without dimension 1, weights
/// of shape [C], a known reduction and `perPosition` (the loss, or its gradient,
/// named `name`) of the labels' shape for `none` and a scalar otherwise.
mlir::LogicalResult verifyCrossEntropy(mlir::Operation *op, mlir::ShapedType scores,
                                       llvm::StringRef scoresName, mlir::Value labels,
                                       mlir::Value weights, llvm::StringRef reduction,
                                       mlir::ShapedType perPosition, llvm::StringRef name);

/// Checks, for slice and slice_grad, that `part` taken from `full` at `starts`
/// with `steps` stays inside `full` (per dimension; an empty one is always inside),
/// and that no step is zero. `op` reports the error: "dimension D `outside`".
mlir::LogicalResult verifySliceWindow(mlir::Operation *op, mlir::ShapedType full,
                                      mlir::ShapedType part,
                                      llvm::ArrayRef<int64_t> starts,
                                      llvm::ArrayRef<int64_t> steps,
                                      llvm::StringRef outside);

/// An op a compute.fused body may hold: an elementwise op the fused kernel runs
/// (add, sub, mul, div, pow, the float unary ops, cast, where, relu_grad,
/// gelu_grad) on f32,
/// bf16 or f16 values (an i1 condition for where).
bool isFusableElementwise(mlir::Operation *op);

/// A compute.constant of one element of a float type: a fused body holds it as
/// an immediate instead of reading a tensor.
bool isScalarFloatConstant(mlir::Operation *op);

/// The value of `v` when it is a compute.constant splat of `elementType` whose
/// value is finite (a scale a kernel can take as an attribute); nothing otherwise.
std::optional<double> finiteSplatOf(mlir::Value v, mlir::Type elementType);

/// The operands of a commutative op in both orders, {lhs, rhs} then {rhs, lhs}: a
/// pattern that wants one operand of a kind tries each.
inline std::array<std::pair<mlir::Value, mlir::Value>, 2> bothOrders(mlir::Value lhs,
                                                                     mlir::Value rhs) {
  return {{{lhs, rhs}, {rhs, lhs}}};
}

/// The result shape of numpy.matmul on the two shapes, or failure.
mlir::FailureOr<llvm::SmallVector<int64_t>>
matmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

} // namespace zero::compute

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTEDIALECT_H
