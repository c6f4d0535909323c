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

// -----

// A bias gradient (the column sums of G) beside its weight gradient (G's rows
// collapsed, transposed, times X): the product gives both, where it was. The
// residual's gradient accumulation (an addend) stays with it.
// CHECK-LABEL: func.func @bias_gradient
// CHECK-NOT: reduce_sum
// CHECK: %[[DW:.+]], %[[DB:.+]] = compute.fused_matmul %{{.+}}, %{{.+}} addend(%arg2 : tensor<16x8xbf16>) : tensor<16x8xbf16>, tensor<8x8xbf16> -> tensor<16x8xbf16>, tensor<16xbf16>
// CHECK-NEXT: return %[[DW]], %[[DB]]
func.func @bias_gradient(%g: tensor<2x4x16xbf16>, %x: tensor<8x8xbf16>, %acc: tensor<16x8xbf16>) -> (tensor<16x8xbf16>, tensor<16xbf16>) {
  %db = compute.reduce_sum %g {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4x16xbf16> -> tensor<16xbf16>
  %g2 = compute.reshape %g : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %gt = compute.transpose %g2 {perm = array<i64: 1, 0>} : tensor<8x16xbf16> -> tensor<16x8xbf16>
  %p = compute.matmul %gt, %x : tensor<16x8xbf16>, tensor<8x8xbf16> -> tensor<16x8xbf16>
  %dw = compute.add %p, %acc : tensor<16x8xbf16>, tensor<16x8xbf16> -> tensor<16x8xbf16>
  return %dw, %db : tensor<16x8xbf16>, tensor<16xbf16>
}

// -----

// Left alone: column sums read before the product runs, sums over some leading
// axes only, sums kept as [1, N], and a product that reads G untransposed.
// CHECK-LABEL: func.func @sums_left_alone
// CHECK-COUNT-3: compute.reduce_sum
// CHECK-NOT: fused_matmul
func.func @sums_left_alone(%g: tensor<2x4x16xf32>, %x: tensor<8x8xf32>, %y: tensor<16x8xf32>) -> (tensor<16xf32>, tensor<16x8xf32>, tensor<4x16xf32>, tensor<1x16xf32>, tensor<8x8xf32>) {
  %db = compute.reduce_sum %g {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4x16xf32> -> tensor<16xf32>
  %early = compute.mul %db, %db : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %g2 = compute.reshape %g : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %gt = compute.transpose %g2 {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %p = compute.matmul %gt, %x : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  %some = compute.reduce_sum %g {axes = array<i64: 0>, keepdims = false} : tensor<2x4x16xf32> -> tensor<4x16xf32>
  %kept = compute.reduce_sum %g2 {axes = array<i64: 0>, keepdims = true} : tensor<8x16xf32> -> tensor<1x16xf32>
  %q = compute.matmul %g2, %y : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  return %early, %p, %some, %kept, %q : tensor<16xf32>, tensor<16x8xf32>, tensor<4x16xf32>, tensor<1x16xf32>, tensor<8x8xf32>
}

// -----

// A 2-D G: its column sums join the product that reads it transposed.
// CHECK-LABEL: func.func @bias_gradient_of_matrix
// CHECK-NEXT: %[[T:.+]] = compute.transpose
// CHECK-NEXT: %{{.+}}, %{{.+}} = compute.fused_matmul %[[T]], %arg1 : tensor<16x8xf32>, tensor<8x4xf32> -> tensor<16x4xf32>, tensor<16xf32>
func.func @bias_gradient_of_matrix(%g: tensor<8x16xf32>, %x: tensor<8x4xf32>) -> (tensor<16x4xf32>, tensor<16xf32>) {
  %gt = compute.transpose %g {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %p = compute.matmul %gt, %x : tensor<16x8xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %db = compute.reduce_sum %g {axes = array<i64: 0>, keepdims = false} : tensor<8x16xf32> -> tensor<16xf32>
  return %p, %db : tensor<16x4xf32>, tensor<16xf32>
}
