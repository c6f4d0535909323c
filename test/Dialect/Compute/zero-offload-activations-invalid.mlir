// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-offload-activations)' --verify-diagnostics

// A step whose backward reads nothing from forward (here: no backward at all).
// expected-error@+1 {{activation offload: the step's backward reads no activation from its forward}}
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %s = compute.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
