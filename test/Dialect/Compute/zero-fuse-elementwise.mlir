// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-fuse-elementwise)' --split-input-file | FileCheck %s

// GELU after a bias add: one chain, the bias broadcast as an input, the scalar
// constants as immediates inside the body; the matmul stays outside.
// CHECK-LABEL: func.func @gelu
// CHECK: %[[MM:.+]] = compute.matmul
// CHECK-NEXT: %[[F:.+]] = compute.fused ins(%[[MM]], %arg2 : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8xf32>):
// CHECK-DAG: compute.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: compute.constant dense<0.707106769> : tensor<f32>
// CHECK-DAG: compute.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[S:.+]] = compute.add %[[X]], %[[B]]
// CHECK-NEXT: %[[A:.+]] = compute.mul %[[S]],
// CHECK-NEXT: %[[E:.+]] = compute.erf %[[A]]
// CHECK-NEXT: %[[P:.+]] = compute.add %[[E]],
// CHECK-NEXT: %[[H:.+]] = compute.mul %[[S]],
// CHECK-NEXT: %[[R:.+]] = compute.mul %[[H]], %[[P]]
// CHECK-NEXT: compute.yield %[[R]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @gelu(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %half = compute.constant dense<0.5> : tensor<f32>
  %rsqrt2 = compute.constant dense<0.70710678> : tensor<f32>
  %one = compute.constant dense<1.0> : tensor<f32>
  %mm = compute.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %s = compute.add %mm, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %a = compute.mul %s, %rsqrt2 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %e = compute.erf %a : tensor<4x8xf32>
  %p = compute.add %e, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %h = compute.mul %s, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %r = compute.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A value that something outside the chain also reads (here: an activation that
// the step returns, as backward would read it) is not taken in: it keeps its own
// kernel, and the chain reads it as an input.
// CHECK-LABEL: func.func @kept
// CHECK: %[[S:.+]] = compute.add %arg0, %arg1
// CHECK-NEXT: %[[F:.+]] = compute.fused ins(%[[S]] : tensor<8xf32>)
// CHECK: compute.tanh
// CHECK-NEXT: compute.neg
// CHECK-NEXT: compute.yield
// CHECK: return %[[F]], %[[S]]
func.func @kept(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = compute.add %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %t = compute.tanh %s : tensor<8xf32>
  %n = compute.neg %t : tensor<8xf32>
  return %n, %s : tensor<8xf32>, tensor<8xf32>
}

// -----

// Not fused: a lone op (nothing to save), a producer of another shape (it would
// be computed again for every element it is broadcast to), host work next to
// device work, f64 (its kernels compute in f64), and an i1 result.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: compute.fused
// CHECK: return
func.func @not_fused(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %d: tensor<8xf64>,
                     %h: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf64>, tensor<8xf32>, tensor<8xi1>) {
  %lone = compute.relu %x : tensor<4x8xf32>
  %eb = compute.exp %b : tensor<8xf32>
  %sb = compute.add %x, %eb : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %d1 = compute.exp %d : tensor<8xf64>
  %d2 = compute.neg %d1 : tensor<8xf64>
  %h1 = compute.exp %h {zero.host} : tensor<8xf32>
  %h2 = compute.neg %h1 : tensor<8xf32>
  %n = compute.neg %h : tensor<8xf32>
  %eq = compute.equal %n, %h : tensor<8xf32>, tensor<8xf32> -> tensor<8xi1>
  return %lone, %sb, %d2, %h2, %eq : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf64>, tensor<8xf32>, tensor<8xi1>
}

// -----

// A value read twice inside the chain (a diamond) is inside it; where reads its
// condition from an input; casts round to bf16 inside the body.
// CHECK-LABEL: func.func @diamond
// CHECK: %[[F:.+]] = compute.fused ins(%arg0, %arg1 : tensor<2x8xf32>, tensor<8xi1>) -> tensor<2x8xbf16> {
// CHECK: compute.sigmoid
// CHECK: compute.mul
// CHECK: compute.where
// CHECK: compute.cast
// CHECK-NEXT: compute.yield
// CHECK-NOT: compute.sigmoid
func.func @diamond(%x: tensor<2x8xf32>, %mask: tensor<8xi1>) -> tensor<2x8xbf16> {
  %zero = compute.constant dense<0.0> : tensor<f32>
  %s = compute.sigmoid %x : tensor<2x8xf32>
  %m = compute.mul %s, %s : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %w = compute.where %mask, %m, %zero : tensor<8xi1>, tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %c = compute.cast %w : tensor<2x8xf32> -> tensor<2x8xbf16>
  return %c : tensor<2x8xbf16>
}

// -----

// Host work fuses with host work; the fused op carries the mark.
// CHECK-LABEL: func.func @host
// CHECK: compute.fused ins(%arg0 : tensor<8xf32>) -> tensor<8xf32> {
// CHECK: compute.exp %{{.+}} : tensor<8xf32>
// CHECK-NEXT: compute.neg %{{.+}} : tensor<8xf32>
// CHECK: } {zero.host}
func.func @host(%h: tensor<8xf32>) -> tensor<8xf32> {
  %h1 = compute.exp %h {zero.host} : tensor<8xf32>
  %h2 = compute.neg %h1 {zero.host} : tensor<8xf32>
  return %h2 : tensor<8xf32>
}

// -----

// A cheap value two chains read (GELU's pre-activation: forward and its gradient)
// is computed again in each instead of stored, when it reads at most one tensor
// of its size (here the matmul's result, the bias is smaller). A value that reads
// two (the residual sum) is stored once and read by both.
// CHECK-LABEL: func.func @recomputed
// CHECK: %[[MM:.+]] = compute.matmul
// CHECK-NEXT: %[[R:.+]] = compute.add %arg3, %arg4
// CHECK-NEXT: %[[FWD:.+]] = compute.fused ins(%[[MM]], %arg2, %[[R]] : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
// CHECK: compute.add %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: compute.tanh
// CHECK: compute.yield
// CHECK: %[[BWD:.+]] = compute.fused ins(%[[MM]], %arg2, %arg5, %[[R]] : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: compute.add %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK: compute.yield
// CHECK: return %[[FWD]], %[[BWD]]
func.func @recomputed(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>,
                      %p: tensor<4x8xf32>, %q: tensor<4x8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %mm = compute.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %res = compute.add %p, %q : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = compute.add %mm, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %t = compute.tanh %s : tensor<4x8xf32>
  %y = compute.mul %t, %res : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %g = compute.mul %dy, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dx = compute.sub %g, %res : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The same bias add with the bias a view of a gathered stage-3 bucket: not copied
// into the later chain, which would keep forward's bucket alive into backward.
shard.grid @zero(shape = 2)
// CHECK-LABEL: func.func @gathered_bias
// CHECK: %[[W:.+]] = zero.wait
// CHECK: %[[B:.+]] = compute.reshape %[[W]]
// CHECK: %[[S:.+]] = compute.add %{{.+}}, %[[B]]
// CHECK: compute.fused ins(%[[S]] : tensor<4x8xf32>)
// CHECK: compute.fused ins(%arg2, %[[S]] : tensor<4x8xf32>, tensor<4x8xf32>)
func.func @gathered_bias(%x: tensor<4x8xf32>, %shard: tensor<4xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %p, %t = zero.all_gather_start %shard on @zero grid_axes = [0] : tensor<4xf32> -> tensor<8xf32>
  %bucket = zero.wait %t, %p : tensor<8xf32>
  %b = compute.reshape %bucket : tensor<8xf32> -> tensor<8xf32>
  %s = compute.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %t1 = compute.tanh %s : tensor<4x8xf32>
  %y = compute.neg %t1 : tensor<4x8xf32>
  %g = compute.mul %dy, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dx = compute.neg %g : tensor<4x8xf32>
  return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// erf is cheap enough to compute again: GELU's forward and its gradient both read
// erf of the pre-activation, and each chain computes it from the matmul's result
// and the bias instead of one storing it and the other reading it back. exp is
// not (it costs more than a store and a load): its value is stored once and read.
// CHECK-LABEL: func.func @erf_recomputed
// CHECK: %[[MM:.+]] = compute.matmul
// CHECK-NEXT: %[[E:.+]] = compute.exp %arg3
// CHECK-NEXT: %[[FWD:.+]] = compute.fused ins(%[[MM]], %arg2, %[[E]] : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
// CHECK: compute.erf
// CHECK: compute.yield
// CHECK: %[[BWD:.+]] = compute.fused ins(%[[MM]], %arg2, %arg4, %[[E]] : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: compute.erf
// CHECK: compute.yield
// CHECK: return %[[FWD]], %[[BWD]]
func.func @erf_recomputed(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>,
                          %p: tensor<4x8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %mm = compute.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %e = compute.exp %p : tensor<4x8xf32>
  %s = compute.add %mm, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %erf = compute.erf %s : tensor<4x8xf32>
  %y = compute.mul %erf, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %g = compute.mul %dy, %erf : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dx = compute.sub %g, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Attention's scale and causal mask join the softmax: one kernel, no fused chain.
// CHECK-LABEL: func.func @attention_softmax
// CHECK-NOT: compute.constant
// CHECK: %[[S:.+]] = compute.matmul
// CHECK-NEXT: %[[P:.+]] = compute.softmax %[[S]] bias(%arg2 : tensor<8x8xf32>) {axis = 3 : i64, scale = 1.250000e-01 : f64} : tensor<2x4x8x8xf32>
// CHECK-NEXT: return %[[P]]
func.func @attention_softmax(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x16x8xf32>, %mask: tensor<8x8xf32>) -> tensor<2x4x8x8xf32> {
  %c = compute.constant dense<0.125> : tensor<f32>
  %s = compute.matmul %q, %k : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  %scaled = compute.mul %c, %s : tensor<f32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %masked = compute.add %mask, %scaled : tensor<8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %p = compute.softmax %masked {axis = 3 : i64} : tensor<2x4x8x8xf32>
  return %p : tensor<2x4x8x8xf32>
}

// -----

// The mask alone, and the scale alone, join too.
// CHECK-LABEL: func.func @mask_or_scale
// CHECK-NEXT: compute.softmax %arg0 bias(%arg1 : tensor<2x1x8xf32>) {axis = 2 : i64} : tensor<2x8x8xf32>
// CHECK-NEXT: compute.softmax %arg0 {axis = 2 : i64, scale = 5.000000e-01 : f64} : tensor<2x8x8xf32>
// CHECK-NEXT: return
func.func @mask_or_scale(%x: tensor<2x8x8xf32>, %pad: tensor<2x1x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %half = compute.constant dense<0.5> : tensor<f32>
  %a = compute.add %x, %pad : tensor<2x8x8xf32>, tensor<2x1x8xf32> -> tensor<2x8x8xf32>
  %p = compute.softmax %a {axis = 2 : i64} : tensor<2x8x8xf32>
  %m = compute.mul %x, %half : tensor<2x8x8xf32>, tensor<f32> -> tensor<2x8x8xf32>
  %q = compute.softmax %m {axis = 2 : i64} : tensor<2x8x8xf32>
  return %p, %q : tensor<2x8x8xf32>, tensor<2x8x8xf32>
}

// -----

// What must stay as it is: the masked scores read elsewhere (the softmax takes
// them whole), a softmax along another axis, a scale that is not a constant, and a
// mask that is added before the scale (the scale then folds alone, after it).
// CHECK-LABEL: func.func @softmax_kept
// CHECK: %[[M:.+]] = compute.add %arg0, %arg1
// CHECK: compute.softmax %[[M]] {axis = 2 : i64}
// CHECK: compute.softmax %{{.+}} {axis = 1 : i64}
// CHECK: %[[V:.+]] = compute.mul %arg0, %arg2
// CHECK: compute.softmax %[[V]] {axis = 2 : i64}
// CHECK: %[[B:.+]] = compute.add %arg0, %arg1
// CHECK: compute.softmax %[[B]] {axis = 2 : i64, scale = 2.500000e-01 : f64}
func.func @softmax_kept(%x: tensor<2x8x8xf32>, %mask: tensor<8x8xf32>, %s: tensor<f32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %q = compute.constant dense<0.25> : tensor<f32>
  %m = compute.add %x, %mask : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
  %p = compute.softmax %m {axis = 2 : i64} : tensor<2x8x8xf32>
  %m2 = compute.add %x, %mask : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
  %p2 = compute.softmax %m2 {axis = 1 : i64} : tensor<2x8x8xf32>
  %v = compute.mul %x, %s : tensor<2x8x8xf32>, tensor<f32> -> tensor<2x8x8xf32>
  %p3 = compute.softmax %v {axis = 2 : i64} : tensor<2x8x8xf32>
  %b = compute.add %x, %mask : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
  %bs = compute.mul %b, %q : tensor<2x8x8xf32>, tensor<f32> -> tensor<2x8x8xf32>
  %p4 = compute.softmax %bs {axis = 2 : i64} : tensor<2x8x8xf32>
  return %p, %m, %p2, %p3, %p4 : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>
}
