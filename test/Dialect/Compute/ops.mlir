// RUN: %mlir_opt_zero %s | FileCheck %s
// Round trip: printing and parsing again gives the same IR.
// RUN: %mlir_opt_zero %s | %mlir_opt_zero | FileCheck %s

// Elementwise ops broadcast like numpy; unary ops keep the operand type.
// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>, %e: tensor<i64>) -> tensor<2x3xi1> {
  // CHECK: compute.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %0 = compute.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: compute.sub
  %1 = compute.sub %0, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: compute.mul
  %2 = compute.mul %1, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: compute.div
  %3 = compute.div %2, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: compute.pow %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<i64> -> tensor<2x3xf32>
  %4 = compute.pow %3, %e : tensor<2x3xf32>, tensor<i64> -> tensor<2x3xf32>
  // CHECK: compute.neg %{{.*}} : tensor<4xi64>
  %5 = compute.neg %i : tensor<4xi64>
  // CHECK: compute.sqrt
  %6 = compute.sqrt %4 : tensor<2x3xf32>
  // CHECK: compute.reciprocal
  %7 = compute.reciprocal %6 : tensor<2x3xf32>
  // CHECK: compute.exp
  %8 = compute.exp %7 : tensor<2x3xf32>
  // CHECK: compute.log
  %9 = compute.log %8 : tensor<2x3xf32>
  // CHECK: compute.relu
  %10 = compute.relu %9 : tensor<2x3xf32>
  // CHECK: compute.tanh
  %11 = compute.tanh %10 : tensor<2x3xf32>
  // CHECK: compute.sigmoid
  %12 = compute.sigmoid %11 : tensor<2x3xf32>
  // CHECK: compute.erf
  %13 = compute.erf %12 : tensor<2x3xf32>
  // CHECK: compute.gelu %{{.+}} : tensor<2x3xf32>
  %gelu = compute.gelu %13 : tensor<2x3xf32>
  // CHECK: compute.cast %{{.*}} : tensor<4xi64> -> tensor<4xf32>
  %14 = compute.cast %5 : tensor<4xi64> -> tensor<4xf32>
  // CHECK: compute.equal %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %15 = compute.equal %13, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  // CHECK: compute.where
  %16 = compute.where %15, %a, %b : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return %15 : tensor<2x3xi1>
}

// Matrix products, normalizations and the loss.
// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %g: tensor<8xf32>, %s: tensor<8x16xf32>, %l: tensor<8xi64>, %cw: tensor<16xf32>) -> tensor<f32> {
  // CHECK: compute.matmul %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %0 = compute.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  // CHECK: compute.softmax %{{.*}} {axis = 2 : i64} : tensor<2x4x16xf32>
  %1 = compute.softmax %0 {axis = 2 : i64} : tensor<2x4x16xf32>
  // CHECK: compute.softmax %{{.*}} bias(%{{.*}} : tensor<16xf32>) {axis = 2 : i64, scale = 1.250000e-01 : f64} : tensor<2x4x16xf32>
  %b = compute.constant dense<0.0> : tensor<16xf32>
  %sb = compute.softmax %0 bias(%b : tensor<16xf32>) {axis = 2 : i64, scale = 0.125 : f64} : tensor<2x4x16xf32>
  // CHECK: compute.log_softmax
  %2 = compute.log_softmax %1 {axis = 0 : i64} : tensor<2x4x16xf32>
  // CHECK: compute.layer_norm {{.*}} -> tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>
  // CHECK: compute.softmax_cross_entropy %{{.*}}, %{{.*}} weights %{{.*}} {ignore_index = 3 : i64, reduction = "mean"}
  %loss, %logp = compute.softmax_cross_entropy %s, %l weights %cw {reduction = "mean", ignore_index = 3 : i64} : tensor<8x16xf32>, tensor<8xi64>, tensor<16xf32> -> tensor<f32>, tensor<8x16xf32>
  // CHECK: compute.softmax_cross_entropy %{{.*}}, %{{.*}} {reduction = "none"}
  %l2, %p2 = compute.softmax_cross_entropy %s, %l {reduction = "none"} : tensor<8x16xf32>, tensor<8xi64> -> tensor<8xf32>, tensor<8x16xf32>
  return %loss : tensor<f32>
}

// Reductions and data movement.
// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x3x4xf32>, %t: tensor<16x8xf32>, %i: tensor<2x5xi64>) -> tensor<2x5x8xf32> {
  // CHECK: compute.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %0 = compute.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK: compute.reduce_mean {{.*}} -> tensor<3xf32>
  %1 = compute.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : tensor<2x3x4xf32> -> tensor<3xf32>
  // CHECK: compute.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %2 = compute.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: compute.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %3 = compute.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: compute.slice %{{.*}} {starts = array<i64: 1, 0, 3>, steps = array<i64: 1, 2, -1>} : tensor<2x3x4xf32> -> tensor<1x2x4xf32>
  %4 = compute.slice %x {starts = array<i64: 1, 0, 3>, steps = array<i64: 1, 2, -1>} : tensor<2x3x4xf32> -> tensor<1x2x4xf32>
  // CHECK: compute.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : tensor<2x3x4xf32>, tensor<1x3x4xf32> -> tensor<3x3x4xf32>
  %5 = compute.slice %x {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> -> tensor<1x3x4xf32>
  %6 = compute.concat %x, %5 {axis = 0 : i64} : tensor<2x3x4xf32>, tensor<1x3x4xf32> -> tensor<3x3x4xf32>
  // CHECK: compute.expand %{{.*}} : tensor<3xf32> -> tensor<2x3xf32>
  %7 = compute.expand %1 : tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: compute.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : tensor<16x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32>
  %8 = compute.gather %t, %i {axis = 0 : i64} : tensor<16x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32>
  // CHECK: compute.trilu %{{.*}} {k = -1 : i64, upper = false} : tensor<16x8xf32>
  %9 = compute.trilu %t {upper = false, k = -1 : i64} : tensor<16x8xf32>
  // CHECK: compute.constant dense<[1, 2]> : tensor<2xi64>
  %10 = compute.constant dense<[1, 2]> : tensor<2xi64>
  return %8 : tensor<2x5x8xf32>
}

// Backward and optimizer ops.
// CHECK-LABEL: func.func @training
func.func @training(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %m: tensor<2x4x1xf32>, %dy: tensor<2x4x8xf32>,
                    %lp: tensor<8x16xf32>, %l: tensor<8xi64>, %dl: tensor<f32>, %i: tensor<2x3xi64>,
                    %p: tensor<16xf32>, %t: tensor<i64>) {
  // CHECK: compute.relu_grad %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
  %0 = compute.relu_grad %x, %dy : tensor<2x4x8xf32>
  // CHECK: compute.gelu_grad %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
  %dgelu = compute.gelu_grad %x, %dy : tensor<2x4x8xf32>
  // CHECK: compute.softmax_grad %{{.+}}, %{{.+}} {axis = 2 : i64} : tensor<2x4x8xf32>
  %ds = compute.softmax_grad %x, %dy {axis = 2 : i64} : tensor<2x4x8xf32>
  // CHECK: compute.layer_norm_grad {{.+}} {axis = 2 : i64} : {{.+}} -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %dx, %dg, %db = compute.layer_norm_grad %x, %g, %m, %m, %dy {axis = 2 : i64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: compute.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} {ignore_index = -100 : i64, reduction = "mean"} : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xf32>
  %1 = compute.softmax_cross_entropy_grad %lp, %l, %dl {reduction = "mean", ignore_index = -100 : i64} : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xf32>
  // CHECK: compute.gather_grad %{{.+}}, %{{.+}} {axis = 0 : i64} : tensor<2x3xi64>, tensor<2x3x16xf32> -> tensor<8x16xf32>
  %e = compute.expand %p : tensor<16xf32> -> tensor<2x3x16xf32>
  %2 = compute.gather_grad %i, %e {axis = 0 : i64} : tensor<2x3xi64>, tensor<2x3x16xf32> -> tensor<8x16xf32>
  // CHECK: compute.slice_grad %{{.+}} {starts = array<i64: 0, 4>, steps = array<i64: 1, 2>} : tensor<8x2xf32> -> tensor<8x16xf32>
  %s = compute.slice %lp {starts = array<i64: 0, 4>, steps = array<i64: 1, 2>} : tensor<8x16xf32> -> tensor<8x2xf32>
  %3 = compute.slice_grad %s {starts = array<i64: 0, 4>, steps = array<i64: 1, 2>} : tensor<8x2xf32> -> tensor<8x16xf32>
  // CHECK: compute.adamw {{.+}} : tensor<16xf32>, tensor<16xf32>, tensor<i64> -> tensor<16xf32>
  %p1, %m1, %v1 = compute.adamw %p, %p, %p, %p, %t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<16xf32>, tensor<16xf32>, tensor<i64> -> tensor<16xf32>
  // CHECK: compute.sgd {{.+}} : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %p2, %b2 = compute.sgd %p, %p, %p {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return
}
