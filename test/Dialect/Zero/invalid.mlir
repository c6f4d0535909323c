// RUN: zero-opt %s --split-input-file --verify-diagnostics

func.func @gather_size(%x: tensor<4xf32>) {
  // expected-error@+1 {{result size must be a multiple of the input size}}
  %p, %t = zero.all_gather_start %x : tensor<4xf32> -> tensor<10xf32>
  return
}

// -----

func.func @scatter_size(%x: tensor<10xf32>) {
  // expected-error@+1 {{input size must be a multiple of the result size}}
  %p, %t = zero.reduce_scatter_start %x : tensor<10xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_size(%x: tensor<10xf32>) {
  // expected-error@+1 {{input and result sizes differ}}
  %p, %t = zero.all_reduce_start %x : tensor<10xf32> -> tensor<4xf32>
  return
}

// -----

func.func @flat(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{works on flat (1-D) tensors}}
  %p, %t = zero.all_reduce_start %x : tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @types(%x: tensor<4xf32>) {
  // expected-error@+1 {{input and result element types differ}}
  %p, %t = zero.all_reduce_start %x : tensor<4xf32> -> tensor<4xf64>
  return
}

// -----

func.func @wrong_pending(%x: tensor<4xf32>, %y: tensor<16xf32>) {
  %p, %t = zero.all_gather_start %x : tensor<4xf32> -> tensor<16xf32>
  // expected-error@+1 {{pending value must be its start's result}}
  %0 = zero.wait %t, %y : tensor<16xf32>
  return
}

// -----

func.func @twice(%x: tensor<4xf32>) {
  %p, %t = zero.all_gather_start %x : tensor<4xf32> -> tensor<16xf32>
  // expected-error@+1 {{a token is waited for exactly once}}
  %0 = zero.wait %t, %p : tensor<16xf32>
  %1 = zero.wait %t, %p : tensor<16xf32>
  return
}

// -----

func.func @not_a_start(%t: !zero.token, %p: tensor<16xf32>) {
  // expected-error@+1 {{token must come from a zero.*_start op}}
  %0 = zero.wait %t, %p : tensor<16xf32>
  return
}
