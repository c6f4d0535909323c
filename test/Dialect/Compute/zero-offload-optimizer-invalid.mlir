// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-offload-optimizer)' --verify-diagnostics

// Nothing to offload: a step without an optimizer update.
// expected-error@+1 {{optimizer offload: the step has no optimizer update (adamw or sgd) to run on the host}}
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
  %y = compute.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
