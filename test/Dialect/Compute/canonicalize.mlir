// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(canonicalize)' --split-input-file | FileCheck %s

// A transpose that undoes another one folds away, and so does an identity one.
// CHECK-LABEL: func.func @double_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NOT: compute.transpose
// CHECK: return %[[X]], %[[X]]
func.func @double_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = compute.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = compute.transpose %0 {perm = array<i64: 1, 2, 0>} : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  %2 = compute.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %1, %2 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Two transposes that do not cancel stay.
// CHECK-LABEL: func.func @kept
// CHECK: compute.transpose
// CHECK: compute.transpose
func.func @kept(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = compute.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = compute.transpose %0 {perm = array<i64: 0, 2, 1>} : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// -----

// The gradients of the three parts of a split, placed into zero tensors and
// summed, are one concatenation (in window order, whatever the order of the adds).
// CHECK-LABEL: func.func @split_grad
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4xf32>, %[[K:.+]]: tensor<2x4xf32>, %[[V:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[C:.+]] = compute.concat %[[Q]], %[[K]], %[[V]] {axis = 1 : i64}
// CHECK-NEXT: return %[[C]]
func.func @split_grad(%q: tensor<2x4xf32>, %k: tensor<2x4xf32>, %v: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %gv = compute.slice_grad %v {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %gk = compute.slice_grad %k {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %gq = compute.slice_grad %q {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %0 = compute.add %gv, %gk : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %1 = compute.add %0, %gq : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %1 : tensor<2x12xf32>
}

// -----

// Not a concatenation: windows that leave a gap, windows that overlap, a partial
// sum that is read elsewhere too, steps of 2.
// CHECK-LABEL: func.func @not_split_grad
// CHECK-NOT: compute.concat
// CHECK: return
func.func @not_split_grad(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %c: tensor<2x4xf32>)
    -> (tensor<2x12xf32>, tensor<2x8xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x8xf32>) {
  %g0 = compute.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %g1 = compute.slice_grad %b {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %gap = compute.add %g0, %g1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %h0 = compute.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x8xf32>
  %h1 = compute.slice_grad %b {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x8xf32>
  %overlap = compute.add %h0, %h1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %p0 = compute.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %p1 = compute.slice_grad %b {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %p2 = compute.slice_grad %c {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %partial = compute.add %p0, %p1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %whole = compute.add %partial, %p2 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %s0 = compute.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 2>} : tensor<2x4xf32> -> tensor<2x8xf32>
  %s1 = compute.slice_grad %b {starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<2x4xf32> -> tensor<2x8xf32>
  %strided = compute.add %s0, %s1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %gap, %overlap, %whole, %partial, %strided : tensor<2x12xf32>, tensor<2x8xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x8xf32>
}

// -----

// Attention's scale times the softmax gradient is the gradient's scale; a
// gradient read elsewhere too, or a factor that is not a constant, stays a mul.
// CHECK-LABEL: func.func @scaled_softmax_grad
// CHECK: %[[S:.+]] = compute.softmax_grad %{{.+}}, %{{.+}} {axis = 1 : i64, scale = 1.250000e-01 : f64} : tensor<2x4xf32>
// CHECK-NEXT: %[[K:.+]] = compute.softmax_grad
// CHECK-NOT: scale
// CHECK-NEXT: compute.mul %[[K]]
// CHECK-NEXT: compute.softmax_grad
// CHECK-NOT: scale
// CHECK-NEXT: compute.mul
// CHECK-NEXT: return %[[S]]
func.func @scaled_softmax_grad(%y: tensor<2x4xf32>, %g: tensor<2x4xf32>, %f: tensor<f32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %c = compute.constant dense<0.125> : tensor<f32>
  %0 = compute.softmax_grad %y, %g {axis = 1 : i64} : tensor<2x4xf32>
  %1 = compute.mul %c, %0 : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %2 = compute.softmax_grad %g, %y {axis = 1 : i64} : tensor<2x4xf32>
  %3 = compute.mul %2, %c : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %4 = compute.softmax_grad %y, %y {axis = 1 : i64} : tensor<2x4xf32>
  %5 = compute.mul %4, %f : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  return %1, %2, %3, %5 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A layer norm's input gradient plus the residual connection's gradient is one
// layer_norm_grad that accumulates it. Not when the input gradient is read
// elsewhere too, nor when the other term is made after the layer norm gradient.
// CHECK-LABEL: func.func @layer_norm_grad_accumulates
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x4xf32>, %{{.+}}, %{{.+}}, %{{.+}}, %[[DY:[a-z0-9]+]]: tensor<2x4xf32>, %[[R:[a-z0-9]+]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[A:[a-z_0-9]+]], %[[AS:[a-z_0-9]+]], %{{.+}} = compute.layer_norm_grad %[[X]], %{{.+}}, %{{.+}}, %{{.+}}, %[[DY]] accumulate(%[[R]] : tensor<2x4xf32>) {axis = 1 : i64}
// CHECK-NEXT: %[[B:[a-z_0-9]+]], %{{.+}} = compute.layer_norm_grad
// CHECK-NOT: accumulate
// CHECK-NEXT: compute.add %[[B]], %[[R]]
// CHECK-NEXT: %[[C:[a-z_0-9]+]], %{{.+}} = compute.layer_norm_grad
// CHECK-NOT: accumulate
// CHECK-NEXT: %[[E:.+]] = compute.exp
// CHECK-NEXT: compute.add %[[E]], %[[C]]
// CHECK: return %[[A]], %[[AS]]
func.func @layer_norm_grad_accumulates(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2x1xf32>,
    %r: tensor<2x1xf32>, %dy: tensor<2x4xf32>, %res: tensor<2x4xf32>)
    -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %dx, %ds, %db = compute.layer_norm_grad %x, %s, %m, %r, %dy {axis = 1 : i64} : tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  %sum = compute.add %res, %dx : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %dx2, %ds2, %db2 = compute.layer_norm_grad %x, %s, %m, %r, %res {axis = 1 : i64} : tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  %sum2 = compute.add %dx2, %res : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %dx3, %ds3, %db3 = compute.layer_norm_grad %x, %s, %m, %r, %dy {axis = 1 : i64} : tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  %late = compute.exp %dy : tensor<2x4xf32>
  %sum3 = compute.add %late, %dx3 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %sum, %ds, %sum2, %dx2, %sum3 : tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
