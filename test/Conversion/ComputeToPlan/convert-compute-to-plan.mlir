// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(convert-compute-to-plan)' --split-input-file | FileCheck %s

// Parameters, inputs and constants are placed first and live for the whole step;
// temporaries follow, and a dead temporary's bytes are reused (64-byte aligned).
// CHECK-LABEL: plan.program @main
// CHECK-SAME: arena_bytes = 320 : i64, world_size = 1 : i64
// CHECK: %[[W:.+]] = plan.buffer param at 0 {name = "w"} : memref<4x4xf32>
// CHECK: %[[X:.+]] = plan.buffer input at 64 {index = 0 : i64, name = "x"} : memref<2x4xf32>
// CHECK: %[[C:.+]] = plan.buffer constant at 128 {value = dense<2.000000e+00> : tensor<f32>} : memref<f32>
// CHECK: %[[T0:.+]] = plan.buffer temp at 192 : memref<2x4xf32>
// CHECK: plan.kernel matmul ins(%[[X]], %[[W]] : {{.*}}) outs(%[[T0]] : memref<2x4xf32>)
// CHECK: %[[T1:.+]] = plan.buffer temp at 256 : memref<2x4xf32>
// CHECK: plan.kernel mul ins(%[[T0]], %[[C]] : {{.*}}) outs(%[[T1]] : memref<2x4xf32>)
// The matmul result is dead after the mul, so the relu writes into its bytes.
// CHECK: %[[T2:.+]] = plan.buffer temp at 192 : memref<2x4xf32>
// CHECK: plan.kernel relu ins(%[[T1]] : memref<2x4xf32>) outs(%[[T2]] : memref<2x4xf32>)
// CHECK: %[[T3:.+]] = plan.buffer temp at 256 : memref<2x4xf32>
// CHECK: plan.kernel softmax ins(%[[T2]] : memref<2x4xf32>) outs(%[[T3]] : memref<2x4xf32>) attrs {axis = 1 : i64}
// CHECK: plan.return %[[T3]] : memref<2x4xf32> {names = ["y"]}
func.func @main(%w: tensor<4x4xf32> {compute.param = "w"},
                %x: tensor<2x4xf32> {compute.input = 0 : i64, compute.name = "x"})
    -> tensor<2x4xf32> attributes {compute.output_names = ["y"]} {
  %0 = compute.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %c = compute.constant dense<2.0> : tensor<f32>
  %1 = compute.mul %0, %c : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %2 = compute.relu %1 : tensor<2x4xf32>
  %3 = compute.softmax %2 {axis = 1 : i64} : tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// -----

// A result nobody reads (layer_norm's mean) is freed right after its kernel; a
// value read twice lives until its last reader; a returned value is never reused.
// CHECK-LABEL: plan.program @main
// CHECK: %[[X:.+]] = plan.buffer input at 0
// CHECK: %[[Y:.+]] = plan.buffer temp at 128 : memref<2x8xf32>
// CHECK: %[[M:.+]] = plan.buffer temp at 192 : memref<2x1xf32>
// CHECK: %[[R:.+]] = plan.buffer temp at 256 : memref<2x1xf32>
// CHECK: plan.kernel layer_norm ins(%[[X]], {{.*}}) outs(%[[Y]], %[[M]], %[[R]] : {{.*}}) attrs {axis = 1 : i64, epsilon = 1.000000e-05 : f64}
// CHECK: %[[A:.+]] = plan.buffer temp at 192 : memref<2x8xf32>
// CHECK: plan.kernel add ins(%[[Y]], %[[Y]] : {{.*}}) outs(%[[A]] : memref<2x8xf32>)
// CHECK: %[[B:.+]] = plan.buffer temp at 128 : memref<2x8xf32>
// CHECK: plan.kernel neg ins(%[[A]] : memref<2x8xf32>) outs(%[[B]] : memref<2x8xf32>)
// CHECK: plan.return %[[A]], %[[B]] : memref<2x8xf32>, memref<2x8xf32>
func.func @main(%x: tensor<2x8xf32> {compute.input = 0 : i64}, %g: tensor<8xf32> {compute.input = 1 : i64})
    -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %a = compute.add %y, %y : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %b = compute.neg %a : tensor<2x8xf32>
  return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Updates: the optimizer writes the parameter and its state in place (it reads
// each for the last time); the step counter's add too. Returned updates are not
// plan outputs.
// CHECK-LABEL: plan.program @main
// CHECK: %[[P:.+]] = plan.buffer param at {{[0-9]+}} {name = "p"} : memref<4xf32>
// CHECK: %[[T:.+]] = plan.buffer state at {{[0-9]+}} {name = "optimizer.step"} : memref<i64>
// CHECK: %[[M:.+]] = plan.buffer state at {{[0-9]+}} {name = "p.exp_avg"} : memref<4xf32>
// CHECK: %[[V:.+]] = plan.buffer state at {{[0-9]+}} {name = "p.exp_avg_sq"} : memref<4xf32>
// CHECK: plan.kernel add ins(%[[T]], %{{.+}} : memref<i64>, memref<i64>) outs(%[[T]] : memref<i64>)
// CHECK: plan.kernel adamw ins(%[[P]], %{{.+}}, %[[M]], %[[V]], %[[T]] : {{.+}}) outs(%[[P]], %[[M]], %[[V]] : memref<4xf32>, memref<4xf32>, memref<4xf32>)
// CHECK-NOT: plan.kernel copy
// CHECK: plan.return %{{.+}} : memref<f32> {names = ["loss"]}
func.func @main(%p: tensor<4xf32> {compute.param = "p"}, %g: tensor<4xf32> {compute.input = 0 : i64},
                %t: tensor<i64> {compute.state = "optimizer.step"},
                %m: tensor<4xf32> {compute.state = "p.exp_avg"}, %v: tensor<4xf32> {compute.state = "p.exp_avg_sq"})
    -> (tensor<f32>, tensor<4xf32> {compute.updates = 0 : i64}, tensor<4xf32> {compute.updates = 3 : i64},
        tensor<4xf32> {compute.updates = 4 : i64}, tensor<i64> {compute.updates = 2 : i64})
    attributes {compute.output_names = ["loss", "p", "p.exp_avg", "p.exp_avg_sq", "optimizer.step"]} {
  %l = compute.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  %one = compute.constant dense<1> : tensor<i64>
  %t1 = compute.add %t, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  %p1, %m1, %v1 = compute.adamw %p, %g, %m, %v, %t1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<i64> -> tensor<4xf32>
  return %l, %p1, %m1, %v1, %t1 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>
}

// -----

// The optimizer in one kernel: device updates one after another, with the same
// hyperparameters, scalars and types, join one adamw kernel whose
// operand_segments count the tensors per operand (params, grads, moments, then
// the step once); outputs come N per result. An update with another learning
// rate starts a kernel of its own.
// CHECK-LABEL: plan.program @main
// CHECK: %[[P:.+]] = plan.buffer param at {{[0-9]+}} {name = "p"} : memref<4xf32>
// CHECK: %[[Q:.+]] = plan.buffer param at {{[0-9]+}} {name = "q"} : memref<2xf32>
// CHECK: %[[R:.+]] = plan.buffer param at {{[0-9]+}} {name = "r"} : memref<3xf32>
// CHECK: plan.kernel adamw ins(%[[P]], %[[Q]], %[[G:[0-9]+]], %[[H:[0-9]+]], %[[M:[0-9]+]], %[[N:[0-9]+]], %[[V:[0-9]+]], %[[W:[0-9]+]], %[[T:[0-9]+]] : memref<4xf32>, memref<2xf32>, memref<4xf32>, memref<2xf32>, {{.+}}) outs(%[[P]], %[[Q]], %[[M]], %[[N]], %[[V]], %[[W]] : {{.+}}) attrs {{.*}}operand_segments = array<i64: 2, 2, 2, 2, 1, 0, 0, 0>
// CHECK-NEXT: plan.kernel adamw ins(%[[R]], {{.+}}) attrs {{.*}}lr = 2.000000e-03 : f64, operand_segments = array<i64: 1, 1, 1, 1, 1, 0, 0, 0>
// CHECK-NOT: plan.kernel adamw
func.func @main(%p: tensor<4xf32> {compute.param = "p"}, %q: tensor<2xf32> {compute.param = "q"},
                %r: tensor<3xf32> {compute.param = "r"},
                %g: tensor<4xf32> {compute.input = 0 : i64}, %h: tensor<2xf32> {compute.input = 1 : i64},
                %k: tensor<3xf32> {compute.input = 2 : i64}, %t: tensor<i64> {compute.input = 3 : i64},
                %m: tensor<4xf32> {compute.state = "p.exp_avg"}, %v: tensor<4xf32> {compute.state = "p.exp_avg_sq"},
                %n: tensor<2xf32> {compute.state = "q.exp_avg"}, %w: tensor<2xf32> {compute.state = "q.exp_avg_sq"},
                %o: tensor<3xf32> {compute.state = "r.exp_avg"}, %x: tensor<3xf32> {compute.state = "r.exp_avg_sq"})
    -> (tensor<4xf32> {compute.updates = 0 : i64}, tensor<4xf32> {compute.updates = 7 : i64},
        tensor<4xf32> {compute.updates = 8 : i64}, tensor<2xf32> {compute.updates = 1 : i64},
        tensor<2xf32> {compute.updates = 9 : i64}, tensor<2xf32> {compute.updates = 10 : i64},
        tensor<3xf32> {compute.updates = 2 : i64}, tensor<3xf32> {compute.updates = 11 : i64},
        tensor<3xf32> {compute.updates = 12 : i64})
    attributes {compute.output_names = ["p", "p.exp_avg", "p.exp_avg_sq", "q", "q.exp_avg", "q.exp_avg_sq", "r", "r.exp_avg", "r.exp_avg_sq"]} {
  %p1, %m1, %v1 = compute.adamw %p, %g, %m, %v, %t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<i64> -> tensor<4xf32>
  %q1, %n1, %w1 = compute.adamw %q, %h, %n, %w, %t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<2xf32>, tensor<2xf32>, tensor<i64> -> tensor<2xf32>
  %r1, %o1, %x1 = compute.adamw %r, %k, %o, %x, %t {lr = 2.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<3xf32>, tensor<3xf32>, tensor<i64> -> tensor<3xf32>
  return %p1, %m1, %v1, %q1, %n1, %w1, %r1, %o1, %x1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Mixed precision: AdamW updates the f32 master and also writes the 16-bit
// parameter's new value (the cast after it folds in), straight into the
// parameter's buffer, which nothing reads after the update: no cast kernel, no
// temporary, no copy. A new value whose old one is still read afterwards goes to
// a temporary and is copied at the end.
// CHECK-LABEL: plan.program @main
// CHECK: %[[P:.+]] = plan.buffer param at {{[0-9]+}} {name = "p"} : memref<4xbf16>
// CHECK: %[[Q:.+]] = plan.buffer param at {{[0-9]+}} {name = "q"} : memref<4xbf16>
// CHECK: %[[W:.+]] = plan.buffer state at {{[0-9]+}} {name = "p.master"} : memref<4xf32>
// CHECK: %[[X:.+]] = plan.buffer state at {{[0-9]+}} {name = "q.master"} : memref<4xf32>
// CHECK: plan.kernel adamw ins(%[[W]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : {{.+}}) outs(%[[W]], %{{.+}}, %{{.+}}, %[[P]] : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xbf16>)
// CHECK: %[[N:.+]] = plan.buffer temp at {{[0-9]+}} : memref<4xbf16>
// CHECK: plan.kernel adamw ins(%[[X]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : {{.+}}) outs(%[[X]], %{{.+}}, %{{.+}}, %[[N]] : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xbf16>)
// CHECK-NOT: plan.kernel cast
// CHECK: plan.kernel reduce_sum ins(%[[Q]] : memref<4xbf16>)
// CHECK-NOT: plan.kernel cast
// CHECK: plan.kernel copy ins(%[[N]] : memref<4xbf16>) outs(%[[Q]] : memref<4xbf16>)
func.func @main(%p: tensor<4xbf16> {compute.param = "p"}, %q: tensor<4xbf16> {compute.param = "q"},
                %w: tensor<4xf32> {compute.state = "p.master"}, %x: tensor<4xf32> {compute.state = "q.master"},
                %g: tensor<4xbf16> {compute.input = 0 : i64}, %t: tensor<i64> {compute.input = 1 : i64},
                %m: tensor<4xf32> {compute.state = "p.exp_avg"}, %v: tensor<4xf32> {compute.state = "p.exp_avg_sq"},
                %n: tensor<4xf32> {compute.state = "q.exp_avg"}, %u: tensor<4xf32> {compute.state = "q.exp_avg_sq"})
    -> (tensor<bf16>, tensor<4xf32> {compute.updates = 2 : i64}, tensor<4xbf16> {compute.updates = 0 : i64},
        tensor<4xf32> {compute.updates = 6 : i64}, tensor<4xf32> {compute.updates = 7 : i64},
        tensor<4xf32> {compute.updates = 3 : i64}, tensor<4xbf16> {compute.updates = 1 : i64},
        tensor<4xf32> {compute.updates = 8 : i64}, tensor<4xf32> {compute.updates = 9 : i64})
    attributes {compute.output_names = ["loss", "p.master", "p", "p.exp_avg", "p.exp_avg_sq", "q.master", "q", "q.exp_avg", "q.exp_avg_sq"]} {
  %w1, %m1, %v1 = compute.adamw %w, %g, %m, %v, %t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xbf16>, tensor<i64> -> tensor<4xf32>
  %p1 = compute.cast %w1 : tensor<4xf32> -> tensor<4xbf16>
  %x1, %n1, %u1 = compute.adamw %x, %g, %n, %u, %t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xbf16>, tensor<i64> -> tensor<4xf32>
  %q1 = compute.cast %x1 : tensor<4xf32> -> tensor<4xbf16>
  %l = compute.reduce_sum %q {axes = array<i64: 0>, keepdims = false} : tensor<4xbf16> -> tensor<bf16>
  return %l, %w1, %p1, %m1, %v1, %x1, %q1, %n1, %u1 : tensor<bf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Where writing in place is not safe (the old value is read later, or the kernel
// is not elementwise-in-place), the new value goes to a temporary and is copied
// into the parameter's buffer at the end of the step.
// CHECK-LABEL: plan.program @main
// CHECK: %[[P:.+]] = plan.buffer param at {{[0-9]+}} {name = "p"} : memref<2x2xf32>
// CHECK: %[[N:.+]] = plan.buffer temp at {{[0-9]+}} : memref<2x2xf32>
// CHECK: plan.kernel add ins(%[[P]], %[[P]] : {{.+}}) outs(%[[N]] : memref<2x2xf32>)
// CHECK: %[[TT:.+]] = plan.buffer temp at {{[0-9]+}} : memref<2x2xf32>
// CHECK: plan.kernel transpose ins(%[[P]] : memref<2x2xf32>) outs(%[[TT]] : memref<2x2xf32>)
// CHECK: plan.kernel copy ins(%[[N]] : memref<2x2xf32>) outs(%[[P]] : memref<2x2xf32>)
// CHECK: plan.return %[[TT]] : memref<2x2xf32>
func.func @main(%p: tensor<2x2xf32> {compute.param = "p"})
    -> (tensor<2x2xf32> {compute.updates = 0 : i64}, tensor<2x2xf32>) {
  %0 = compute.add %p, %p : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %1 = compute.transpose %p {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// A transpose of the last two dimensions that only matmuls read is not run: the
// matmul reads the untransposed buffer with a flag. Its input then lives until
// the matmul, so the relu in between must not reuse its bytes. A transpose with
// another reader stays.
// CHECK-LABEL: plan.program @main
// CHECK: %[[X:.+]] = plan.buffer input at 0
// CHECK: %[[W:.+]] = plan.buffer input at 64
// CHECK: %[[A:.+]] = plan.buffer temp at 128 : memref<4x3xf32>
// CHECK: plan.kernel neg ins(%[[W]] : memref<4x3xf32>) outs(%[[A]] : memref<4x3xf32>)
// CHECK-NOT: plan.kernel transpose
// CHECK: %[[R:.+]] = plan.buffer temp at 192 : memref<2x3xf32>
// CHECK: plan.kernel relu
// CHECK: plan.kernel matmul ins(%[[R]], %[[A]] : memref<2x3xf32>, memref<4x3xf32>) outs(%{{.+}} : memref<2x4xf32>) attrs {transpose_rhs = true}
// CHECK: plan.kernel transpose ins(%[[X]]
func.func @main(%x: tensor<2x3xf32> {compute.input = 0 : i64}, %w: tensor<4x3xf32> {compute.input = 1 : i64})
    -> (tensor<2x4xf32>, tensor<3x2xf32>) {
  %a = compute.neg %w : tensor<4x3xf32>
  %t = compute.transpose %a {perm = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
  %r = compute.relu %x : tensor<2x3xf32>
  %y = compute.matmul %r, %t : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %xt = compute.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %y, %xt : tensor<2x4xf32>, tensor<3x2xf32>
}

// -----

// A compute.fused op is one "fused" kernel: its inputs are the kernel's, its body
// the program (zplan/FusedProgram.h: {op, type, a, b, c} per op; values 0 and 1 are
// the inputs). Here: 2 = Const 0.5 (the bits of the double 0.5), 3 = Add(0, 1),
// 4 = Mul(3, 2), 5 = Cast(4) to bf16 (type 1); ops 0 Const, 11 Add, 13 Mul, 16 Cast.
// CHECK-LABEL: plan.program @main
// CHECK: %[[X:.+]] = plan.buffer input at 0 {index = 0 : i64} : memref<2x4xf32>
// CHECK: %[[B:.+]] = plan.buffer param at 64 {name = "b"} : memref<4xf32>
// CHECK: %[[Y:.+]] = plan.buffer temp at 128 : memref<2x4xbf16>
// CHECK: plan.kernel fused ins(%[[X]], %[[B]] : memref<2x4xf32>, memref<4xf32>) outs(%[[Y]] : memref<2x4xbf16>)
// CHECK-SAME: attrs {program = array<i64: 0, 0, 4602678819172646912, 0, 0, 11, 0, 0, 1, 0, 13, 0, 3, 2, 0, 16, 1, 4, 0, 0>}
// CHECK-NOT: plan.kernel
func.func @main(%x: tensor<2x4xf32> {compute.input = 0 : i64},
                %b: tensor<4xf32> {compute.param = "b"}) -> tensor<2x4xbf16> {
  %r = compute.fused ins(%x, %b : tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xbf16> {
  ^bb0(%a: tensor<2x4xf32>, %c: tensor<4xf32>):
    %half = compute.constant dense<0.5> : tensor<f32>
    %s = compute.add %a, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %m = compute.mul %s, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    %h = compute.cast %m : tensor<2x4xf32> -> tensor<2x4xbf16>
    compute.yield %h : tensor<2x4xbf16>
  }
  return %r : tensor<2x4xbf16>
}

// -----

// A transpose that moves only dimensions of extent 1 leaves every element where it
// is: a view of its input, no kernel. One that reorders the others is a copy.
// CHECK-LABEL: plan.program @main
// CHECK: %[[X:.+]] = plan.buffer input at 0
// CHECK-NEXT: %[[V:.+]] = plan.buffer temp at 0 view of %[[X]] : memref<4x1x3xf32> : memref<1x4x3xf32>
// CHECK-NEXT: %[[Y:.+]] = plan.buffer temp
// CHECK-NEXT: plan.kernel relu ins(%[[V]] : memref<1x4x3xf32>) outs(%[[Y]] : memref<1x4x3xf32>)
// CHECK: plan.kernel transpose ins(%[[X]] : memref<4x1x3xf32>) outs(%{{.+}} : memref<3x4x1xf32>) attrs {perm = array<i64: 2, 0, 1>}
func.func @main(%x: tensor<4x1x3xf32> {compute.input = 0 : i64, compute.name = "x"})
    -> (tensor<1x4x3xf32>, tensor<3x4x1xf32>) attributes {compute.output_names = ["y", "z"]} {
  %t = compute.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x1x3xf32> -> tensor<1x4x3xf32>
  %y = compute.relu %t : tensor<1x4x3xf32>
  %u = compute.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<4x1x3xf32> -> tensor<3x4x1xf32>
  %z = compute.relu %u : tensor<3x4x1xf32>
  return %y, %z : tensor<1x4x3xf32>, tensor<3x4x1xf32>
}

// -----

// Attention's head split and merge run no kernel: the matmuls read the query, key
// and value in place in the fused QKV projection (slice, reshape, transpose: a
// strided view, each matrix with one stride 1) and the second writes its result
// straight into the merged layout. The projection lives until its last reader.
// A chain with another reader (the key, returned) still runs for that reader; a
// transpose no BLAS call can read (neither matrix stride 1) stays a copy.
// CHECK-LABEL: plan.program @main
// CHECK: %[[QKV:.+]] = plan.buffer input at 0 {index = 0 : i64} : memref<2x4x12xf32>
// CHECK-NOT: plan.kernel transpose
// CHECK: plan.kernel slice ins(%[[QKV]] : memref<2x4x12xf32>) outs(%{{.+}} : memref<2x4x4xf32>) attrs {starts = array<i64: 0, 0, 4>
// CHECK-NOT: plan.kernel transpose
// CHECK: %[[S:.+]] = plan.buffer temp at {{[0-9]+}} : memref<2x2x4x4xf32>
// CHECK-NEXT: plan.kernel matmul ins(%[[QKV]], %[[QKV]] : memref<2x4x12xf32>, memref<2x4x12xf32>) outs(%[[S]] : memref<2x2x4x4xf32>)
// CHECK-SAME: lhs_offset = 0 : i64, lhs_shape = array<i64: 2, 2, 4, 2>, lhs_strides = array<i64: 48, 2, 12, 1>
// CHECK-SAME: rhs_offset = 4 : i64, rhs_shape = array<i64: 2, 2, 2, 4>, rhs_strides = array<i64: 48, 2, 1, 12>
// CHECK-NEXT: %[[O:.+]] = plan.buffer temp at {{[0-9]+}} : memref<2x4x2x2xf32>
// CHECK-NEXT: plan.kernel matmul ins(%[[S]], %[[QKV]] : memref<2x2x4x4xf32>, memref<2x4x12xf32>) outs(%[[O]] : memref<2x4x2x2xf32>)
// CHECK-SAME: out_offset = 0 : i64, out_shape = array<i64: 2, 2, 4, 2>, out_strides = array<i64: 16, 2, 4, 1>
// CHECK-SAME: rhs_offset = 8 : i64, rhs_shape = array<i64: 2, 2, 4, 2>, rhs_strides = array<i64: 48, 2, 12, 1>
// CHECK-NEXT: plan.buffer temp at {{[0-9]+}} view of %[[O]] : memref<2x4x2x2xf32> : memref<2x4x4xf32>
// CHECK: plan.kernel relu
// CHECK: plan.kernel transpose ins(%{{.+}} : memref<2x3x4xf32>) outs(%{{.+}} : memref<4x2x3xf32>)
// CHECK: plan.kernel matmul ins(%{{.+}}, %{{.+}} : memref<4x2x3xf32>, memref<3x2xf32>)
// CHECK-NOT: attrs
func.func @main(%qkv: tensor<2x4x12xf32> {compute.input = 0 : i64},
                %x: tensor<2x3x4xf32> {compute.input = 1 : i64},
                %w: tensor<3x2xf32> {compute.input = 2 : i64})
    -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x2x2xf32>) {
  %q = compute.slice %qkv {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
  %k = compute.slice %qkv {starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
  %v = compute.slice %qkv {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
  %q4 = compute.reshape %q : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %k4 = compute.reshape %k : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %v4 = compute.reshape %v : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %qh = compute.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
  %kt = compute.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x2xf32> -> tensor<2x2x2x4xf32>
  %vh = compute.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
  %s = compute.matmul %qh, %kt : tensor<2x2x4x2xf32>, tensor<2x2x2x4xf32> -> tensor<2x2x4x4xf32>
  %o = compute.matmul %s, %vh : tensor<2x2x4x4xf32>, tensor<2x2x4x2xf32> -> tensor<2x2x4x2xf32>
  %om = compute.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
  %y = compute.reshape %om : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %r = compute.relu %y : tensor<2x4x4xf32>
  %xt = compute.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %z = compute.matmul %xt, %w : tensor<4x2x3xf32>, tensor<3x2xf32> -> tensor<4x2x2xf32>
  return %r, %k, %z : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x2x2xf32>
}

// -----

// The fused classifier writes the logits' gradient over the logits (read through
// a reshape, nothing reads them after it): a view of their buffer, which lives
// until the gradient's last reader. A view of that gradient is a view of the
// same buffer (views are one level).
// CHECK-LABEL: plan.program @main
// CHECK: %[[LOGITS:.+]] = plan.buffer temp at [[AT:[0-9]+]] : memref<2x4x8xf32>
// CHECK: plan.kernel matmul {{.*}} outs(%[[LOGITS]] : memref<2x4x8xf32>)
// CHECK: %[[FLAT:.+]] = plan.buffer temp at [[AT]] view of %[[LOGITS]] : memref<2x4x8xf32> : memref<8x8xf32>
// CHECK: %[[DS:.+]] = plan.buffer temp at [[AT]] view of %[[LOGITS]] : memref<2x4x8xf32> : memref<8x8xf32>
// CHECK: plan.kernel softmax_cross_entropy_with_grad ins(%[[FLAT]], {{.*}}) outs(%{{.+}}, %[[DS]] : memref<f32>, memref<8x8xf32>)
// CHECK: %[[BACK:.+]] = plan.buffer temp at [[AT]] view of %[[LOGITS]] : memref<2x4x8xf32> : memref<2x4x8xf32>
// CHECK: plan.kernel matmul ins(%[[BACK]], {{.*}})
func.func @main(%w: tensor<4x8xf32> {compute.param = "w"},
                %x: tensor<2x4x4xf32> {compute.input = 0 : i64},
                %l: tensor<8xi64> {compute.input = 1 : i64})
    -> (tensor<f32>, tensor<2x4x4xf32>) {
  %logits = compute.matmul %x, %w : tensor<2x4x4xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
  %flat = compute.reshape %logits : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %one = compute.constant dense<1.0> : tensor<f32>
  %loss, %ds = compute.softmax_cross_entropy_with_grad %flat, %l, %one {reduction = "mean"} : tensor<8x8xf32>, tensor<8xi64>, tensor<f32> -> tensor<f32>, tensor<8x8xf32>
  %back = compute.reshape %ds : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %wt = compute.transpose %w {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %dx = compute.matmul %back, %wt : tensor<2x4x8xf32>, tensor<8x4xf32> -> tensor<2x4x4xf32>
  return %loss, %dx : tensor<f32>, tensor<2x4x4xf32>
}

// -----

// A weight gradient with its bias gradient: one matmul kernel that reads G
// transposed in place (a flag) and writes both results.
// CHECK-LABEL: plan.program @main
// CHECK: %[[G:.+]] = plan.buffer input at {{[0-9]+}} {index = 0 : i64} : memref<8x16xbf16>
// CHECK: %[[X:.+]] = plan.buffer input at {{[0-9]+}} {index = 1 : i64} : memref<8x4xbf16>
// CHECK: %[[DW:.+]] = plan.buffer temp at {{[0-9]+}} : memref<16x4xbf16>
// CHECK: %[[DB:.+]] = plan.buffer temp at {{[0-9]+}} : memref<16xbf16>
// CHECK: plan.kernel matmul ins(%[[G]], %[[X]] : memref<8x16xbf16>, memref<8x4xbf16>) outs(%[[DW]], %[[DB]] : memref<16x4xbf16>, memref<16xbf16>) attrs {operand_segments = array<i64: 1, 1, 0, 0, 0>, transpose_lhs = true}
// CHECK-NOT: plan.kernel
// CHECK: plan.return %[[DW]], %[[DB]]
func.func @main(%g: tensor<8x16xbf16> {compute.input = 0 : i64}, %x: tensor<8x4xbf16> {compute.input = 1 : i64})
    -> (tensor<16x4xbf16>, tensor<16xbf16>) {
  %gt = compute.transpose %g {perm = array<i64: 1, 0>} : tensor<8x16xbf16> -> tensor<16x8xbf16>
  %dw, %db = compute.fused_matmul %gt, %x : tensor<16x8xbf16>, tensor<8x4xbf16> -> tensor<16x4xbf16>, tensor<16xbf16>
  return %dw, %db : tensor<16x4xbf16>, tensor<16xbf16>
}

// -----

// GELU in a product's epilogue: the forward kernel writes the result and the
// pre-activation; the gradient's kernel reads the pre-activation as its fifth
// operand segment. Both keep `activation`.
// CHECK-LABEL: plan.program @main
// CHECK: plan.kernel matmul ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<8x4xbf16>, memref<4x16xbf16>, memref<16xbf16>) outs(%{{.+}}, %[[PRE:.+]] : memref<8x16xbf16>, memref<8x16xbf16>) attrs {activation = "gelu_tanh", operand_segments = array<i64: 1, 1, 1, 0, 0>}
// CHECK: plan.kernel matmul ins(%{{.+}}, %{{.+}}, %[[PRE]] : memref<8x4xbf16>, memref<4x16xbf16>, memref<8x16xbf16>) outs(%{{.+}} : memref<8x16xbf16>) attrs {activation = "gelu_tanh", operand_segments = array<i64: 1, 1, 0, 0, 1>}
func.func @main(%x: tensor<8x4xbf16> {compute.input = 0 : i64}, %w: tensor<4x16xbf16> {compute.input = 1 : i64},
                %b: tensor<16xbf16> {compute.input = 2 : i64}, %dy: tensor<8x4xbf16> {compute.input = 3 : i64})
    -> (tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %g, %p = compute.fused_matmul %x, %w bias(%b : tensor<16xbf16>) {activation = "gelu_tanh"} : tensor<8x4xbf16>, tensor<4x16xbf16> -> tensor<8x16xbf16> pre_activation(tensor<8x16xbf16>)
  %dp = compute.fused_matmul %dy, %w activation_input(%p : tensor<8x16xbf16>) {activation = "gelu_tanh"} : tensor<8x4xbf16>, tensor<4x16xbf16> -> tensor<8x16xbf16>
  return %g, %dp : tensor<8x16xbf16>, tensor<8x16xbf16>
}
