// RUN: %mlir_opt_zero %s --split-input-file --verify-diagnostics

shard.grid @zero(shape = 4)

func.func @gather_size(%x: tensor<4xf32>) {
  // expected-error@+1 {{result size must be a multiple of the input size}}
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<10xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @scatter_size(%x: tensor<10xf32>) {
  // expected-error@+1 {{input size must be a multiple of the result size}}
  %p, %t = zero.reduce_scatter_start %x on @zero grid_axes = [0] : tensor<10xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @reduce_size(%x: tensor<10xf32>) {
  // expected-error@+1 {{input and result sizes differ}}
  %p, %t = zero.all_reduce_start %x on @zero grid_axes = [0] : tensor<10xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @flat(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{works on flat (1-D) tensors}}
  %p, %t = zero.all_reduce_start %x on @zero grid_axes = [0] : tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @types(%x: tensor<4xf32>) {
  // expected-error@+1 {{input and result element types differ}}
  %p, %t = zero.all_reduce_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<4xf64>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @wrong_pending(%x: tensor<4xf32>, %y: tensor<16xf32>) {
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  // expected-error@+1 {{pending value must be its start's result}}
  %0 = zero.wait %t, %y : tensor<16xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @twice(%x: tensor<4xf32>) {
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  // expected-error@+1 {{a token is waited for exactly once}}
  %0 = zero.wait %t, %p : tensor<16xf32>
  %1 = zero.wait %t, %p : tensor<16xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @not_a_start(%t: !zero.token, %p: tensor<16xf32>) {
  // expected-error@+1 {{token must come from a zero.*_start op}}
  %0 = zero.wait %t, %p : tensor<16xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @no_grid(%x: tensor<4xf32>) {
  // expected-error@+1 {{grid @elsewhere is not a shard.grid in scope}}
  %p, %t = zero.all_gather_start %x on @elsewhere grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  return
}

// -----

shard.grid @zero(shape = 4)

func.func @axis_out_of_range(%x: tensor<16xf32>) {
  // expected-error@+1 {{grid axis 1 is not an axis of grid @zero (rank 1)}}
  %p, %t = zero.reduce_scatter_start %x on @zero grid_axes = [1] : tensor<16xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @mesh(shape = 2x2)

func.func @axis_twice(%x: tensor<16xf32>) {
  // expected-error@+1 {{grid axis 0 appears twice}}
  %p, %t = zero.all_reduce_start %x on @mesh grid_axes = [0, 0] : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

// The zero.* attributes are declared in ZeroAttributes.cpp and verified.
func.func @phase_not_a_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'zero.phase' (the bucket whose gather an op waits for) must be a non-empty string, not 1 : i64}}
  %r = compute.relu %x {zero.phase = 1 : i64} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @stage_on_an_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'zero.stage' (the ZeRO stage) belongs on the module, not on 'compute.relu'}}
  %r = compute.relu %x {zero.stage = 3 : i64} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @misspelled(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown zero dialect attribute 'zero.recomputed'}}
  %r = compute.relu %x {zero.recomputed} : tensor<4xf32>
  return %r : tensor<4xf32>
}
