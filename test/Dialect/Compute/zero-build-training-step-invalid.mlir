// RUN: not %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step)' --split-input-file 2>&1 | FileCheck %s
// RUN: not %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step{loss=nope})' --split-input-file 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step{freeze=(})' --split-input-file 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step{optimizer=lion})' --split-input-file 2>&1 | FileCheck %s --check-prefix=OPT

// CHECK: error: the model has 2 scalar float outputs (a, b); name the loss with --loss NAME
// NAME: error: --loss names 'nope', which is not an output
// REGEX: error: --freeze '(' is not a valid regular expression
// OPT: error: --optimizer=lion is not supported (adamw or sgd)
func.func @main(%w: tensor<2xf32> {compute.param = "w"}) -> (tensor<f32>, tensor<f32>)
    attributes {compute.output_names = ["a", "b"]} {
  %0 = compute.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %0, %0 : tensor<f32>, tensor<f32>
}

// -----

// CHECK: error: no trainable parameters (float initializers that are not frozen and not matched by --freeze)
func.func @main(%x: tensor<2xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %0 = compute.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK: error: the loss does not depend on any trainable parameter
func.func @main(%w: tensor<2xf32> {compute.param = "w"}, %x: tensor<2xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %0 = compute.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK: error: 'compute.layer_norm' op has no gradient through its mean and inv_std_dev results
func.func @main(%x: tensor<2x4xf32> {compute.param = "x"}, %g: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %0 = compute.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x1xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK: error: 'compute.relu_grad' op has no gradient rule, but the loss depends on it through a trainable parameter
func.func @main(%x: tensor<4xf32> {compute.param = "x"}) -> tensor<f32> {
  %0 = compute.relu_grad %x, %x : tensor<4xf32>
  %1 = compute.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
