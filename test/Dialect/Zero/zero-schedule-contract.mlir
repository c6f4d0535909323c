// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-schedule)' | FileCheck %s

// Splitting keeps each collective's contract (grid, axes, reduction kind), and
// only ZeRO's own sums fuse: a max-reduction next to a sum stays apart, so the
// lowering can refuse it instead of running it as a sum.
shard.grid @zero(shape = 2)
// CHECK-LABEL: func.func @main
// CHECK: zero.reduce_scatter_start %{{.+}} on @zero grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<4xf32>
// CHECK: zero.reduce_scatter_start %{{.+}} on @zero grid_axes = [0] : tensor<8xf32> -> tensor<4xf32>
func.func @main(%a: tensor<8xf32> {compute.input = 0 : i64}, %b: tensor<8xf32> {compute.input = 1 : i64}) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = shard.reduce_scatter %a on @zero grid_axes = [0] reduction = max scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  %1 = shard.reduce_scatter %b on @zero grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
