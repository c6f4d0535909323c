// RUN: %mlir_opt_zero %s --split-input-file --verify-diagnostics

func.func @matmul_inside(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = compute.fused ins(%x : tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{cannot be part of a compute.fused body}}
    %m = compute.matmul %a, %a : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    compute.yield %m : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @f64(%x: tensor<4xf64>) -> tensor<4xf64> {
  %r = compute.fused ins(%x : tensor<4xf64>) -> tensor<4xf64> {
  ^bb0(%a: tensor<4xf64>):
    // expected-error @+1 {{cannot be part of a compute.fused body}}
    %e = compute.exp %a : tensor<4xf64>
    compute.yield %e : tensor<4xf64>
  }
  return %r : tensor<4xf64>
}

// -----

func.func @wrong_yield(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{yields 'tensor<4xf32>' for a result of type 'tensor<4xbf16>'}}
  %r = compute.fused ins(%x : tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xf32>):
    %e = compute.exp %a : tensor<4xf32>
    compute.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xbf16>
}

// -----

func.func @nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body computes nothing}}
  %r = compute.fused ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    compute.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @arguments(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body has 1 arguments for 2 inputs}}
  %r = compute.fused ins(%x, %y : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = compute.exp %a : tensor<4xf32>
    compute.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
