// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-fuse-matmul-epilogue)' --split-input-file | FileCheck %s

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

// -----

// GELU's tanh form after a linear layer joins its product, which keeps the
// pre-activation for the gradient; the gradient's gelu_tanh_grad joins the
// product that gives the GELU output's gradient, reading that pre-activation.
// CHECK-LABEL: func.func @gelu_tanh_forward_and_gradient
// CHECK-NEXT: %[[G:.+]], %[[P:.+]] = compute.fused_matmul %arg0, %arg1 bias(%arg2 : tensor<16xbf16>) {activation = "gelu_tanh"} : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16> pre_activation(tensor<2x4x16xbf16>)
// CHECK-NEXT: %[[DP:.+]] = compute.fused_matmul %arg3, %arg4 activation_input(%[[P]] : tensor<2x4x16xbf16>) {activation = "gelu_tanh"} : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
// CHECK-NEXT: return %[[G]], %[[DP]]
func.func @gelu_tanh_forward_and_gradient(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>, %dy: tensor<2x4x8xbf16>, %w2: tensor<8x16xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>) {
  %p = compute.matmul %x, %w : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %h = compute.add %p, %b : tensor<2x4x16xbf16>, tensor<16xbf16> -> tensor<2x4x16xbf16>
  %g = compute.gelu_tanh %h : tensor<2x4x16xbf16>
  %dg = compute.matmul %dy, %w2 : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %dh = compute.gelu_tanh_grad %h, %dg : tensor<2x4x16xbf16>
  return %g, %dh : tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
}

// -----

// Left alone: a GELU after a residual add (no product), the exact (erf) GELU
// (cuBLASLt's epilogue is the tanh form), and a gradient whose product another
// op also reads.
// CHECK-LABEL: func.func @gelu_left_alone
// CHECK: compute.gelu_tanh %
// CHECK: compute.gelu %
// CHECK: compute.gelu_tanh_grad
func.func @gelu_left_alone(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %p = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %s = compute.add %p, %r : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %g = compute.gelu_tanh %s : tensor<4x16xf32>
  %q = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %e = compute.gelu %q : tensor<4x16xf32>
  %dg = compute.matmul %dy, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %dh = compute.gelu_tanh_grad %r, %dg : tensor<4x16xf32>
  return %g, %e, %dh, %dg : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Through a reshape, as Hugging Face's GPT-2 writes its linear layers (a product
// over [batch * sequence, features] viewed as [batch, sequence, features]): the
// fused products keep the 2-D shape and reshapes (views) give the 3-D values.
// CHECK-LABEL: func.func @gelu_tanh_through_reshapes
// CHECK-NEXT: %[[G:.+]], %[[P:.+]] = compute.fused_matmul %arg0, %arg1 bias(%arg2 : tensor<16xf32>) {activation = "gelu_tanh"} : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32> pre_activation(tensor<8x16xf32>)
// CHECK-NEXT: %[[P3:.+]] = compute.reshape %[[P]] : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[G3:.+]] = compute.reshape %[[G]] : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[P2:.+]] = compute.reshape %[[P3]] : tensor<2x4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[DP:.+]] = compute.fused_matmul %arg3, %arg4 activation_input(%[[P2]] : tensor<8x16xf32>) {activation = "gelu_tanh"} : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[DP3:.+]] = compute.reshape %[[DP]] : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[G3]], %[[DP3]]
func.func @gelu_tanh_through_reshapes(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x4xf32>, %w2: tensor<4x16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %p = compute.matmul %x, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %h = compute.add %p, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %h3 = compute.reshape %h : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %g = compute.gelu_tanh %h3 : tensor<2x4x16xf32>
  %dg = compute.matmul %dy, %w2 : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %dg3 = compute.reshape %dg : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %dh = compute.gelu_tanh_grad %h3, %dg3 : tensor<2x4x16xf32>
  return %g, %dh : tensor<2x4x16xf32>, tensor<2x4x16xf32>
}
