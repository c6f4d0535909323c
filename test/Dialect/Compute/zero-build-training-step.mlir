// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step)' --split-input-file | FileCheck %s
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step{optimizer=sgd momentum=0.9 lr=0.1})' --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step{gradients-only=true})' --split-input-file | FileCheck %s --check-prefix=GRAD
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step{freeze=^b})' --split-input-file | FileCheck %s --check-prefix=FREEZE

// A linear layer with a mean-square loss: the state arguments, the gradient ops,
// and the updates that replace the parameters and state.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {compute.param = "w"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {compute.param = "b"}
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32> {compute.input = 0 : i64}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {compute.state = "optimizer.step"}
// CHECK-SAME: %[[WM:[a-z0-9]+]]: tensor<3x2xf32> {compute.state = "w.exp_avg"}
// CHECK-SAME: %[[WV:[a-z0-9]+]]: tensor<3x2xf32> {compute.state = "w.exp_avg_sq"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<2xf32> {compute.state = "b.exp_avg"}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<2xf32> {compute.state = "b.exp_avg_sq"}
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32> {compute.updates = 0 : i64}, tensor<3x2xf32> {compute.updates = 4 : i64}, tensor<3x2xf32> {compute.updates = 5 : i64}, tensor<2xf32> {compute.updates = 1 : i64}, tensor<2xf32> {compute.updates = 6 : i64}, tensor<2xf32> {compute.updates = 7 : i64}, tensor<i64> {compute.updates = 3 : i64})
// CHECK-SAME: compute.output_names = ["loss", "w", "w.exp_avg", "w.exp_avg_sq", "b", "b.exp_avg", "b.exp_avg_sq", "optimizer.step"]
// The loss gradient is seeded with 1.
// CHECK: compute.constant dense<1.000000e+00> : tensor<f32>
// The bias gradient sums the broadcast dimension away.
// CHECK: compute.reduce_sum %{{.+}} {axes = array<i64: 0>, keepdims = false} : tensor<4x2xf32> -> tensor<2xf32>
// dW = X^T @ dY
// CHECK: %[[XT:.+]] = compute.transpose %[[X]] {perm = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK: %[[DW:.+]] = compute.matmul %[[XT]], %{{.+}} : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
// CHECK: %[[T:.+]] = compute.add %[[STEP]], %{{.+}} : tensor<i64>, tensor<i64> -> tensor<i64>
// CHECK: compute.adamw %[[W]], %[[DW]], %[[WM]], %[[WV]], %[[T]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64}
//
// With SGD, one momentum buffer per parameter and no step counter.
// SGD-LABEL: func.func @main
// SGD-SAME: {compute.state = "w.momentum_buffer"}
// SGD-SAME: {compute.state = "b.momentum_buffer"}
// SGD-NOT: optimizer.step
// SGD: compute.sgd {{.+}} {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
//
// Gradients only: the loss, then one gradient per parameter; no state.
// GRAD-LABEL: func.func @main
// GRAD-NOT: compute.state
// GRAD-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>)
// GRAD-SAME: compute.output_names = ["loss", "grad.w", "grad.b"]
// GRAD-NOT: compute.adamw
//
// Frozen parameters get neither state nor update.
// FREEZE-LABEL: func.func @main
// FREEZE-NOT: "b.exp_avg"
// FREEZE: compute.adamw
// FREEZE-NOT: compute.adamw
func.func @main(%w: tensor<3x2xf32> {compute.param = "w"}, %b: tensor<2xf32> {compute.param = "b"},
                %x: tensor<4x3xf32> {compute.input = 0 : i64}) -> tensor<f32>
    attributes {compute.output_names = ["loss"]} {
  %0 = compute.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %1 = compute.add %0, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %2 = compute.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %3 = compute.reduce_mean %2 {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x2xf32> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A tied weight: the gather's and the matmul's gradients are summed into one.
// FREEZE-LABEL: func.func @main
// CHECK-LABEL: func.func @main
// CHECK: %[[G1:.+]] = compute.gather_grad %{{.+}}, %{{.+}} {axis = 0 : i64} : tensor<2xi64>, tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK: %[[SUM:.+]] = compute.add %{{.+}}, %[[G1]] : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: compute.adamw %{{.+}}, %[[SUM]]
// CHECK-NOT: compute.adamw
// The integer input never gets a gradient.
// CHECK-NOT: compute.gather_grad
func.func @main(%e: tensor<8x4xf32> {compute.param = "emb"}, %t: tensor<2xi64> {compute.input = 0 : i64},
                %l: tensor<2xi64> {compute.input = 1 : i64}) -> tensor<f32> {
  %0 = compute.gather %e, %t {axis = 0 : i64} : tensor<8x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  %1 = compute.transpose %e {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %2 = compute.matmul %0, %1 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  %loss, %logp = compute.softmax_cross_entropy %2, %l {reduction = "mean"} : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32>, tensor<2x8xf32>
  return %loss : tensor<f32>
}

// -----

// A parameter the importer marks frozen (outside the model's zero.trainable set)
// is read, never updated, and gets no state.
// FREEZE-LABEL: func.func @main
// CHECK-LABEL: func.func @main
// CHECK-NOT: "rope.exp_avg"
// CHECK: compute.adamw
// CHECK-NOT: compute.adamw
func.func @main(%w: tensor<3xf32> {compute.param = "w"},
                %rope: tensor<3xf32> {compute.param = "rope", compute.frozen},
                %x: tensor<3xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %0 = compute.mul %x, %rope : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = compute.mul %0, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %2 = compute.reduce_sum %1 {axes = array<i64: 0>, keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// A linear layer over [batch, sequence, features]: the weight's gradient is one
// product over the batch folded into rows (X^T [3, 8] @ dY [8, 2]), not a product
// per sample and a sum over them.
// CHECK-LABEL: func.func @main
// GRAD-LABEL: func.func @main
// GRAD: %[[XR:.+]] = compute.reshape %{{.+}} : tensor<2x4x3xf32> -> tensor<8x3xf32>
// GRAD: %[[GR:.+]] = compute.reshape %{{.+}} : tensor<2x4x2xf32> -> tensor<8x2xf32>
// GRAD: %[[XT:.+]] = compute.transpose %[[XR]] {perm = array<i64: 1, 0>} : tensor<8x3xf32> -> tensor<3x8xf32>
// GRAD: %[[DW:.+]] = compute.matmul %[[XT]], %[[GR]] : tensor<3x8xf32>, tensor<8x2xf32> -> tensor<3x2xf32>
// GRAD-NOT: tensor<2x3x2xf32>
// GRAD: return %{{.+}}, %[[DW]]
func.func @main(%w: tensor<3x2xf32> {compute.param = "w"},
                %x: tensor<2x4x3xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %0 = compute.matmul %x, %w : tensor<2x4x3xf32>, tensor<3x2xf32> -> tensor<2x4x2xf32>
  %1 = compute.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : tensor<2x4x2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A linear layer as PyTorch exports it (x @ W^T, W [out, in]): W's gradient is
// dY^T [2, 8] @ X [8, 3], made in W's own layout, not X^T @ dY and a transpose of
// the product (the matmul kernel reads dY^T as a flag).
// CHECK-LABEL: func.func @main
// GRAD: %[[XR:.+]] = compute.reshape %{{.+}} : tensor<2x4x3xf32> -> tensor<8x3xf32>
// GRAD: %[[GR:.+]] = compute.reshape %{{.+}} : tensor<2x4x2xf32> -> tensor<8x2xf32>
// GRAD: %[[GT:.+]] = compute.transpose %[[GR]] {perm = array<i64: 1, 0>} : tensor<8x2xf32> -> tensor<2x8xf32>
// GRAD: %[[DW:.+]] = compute.matmul %[[GT]], %[[XR]] : tensor<2x8xf32>, tensor<8x3xf32> -> tensor<2x3xf32>
// GRAD-NOT: tensor<3x2xf32> -> tensor<2x3xf32>
// GRAD: return %{{.+}}, %[[DW]]
func.func @main(%w: tensor<2x3xf32> {compute.param = "w"},
                %x: tensor<2x4x3xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %wt = compute.transpose %w {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %0 = compute.matmul %x, %wt : tensor<2x4x3xf32>, tensor<3x2xf32> -> tensor<2x4x2xf32>
  %1 = compute.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : tensor<2x4x2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// GELU's gradient is one compute.gelu_grad of its input and the output's gradient.
// CHECK-LABEL: func.func @main
// GRAD: %[[S:.+]] = compute.add
// GRAD: compute.gelu %[[S]]
// GRAD: %[[DY:.+]] = compute.expand
// GRAD: %[[DS:.+]] = compute.gelu_grad %[[S]], %[[DY]] : tensor<2x4xf32>
// GRAD: return %{{.+}}, %[[DS]]
func.func @main(%w: tensor<2x4xf32> {compute.param = "w"},
                %x: tensor<2x4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %s = compute.add %x, %w : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %y = compute.gelu %s : tensor<2x4xf32>
  %l = compute.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A softmax with a folded scale and bias (a learned attention bias here): the
// input's gradient is the softmax gradient with that scale, the bias's the
// softmax gradient summed to its shape.
// CHECK-LABEL: func.func @main
// GRAD: %[[P:.+]] = compute.softmax %arg1 bias(%arg0 : tensor<4x4xf32>) {axis = 2 : i64, scale = 5.000000e-01 : f64}
// GRAD: %[[DY:.+]] = compute.add
// GRAD: %[[DZ:.+]] = compute.softmax_grad %[[P]], %[[DY]] {axis = 2 : i64} : tensor<2x4x4xf32>
// GRAD: %[[DB:.+]] = compute.reduce_sum %[[DZ]] {axes = array<i64: 0>, keepdims = false} : tensor<2x4x4xf32> -> tensor<4x4xf32>
// GRAD: return %{{.+}}, %[[DB]]
func.func @main(%b: tensor<4x4xf32> {compute.param = "attn_bias"},
                %x: tensor<2x4x4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %p = compute.softmax %x bias(%b : tensor<4x4xf32>) {axis = 2 : i64, scale = 0.5 : f64} : tensor<2x4x4xf32>
  %y = compute.mul %p, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %l = compute.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : tensor<2x4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
