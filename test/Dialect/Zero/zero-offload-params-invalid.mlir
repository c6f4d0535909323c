// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-offload-params)' --verify-diagnostics

// Nothing to offload: a step that gathers no parameter slice (stages 0-2, or every
// parameter under the persistence threshold).
// expected-error@+1 {{parameter offload: the step gathers no parameter slice}}
func.func @main(%w: tensor<4xf32> {compute.param = "w"}, %x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
  %y = compute.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
