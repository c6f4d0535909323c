// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-offload-nvme{optimizer=true})' --verify-diagnostics

// Nothing in host memory to move: NVMe offload follows the host offload passes.
// expected-error@+1 {{NVMe offload: the step holds no optimizer state in host memory to move (it follows --offload-param=cpu or --offload-optimizer=cpu)}}
func.func @main(%w: tensor<4xf32> {compute.state = "w.exp_avg"}, %x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
  %y = compute.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
