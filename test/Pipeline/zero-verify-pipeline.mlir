// RUN: zero-opt %s --split-input-file --zero-verify-pipeline --verify-diagnostics | FileCheck %s

// What the pipeline's passes leave passes: collectives each waited for once, a
// plan whose buffers do not overlap while alive.
// CHECK-LABEL: func.func @scheduled
shard.grid @zero(shape = 4)
func.func @scheduled(%x: tensor<4xf32>) -> tensor<16xf32> {
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  %0 = zero.wait %t, %p : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

shard.grid @zero(shape = 4)
func.func @never_waited(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{started collective is not waited for exactly once (0 uses of its token)}}
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  return %x : tensor<4xf32>
}

// -----

// Once the schedule has placed split-phase collectives, a shard collective left
// beside them was missed.
shard.grid @zero(shape = 4)
func.func @left_over(%x: tensor<4xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  %0 = zero.wait %t, %p : tensor<16xf32>
  // expected-error @below {{a shard collective is left after the collective schedule}}
  %1 = shard.all_gather %x on @zero grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<16xf32>
  return %0, %1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// all_slice moves no data (each rank keeps its part of a replicated value): the
// schedule leaves it, as stages 1 and 2 do for the parameters' owned slices.
// CHECK-LABEL: func.func @owned_slice
shard.grid @zero(shape = 4)
func.func @owned_slice(%x: tensor<4xf32>, %w: tensor<16xf32>) -> (tensor<16xf32>, tensor<4xf32>) {
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  %0 = zero.wait %t, %p : tensor<16xf32>
  %1 = shard.all_slice %w on @zero grid_axes = [0] slice_axis = 0 : tensor<16xf32> -> tensor<4xf32>
  return %0, %1 : tensor<16xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: plan.program @main
plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64, name = "x"} : memref<2x4xf32>
  %y = plan.buffer temp at 32 : memref<2x4xf32>
  plan.kernel softmax ins(%x : memref<2x4xf32>) outs(%y : memref<2x4xf32>) attrs {axis = 1 : i64}
  plan.return %y : memref<2x4xf32> {names = ["probs"]}
}

// -----

// Two temporaries over the same bytes while both are alive: the runtime's own
// checks refuse the plan, and so does the pipeline.
// expected-error @below {{internal error, the plan fails zero-run's checks}}
plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64, name = "x"} : memref<2x4xf32>
  %y = plan.buffer temp at 32 : memref<2x4xf32>
  %z = plan.buffer temp at 48 : memref<2x4xf32>
  plan.kernel softmax ins(%x : memref<2x4xf32>) outs(%y : memref<2x4xf32>) attrs {axis = 1 : i64}
  plan.kernel softmax ins(%y : memref<2x4xf32>) outs(%z : memref<2x4xf32>) attrs {axis = 1 : i64}
  plan.return %z : memref<2x4xf32> {names = ["probs"]}
}
