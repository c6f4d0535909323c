// RUN: zero-opt %s --split-input-file --zero-fuse-matmul-epilogue | FileCheck %s

// A linear layer's bias, then the residual added after it: one product that
// starts from them, where the last add was.
// CHECK-LABEL: func.func @bias_then_residual
// CHECK-NEXT: %[[Y:.+]] = compute.fused_matmul %arg0, %arg1 bias(%arg2 : tensor<16xbf16>) addend(%arg3 : tensor<2x4x16xbf16>) : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @bias_then_residual(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>, %r: tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16> {
  %p = compute.matmul %x, %w : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %h = compute.add %p, %b : tensor<2x4x16xbf16>, tensor<16xbf16> -> tensor<2x4x16xbf16>
  %y = compute.add %r, %h : tensor<2x4x16xbf16>, tensor<2x4x16xbf16> -> tensor<2x4x16xbf16>
  return %y : tensor<2x4x16xbf16>
}

// -----

// The bias on the left, as [1, N]; no residual.
// CHECK-LABEL: func.func @bias_left
// CHECK-NEXT: %[[Y:.+]] = compute.fused_matmul %arg0, %arg1 bias(%arg2 : tensor<1x16xf32>) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
func.func @bias_left(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<1x16xf32>) -> tensor<4x16xf32> {
  %p = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %y = compute.add %b, %p : tensor<1x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A residual alone (a layer without bias).
// CHECK-LABEL: func.func @residual_only
// CHECK-NEXT: %[[Y:.+]] = compute.fused_matmul %arg0, %arg1 addend(%arg2 : tensor<4x16xf32>) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
func.func @residual_only(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %p = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %y = compute.add %p, %r : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Left alone: a product another op reads too, a row bias (per row, not per
// column), and an add that broadcasts the product.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: fused_matmul
func.func @left_alone(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %c: tensor<4x1xf32>, %r: tensor<2x4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>) {
  %p = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %y = compute.add %p, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %q = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %z = compute.add %q, %c : tensor<4x16xf32>, tensor<4x1xf32> -> tensor<4x16xf32>
  %s = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %t = compute.add %s, %r : tensor<4x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
  return %p, %y, %z, %t : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>
}
