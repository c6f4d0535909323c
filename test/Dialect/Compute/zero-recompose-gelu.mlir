// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-recompose-gelu)' --split-input-file | FileCheck %s

// The chain PyTorch exports for gelu, x * (erf(x / sqrt 2) + 1) * 0.5, is one
// compute.gelu (its gradient rule: zero-build-training-step.mlir).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<2x4xf32> {compute.param = "w"}, %[[X:[a-z0-9]+]]: tensor<2x4xf32>
// CHECK-NEXT: %[[S:.+]] = compute.add %[[X]], %[[W]]
// CHECK-NEXT: %[[G:.+]] = compute.gelu %[[S]] : tensor<2x4xf32>
// CHECK-NOT: compute.erf
// CHECK-NOT: compute.div
// CHECK: compute.reduce_sum %[[G]]
func.func @main(%w: tensor<2x4xf32> {compute.param = "w"}, %x: tensor<2x4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
  %s = compute.add %x, %w : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %sqrt2 = compute.constant dense<1.41421354> : tensor<f32>
  %d = compute.div %s, %sqrt2 : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %e = compute.erf %d : tensor<2x4xf32>
  %one = compute.constant dense<1.000000e+00> : tensor<f32>
  %a = compute.add %e, %one : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %m = compute.mul %s, %a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %half = compute.constant dense<5.000000e-01> : tensor<f32>
  %y = compute.mul %m, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %l = compute.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Written by hand in another order: 0.5 x first, 1 + erf(x * (1/sqrt 2)).
// CHECK-LABEL: func.func @hand_written
// CHECK-NEXT: %[[G:.+]] = compute.gelu %arg0 : tensor<3xbf16>
// CHECK-NEXT: return %[[G]]
func.func @hand_written(%x: tensor<3xbf16>) -> tensor<3xbf16> {
  %half = compute.constant dense<5.000000e-01> : tensor<bf16>
  %h = compute.mul %half, %x : tensor<bf16>, tensor<3xbf16> -> tensor<3xbf16>
  %c = compute.constant dense<0.707106769> : tensor<bf16>
  %u = compute.mul %c, %x : tensor<bf16>, tensor<3xbf16> -> tensor<3xbf16>
  %e = compute.erf %u : tensor<3xbf16>
  %one = compute.constant dense<1.000000e+00> : tensor<bf16>
  %a = compute.add %one, %e : tensor<bf16>, tensor<3xbf16> -> tensor<3xbf16>
  %y = compute.mul %h, %a : tensor<3xbf16>, tensor<3xbf16> -> tensor<3xbf16>
  return %y : tensor<3xbf16>
}

// -----

// Not GELU: a value of the chain read elsewhere (the erf) stays, and so does the
// chain; a constant other than 1/2, or erf of another tensor than the factor.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: compute.gelu
// CHECK: return
func.func @not_gelu(%x: tensor<4xf32>, %z: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = compute.constant dense<1.41421354> : tensor<f32>
  %one = compute.constant dense<1.000000e+00> : tensor<f32>
  %half = compute.constant dense<5.000000e-01> : tensor<f32>
  %other = compute.constant dense<4.000000e-01> : tensor<f32>
  %d = compute.div %x, %sqrt2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %e = compute.erf %d : tensor<4xf32>
  %a = compute.add %e, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %m = compute.mul %x, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y = compute.mul %m, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %d2 = compute.div %x, %sqrt2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %e2 = compute.erf %d2 : tensor<4xf32>
  %a2 = compute.add %e2, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %m2 = compute.mul %x, %a2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y2 = compute.mul %m2, %other : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %d3 = compute.div %x, %sqrt2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %e3 = compute.erf %d3 : tensor<4xf32>
  %a3 = compute.add %e3, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %m3 = compute.mul %z, %a3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y3 = compute.mul %m3, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %y, %e, %y2, %y3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// GELU's tanh form as Hugging Face's gelu_new writes it, 0.5 * x * (1 + tanh(
// sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))), is one compute.gelu_tanh.
// CHECK-LABEL: func.func @tanh_form
// CHECK-NEXT: %[[G:.+]] = compute.gelu_tanh %arg0 : tensor<2x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @tanh_form(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %half = compute.constant dense<5.000000e-01> : tensor<f32>
  %h = compute.mul %half, %x : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %three = compute.constant dense<3.000000e+00> : tensor<f32>
  %cube = compute.pow %x, %three : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %c = compute.constant dense<4.471500e-02> : tensor<f32>
  %cc = compute.mul %c, %cube : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %inner = compute.add %x, %cc : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %k = compute.constant dense<0.797884583> : tensor<f32>
  %s = compute.mul %k, %inner : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %t = compute.tanh %s : tensor<2x4xf32>
  %one = compute.constant dense<1.000000e+00> : tensor<f32>
  %a = compute.add %one, %t : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %y = compute.mul %h, %a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// The cube as products of x (PyTorch's own decomposition writes x * x * x), the
// factors in the other order.
// CHECK-LABEL: func.func @tanh_form_products
// CHECK-NEXT: %[[G:.+]] = compute.gelu_tanh %arg0 : tensor<2x4xf32>
// CHECK-NEXT: return %[[G]]
func.func @tanh_form_products(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %sq = compute.mul %x, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %cube = compute.mul %sq, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %c = compute.constant dense<4.471500e-02> : tensor<f32>
  %cc = compute.mul %cube, %c : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %inner = compute.add %cc, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %k = compute.constant dense<0.797884583> : tensor<f32>
  %s = compute.mul %inner, %k : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %t = compute.tanh %s : tensor<2x4xf32>
  %one = compute.constant dense<1.000000e+00> : tensor<f32>
  %a = compute.add %t, %one : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %m = compute.mul %x, %a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %half = compute.constant dense<5.000000e-01> : tensor<f32>
  %y = compute.mul %m, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Not GELU: the cubic's coefficient is not 0.044715; the chain stays.
// CHECK-LABEL: func.func @tanh_wrong_coefficient
// CHECK-NOT: gelu_tanh
// CHECK: compute.tanh
func.func @tanh_wrong_coefficient(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %half = compute.constant dense<5.000000e-01> : tensor<f32>
  %h = compute.mul %half, %x : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %three = compute.constant dense<3.000000e+00> : tensor<f32>
  %cube = compute.pow %x, %three : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %c = compute.constant dense<5.000000e-02> : tensor<f32>
  %cc = compute.mul %c, %cube : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %inner = compute.add %x, %cc : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %k = compute.constant dense<0.797884583> : tensor<f32>
  %s = compute.mul %k, %inner : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %t = compute.tanh %s : tensor<2x4xf32>
  %one = compute.constant dense<1.000000e+00> : tensor<f32>
  %a = compute.add %one, %t : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %y = compute.mul %h, %a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
