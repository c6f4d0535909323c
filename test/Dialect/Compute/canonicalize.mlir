// RUN: zero-opt %s --canonicalize --split-input-file | FileCheck %s

// A transpose that undoes another one folds away, and so does an identity one.
// CHECK-LABEL: func.func @double_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NOT: compute.transpose
// CHECK: return %[[X]], %[[X]]
func.func @double_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = compute.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = compute.transpose %0 {perm = array<i64: 1, 2, 0>} : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  %2 = compute.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %1, %2 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Two transposes that do not cancel stay.
// CHECK-LABEL: func.func @kept
// CHECK: compute.transpose
// CHECK: compute.transpose
func.func @kept(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = compute.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = compute.transpose %0 {perm = array<i64: 0, 2, 1>} : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}
