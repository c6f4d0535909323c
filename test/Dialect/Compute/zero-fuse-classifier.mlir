// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-fuse-classifier)' --split-input-file | FileCheck %s

// The loss and the gradient of its log-probabilities become one op where the
// loss was; the seed's ops (made after the forward, reading nothing of it) move
// before it, and the f32 log-probabilities of the 16-bit scores are gone.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[S:[a-z0-9]+]]: tensor<8x16xbf16>, %[[L:[a-z0-9]+]]: tensor<8xi64>, %[[SCALE:[a-z0-9]+]]: tensor<f32>)
// CHECK-NEXT: %[[H:.+]] = compute.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[SEED:.+]] = compute.mul %[[SCALE]], %[[H]]
// CHECK-NEXT: %[[LOSS:.+]], %[[DS:.+]] = compute.softmax_cross_entropy_with_grad %[[S]], %[[L]], %[[SEED]] {reduction = "mean", zero.micro_phase = 0 : i64} : tensor<8x16xbf16>, tensor<8xi64>, tensor<f32> -> tensor<f32>, tensor<8x16xbf16>
// CHECK-NEXT: return %[[LOSS]], %[[DS]]
func.func @step(%s: tensor<8x16xbf16>, %l: tensor<8xi64>, %scale: tensor<f32>) -> (tensor<f32>, tensor<8x16xbf16>) {
  %loss, %logp = compute.softmax_cross_entropy %s, %l {reduction = "mean", zero.micro_phase = 0 : i64} : tensor<8x16xbf16>, tensor<8xi64> -> tensor<f32>, tensor<8x16xf32>
  %half = compute.constant dense<5.000000e-01> : tensor<f32>
  %seed = compute.mul %scale, %half : tensor<f32>, tensor<f32> -> tensor<f32>
  %ds = compute.softmax_cross_entropy_grad %logp, %l, %seed {reduction = "mean"} : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xbf16>
  return %loss, %ds : tensor<f32>, tensor<8x16xbf16>
}

// -----

// Another reader of the log-probabilities needs them: left as it is.
// CHECK-LABEL: func.func @log_prob_read
// CHECK: compute.softmax_cross_entropy %
// CHECK: compute.softmax_cross_entropy_grad
// CHECK-NOT: with_grad
func.func @log_prob_read(%s: tensor<8x16xf32>, %l: tensor<8xi64>, %g: tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %loss, %logp = compute.softmax_cross_entropy %s, %l {reduction = "sum"} : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x16xf32>
  %ds = compute.softmax_cross_entropy_grad %logp, %l, %g {reduction = "sum"} : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xf32>
  return %logp, %ds : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// A loss gradient computed from the loss itself cannot come first: left as it is.
// CHECK-LABEL: func.func @grad_of_loss
// CHECK: compute.softmax_cross_entropy %
// CHECK: compute.softmax_cross_entropy_grad
// CHECK-NOT: with_grad
func.func @grad_of_loss(%s: tensor<8x16xf32>, %l: tensor<8xi64>) -> tensor<8x16xf32> {
  %loss, %logp = compute.softmax_cross_entropy %s, %l {reduction = "mean"} : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x16xf32>
  %g = compute.mul %loss, %loss : tensor<f32>, tensor<f32> -> tensor<f32>
  %ds = compute.softmax_cross_entropy_grad %logp, %l, %g {reduction = "mean"} : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xf32>
  return %ds : tensor<8x16xf32>
}

// -----

// Per-position losses with an ignored label and class weights: their gradient
// per position comes along.
// CHECK-LABEL: func.func @none_weighted
// CHECK-NEXT: %[[LOSS:.+]], %[[DS:.+]] = compute.softmax_cross_entropy_with_grad %arg0, %arg1, %arg3 weights %arg2 {ignore_index = 3 : i64, reduction = "none"}
// CHECK-NEXT: return %[[LOSS]], %[[DS]]
func.func @none_weighted(%s: tensor<2x4x3xf32>, %l: tensor<2x3xi64>, %w: tensor<4xf32>, %g: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x4x3xf32>) {
  %loss, %logp = compute.softmax_cross_entropy %s, %l weights %w {ignore_index = 3 : i64, reduction = "none"} : tensor<2x4x3xf32>, tensor<2x3xi64>, tensor<4xf32> -> tensor<2x3xf32>, tensor<2x4x3xf32>
  %ds = compute.softmax_cross_entropy_grad %logp, %l, %g weights %w {ignore_index = 3 : i64, reduction = "none"} : tensor<2x4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<4xf32> -> tensor<2x4x3xf32>
  return %loss, %ds : tensor<2x3xf32>, tensor<2x4x3xf32>
}
