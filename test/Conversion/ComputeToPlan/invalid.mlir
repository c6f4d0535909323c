// RUN: not %mlir_opt_zero %s --pass-pipeline='builtin.module(convert-compute-to-plan)' --split-input-file 2>&1 | FileCheck %s

// CHECK: error: no func.func @main to lower
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// CHECK: error: argument 0 is not a compute.param, compute.master, compute.state, compute.runtime or compute.input
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = compute.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: error: cannot lower 'arith.addf' to the plan: only compute ops and shard collectives are supported
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: error: result 0's 'compute.updates' names argument 5 of 1
func.func @main(%x: tensor<4xf32> {compute.param = "x"}) -> (tensor<4xf32> {compute.updates = 5 : i64}) {
  %0 = compute.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Split-phase collectives keep their contract, and the lowering checks it: the
// runtime only sums, over the 1-D grid of the ranks or one axis of a 2-D
// [groups, group size] grid of them (hybrid sharding).
// CHECK: error: only sum reductions are supported
shard.grid @zero(shape = 1)
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
  %p, %t = zero.reduce_scatter_start %x on @zero grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  %0 = zero.wait %t, %p : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: error: collective on grid @other, which is neither a 1-D grid of the 1 ranks the plan is compiled for nor a 2-D grid [groups, group size] of them
shard.grid @zero(shape = 1)
shard.grid @other(shape = 2)
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<8xf32> {
  %p, %t = zero.all_gather_start %x on @other grid_axes = [0] : tensor<4xf32> -> tensor<8xf32>
  %0 = zero.wait %t, %p : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A 2-D grid of another world size, and an axis order the runtime has no group for.
// CHECK: error: collective on grid @zero, which is neither a 1-D grid of the 1 ranks the plan is compiled for nor a 2-D grid [groups, group size] of them
shard.grid @zero(shape = 2x2)
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<8xf32> {
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [1] : tensor<4xf32> -> tensor<8xf32>
  %0 = zero.wait %t, %p : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK: error: only sum reductions are supported
shard.grid @zero(shape = 1)
func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
  %0 = shard.all_reduce %x on @zero grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
