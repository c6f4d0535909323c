// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-fuse-attention)' --split-input-file | FileCheck %s

// The project's GPT: the key transposed for the scores' product, a scale, the
// causal mask as an additive constant, softmax, the values' product: one
// compute.attention, causal, with the key read through one transpose.
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<1x2x3x4xf32>, %[[K:[a-z0-9]+]]: tensor<1x3x2x4xf32>, %[[V:[a-z0-9]+]]: tensor<1x2x3x4xf32>)
// CHECK-NEXT: %[[KT:.+]] = compute.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>} : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT: %[[O:.+]], %{{.+}} = compute.attention %[[Q]], %[[KT]], %[[V]] {causal = true, scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @causal(%q: tensor<1x2x3x4xf32>, %k: tensor<1x3x2x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = compute.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x2x4xf32> -> tensor<1x2x4x3xf32>
  %s = compute.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %c = compute.constant dense<5.000000e-01> : tensor<f32>
  %sc = compute.mul %s, %c : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %m = compute.constant dense<[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %sm = compute.add %sc, %m : tensor<1x2x3x3xf32>, tensor<3x3xf32> -> tensor<1x2x3x3xf32>
  %p = compute.softmax %sm {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = compute.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// A division by a constant scales; a mask that is not the causal one is kept.
// CHECK-LABEL: func.func @padding_mask
// CHECK: compute.attention %arg0, %{{.+}}, %arg2 mask(%{{.+}} : tensor<1x1x1x3xf32>) {scale = 2.500000e-01 : f64}
// CHECK-NOT: compute.softmax
func.func @padding_mask(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %s = compute.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %c = compute.constant dense<4.000000e+00> : tensor<f32>
  %sc = compute.div %s, %c : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %m = compute.constant dense<[[[[0.0, 0.0, -1.0e9]]]]> : tensor<1x1x1x3xf32>
  %sm = compute.add %m, %sc : tensor<1x1x1x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = compute.softmax %sm {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = compute.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// A boolean mask through where(mask, scores, -inf), the causal one: causal.
// CHECK-LABEL: func.func @where_causal
// CHECK: compute.attention %arg0, %{{.+}}, %arg2 {causal = true, scale = 1.000000e+00 : f64}
func.func @where_causal(%q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %s = compute.matmul %q, %kt : tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
  %keep = compute.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %low = compute.constant dense<0xFF800000> : tensor<f32>
  %sm = compute.where %keep, %s, %low : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32> -> tensor<1x1x2x2xf32>
  %p = compute.softmax %sm {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %o = compute.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// Not fused: the probabilities are read elsewhere too (returned).
// CHECK-LABEL: func.func @probabilities_read
// CHECK-NOT: compute.attention
// CHECK: compute.softmax
func.func @probabilities_read(%q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>, %v: tensor<1x1x2x4xf32>) -> (tensor<1x1x2x4xf32>, tensor<1x1x2x2xf32>) {
  %s = compute.matmul %q, %kt : tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
  %p = compute.softmax %s {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %o = compute.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o, %p : tensor<1x1x2x4xf32>, tensor<1x1x2x2xf32>
}

// -----

// Not fused: the mask comes before the scale (softmax((S + M) c)).
// CHECK-LABEL: func.func @mask_then_scale
// CHECK-NOT: compute.attention
func.func @mask_then_scale(%q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>, %v: tensor<1x1x2x4xf32>, %m: tensor<2x2xf32>) -> tensor<1x1x2x4xf32> {
  %s = compute.matmul %q, %kt : tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
  %sm = compute.add %s, %m : tensor<1x1x2x2xf32>, tensor<2x2xf32> -> tensor<1x1x2x2xf32>
  %c = compute.constant dense<5.000000e-01> : tensor<f32>
  %sc = compute.mul %sm, %c : tensor<1x1x2x2xf32>, tensor<f32> -> tensor<1x1x2x2xf32>
  %p = compute.softmax %sc {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %o = compute.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// Not fused: the mask is read from a parameter that trains (the fused op gives
// a mask no gradient); a frozen one is fused.
// CHECK-LABEL: func.func @trained_mask
// CHECK-NOT: compute.attention
// CHECK: compute.softmax
func.func @trained_mask(%m: tensor<2x2xf32> {compute.param = "mask"}, %q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %s = compute.matmul %q, %kt : tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
  %sm = compute.add %s, %m : tensor<1x1x2x2xf32>, tensor<2x2xf32> -> tensor<1x1x2x2xf32>
  %p = compute.softmax %sm {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %o = compute.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// CHECK-LABEL: func.func @frozen_mask
// CHECK: compute.attention %arg1, %{{.+}}, %arg3 mask(%arg0 : tensor<2x2xf32>)
func.func @frozen_mask(%m: tensor<2x2xf32> {compute.param = "mask", compute.frozen}, %q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %s = compute.matmul %q, %kt : tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
  %sm = compute.add %s, %m : tensor<1x1x2x2xf32>, tensor<2x2xf32> -> tensor<1x1x2x2xf32>
  %p = compute.softmax %sm {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %o = compute.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// The torch exporters' SDPA decomposition: the root of the scale on the queries
// and on the transposed keys, a NaN guard after the softmax.
// CHECK-LABEL: func.func @sdpa_decomposition
// CHECK: compute.attention %arg0, %{{.+}}, %arg2 mask(%{{.+}} : tensor<1x1x2x2xf32>) {scale = 2.500000e-01 : f64}
// CHECK-NOT: compute.equal
// CHECK-NOT: compute.where
func.func @sdpa_decomposition(%q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %r = compute.constant dense<5.000000e-01> : tensor<f32>
  %qs = compute.mul %q, %r : tensor<1x1x2x4xf32>, tensor<f32> -> tensor<1x1x2x4xf32>
  %ks = compute.mul %kt, %r : tensor<1x1x4x2xf32>, tensor<f32> -> tensor<1x1x4x2xf32>
  %s = compute.matmul %qs, %ks : tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
  %m = compute.constant dense<[[[[0.0, 0xFF800000], [0xFF800000, 0xFF800000]]]]> : tensor<1x1x2x2xf32>
  %sm = compute.add %s, %m : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %p = compute.softmax %sm {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %false = compute.constant dense<false> : tensor<i1>
  %eq = compute.equal %p, %p : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xi1>
  %nan = compute.equal %eq, %false : tensor<1x1x2x2xi1>, tensor<i1> -> tensor<1x1x2x2xi1>
  %zero = compute.constant dense<0.000000e+00> : tensor<1xf32>
  %g = compute.where %nan, %zero, %p : tensor<1x1x2x2xi1>, tensor<1xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = compute.matmul %g, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32> -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

// Grouped-query attention as Hugging Face's repeat_kv writes it (a group axis,
// expanded, merged into the heads) and ONNX's Attention imports it: the attention
// reads the two key/value heads, and the repeated copies are gone.
// CHECK-LABEL: func.func @grouped_heads
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<1x4x3x2xf32>, %[[K:[a-z0-9]+]]: tensor<1x2x3x2xf32>, %[[V:[a-z0-9]+]]: tensor<1x2x3x2xf32>)
// CHECK-NEXT: %[[O:.+]], %{{.+}} = compute.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 5.000000e-01 : f64} : tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
// CHECK-NEXT: return %[[O]]
func.func @grouped_heads(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %k1 = compute.reshape %k : tensor<1x2x3x2xf32> -> tensor<1x2x1x3x2xf32>
  %k2 = compute.expand %k1 : tensor<1x2x1x3x2xf32> -> tensor<1x2x2x3x2xf32>
  %k3 = compute.reshape %k2 : tensor<1x2x2x3x2xf32> -> tensor<1x4x3x2xf32>
  %v1 = compute.reshape %v : tensor<1x2x3x2xf32> -> tensor<1x2x1x3x2xf32>
  %v2 = compute.expand %v1 : tensor<1x2x1x3x2xf32> -> tensor<1x2x2x3x2xf32>
  %v3 = compute.reshape %v2 : tensor<1x2x2x3x2xf32> -> tensor<1x4x3x2xf32>
  %o, %lse = compute.attention %q, %k3, %v3 {causal = true, scale = 5.000000e-01 : f64} : tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32> -> tensor<1x4x3x2xf32>, tensor<1x4x3xf32>
  return %o : tensor<1x4x3x2xf32>
}

// -----

// torch.export's SDPA decomposition: the repeated keys' heads merged with the
// batch, transposed as [N, T, D] -> [N, D, T], split back and scaled, then the
// scores. The attention reads the two key/value heads too.
// CHECK-LABEL: func.func @grouped_heads_merged_transpose
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<1x4x3x2xf32>, %[[K:[a-z0-9]+]]: tensor<1x2x3x2xf32>, %[[V:[a-z0-9]+]]: tensor<1x2x3x2xf32>)
// CHECK-NEXT: %[[O:.+]], %{{.+}} = compute.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64} : tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
// CHECK-NEXT: return %[[O]]
func.func @grouped_heads_merged_transpose(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %k1 = compute.reshape %k : tensor<1x2x3x2xf32> -> tensor<1x2x1x3x2xf32>
  %k2 = compute.expand %k1 : tensor<1x2x1x3x2xf32> -> tensor<1x2x2x3x2xf32>
  %k3 = compute.reshape %k2 : tensor<1x2x2x3x2xf32> -> tensor<4x3x2xf32>
  %k4 = compute.transpose %k3 {perm = array<i64: 0, 2, 1>} : tensor<4x3x2xf32> -> tensor<4x2x3xf32>
  %kt = compute.reshape %k4 : tensor<4x2x3xf32> -> tensor<1x4x2x3xf32>
  %v1 = compute.reshape %v : tensor<1x2x3x2xf32> -> tensor<1x2x1x3x2xf32>
  %v2 = compute.expand %v1 : tensor<1x2x1x3x2xf32> -> tensor<1x2x2x3x2xf32>
  %v3 = compute.reshape %v2 : tensor<1x2x2x3x2xf32> -> tensor<1x4x3x2xf32>
  %s = compute.matmul %q, %kt : tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32> -> tensor<1x4x3x3xf32>
  %c = compute.constant dense<5.000000e-01> : tensor<f32>
  %sc = compute.mul %s, %c : tensor<1x4x3x3xf32>, tensor<f32> -> tensor<1x4x3x3xf32>
  %p = compute.softmax %sc {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %o = compute.matmul %p, %v3 : tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32> -> tensor<1x4x3x2xf32>
  return %o : tensor<1x4x3x2xf32>
}

// -----

// Only the values repeat (the keys are a tensor of their own): both stay as they
// are, since the op's key and value share one head count.
// CHECK-LABEL: func.func @only_values_repeat
// CHECK: compute.expand
// CHECK: compute.attention %arg0, %arg1, %{{.+}} : tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>
func.func @only_values_repeat(%q: tensor<1x4x3x2xf32>, %k: tensor<1x4x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %v1 = compute.reshape %v : tensor<1x2x3x2xf32> -> tensor<1x2x1x3x2xf32>
  %v2 = compute.expand %v1 : tensor<1x2x1x3x2xf32> -> tensor<1x2x2x3x2xf32>
  %v3 = compute.reshape %v2 : tensor<1x2x2x3x2xf32> -> tensor<1x4x3x2xf32>
  %o, %lse = compute.attention %q, %k, %v3 {scale = 5.000000e-01 : f64} : tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32> -> tensor<1x4x3x2xf32>, tensor<1x4x3xf32>
  return %o : tensor<1x4x3x2xf32>
}

// -----

// An imported attention's constant mask that is causal in every sample (the
// exporters repeat it per sample) becomes the op's own `causal`; one that is not
// stays a mask.
// CHECK-LABEL: func.func @imported_causal_mask
// CHECK-NOT: compute.constant
// CHECK: compute.attention %arg0, %arg1, %arg2 {causal = true, scale = 5.000000e-01 : f64}
// CHECK: compute.attention %arg0, %arg1, %arg2 mask(%{{.+}} : tensor<2x1x2x2xi1>) {scale = 5.000000e-01 : f64}
func.func @imported_causal_mask(%q: tensor<2x1x2x2xf32>, %k: tensor<2x1x2x2xf32>, %v: tensor<2x1x2x2xf32>) -> (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>) {
  %causal = compute.constant dense<[[[[0.0, -3.4e38], [0.0, 0.0]]], [[[0.0, -3.4e38], [0.0, 0.0]]]]> : tensor<2x1x2x2xf32>
  %o, %lse = compute.attention %q, %k, %v mask(%causal : tensor<2x1x2x2xf32>) {scale = 5.000000e-01 : f64} : tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32> -> tensor<2x1x2x2xf32>, tensor<2x1x2xf32>
  %padding = compute.constant dense<[[[[true, false], [true, true]]], [[[true, false], [true, false]]]]> : tensor<2x1x2x2xi1>
  %o2, %lse2 = compute.attention %q, %k, %v mask(%padding : tensor<2x1x2x2xi1>) {scale = 5.000000e-01 : f64} : tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32> -> tensor<2x1x2x2xf32>, tensor<2x1x2xf32>
  return %o, %o2 : tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>
}
