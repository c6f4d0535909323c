// RUN: zero-opt %s --convert-compute-to-plan --split-input-file | FileCheck %s

// Parameters, inputs and constants are placed first and live for the whole step;
// temporaries follow, and a dead temporary's bytes are reused (64-byte aligned).
// CHECK-LABEL: plan.program @main
// CHECK-SAME: arena_bytes = 320 : i64, world_size = 1 : i64
// CHECK: %[[W:.+]] = plan.buffer "param" at 0 {name = "w"} : memref<4x4xf32>
// CHECK: %[[X:.+]] = plan.buffer "input" at 64 {index = 0 : i64, name = "x"} : memref<2x4xf32>
// CHECK: %[[C:.+]] = plan.buffer "constant" at 128 {value = dense<2.000000e+00> : tensor<f32>} : memref<f32>
// CHECK: %[[T0:.+]] = plan.buffer "temp" at 192 : memref<2x4xf32>
// CHECK: plan.kernel "matmul" ins(%[[X]], %[[W]] : {{.*}}) outs(%[[T0]] : memref<2x4xf32>)
// CHECK: %[[T1:.+]] = plan.buffer "temp" at 256 : memref<2x4xf32>
// CHECK: plan.kernel "mul" ins(%[[T0]], %[[C]] : {{.*}}) outs(%[[T1]] : memref<2x4xf32>)
// The matmul result is dead after the mul, so the relu writes into its bytes.
// CHECK: %[[T2:.+]] = plan.buffer "temp" at 192 : memref<2x4xf32>
// CHECK: plan.kernel "relu" ins(%[[T1]] : memref<2x4xf32>) outs(%[[T2]] : memref<2x4xf32>)
// CHECK: %[[T3:.+]] = plan.buffer "temp" at 256 : memref<2x4xf32>
// CHECK: plan.kernel "softmax" ins(%[[T2]] : memref<2x4xf32>) outs(%[[T3]] : memref<2x4xf32>) attrs {axis = 1 : i64}
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
// CHECK: %[[X:.+]] = plan.buffer "input" at 0
// CHECK: %[[Y:.+]] = plan.buffer "temp" at 128 : memref<2x8xf32>
// CHECK: %[[M:.+]] = plan.buffer "temp" at 192 : memref<2x1xf32>
// CHECK: %[[R:.+]] = plan.buffer "temp" at 256 : memref<2x1xf32>
// CHECK: plan.kernel "layer_norm" ins(%[[X]], {{.*}}) outs(%[[Y]], %[[M]], %[[R]] : {{.*}}) attrs {axis = 1 : i64, epsilon = 1.000000e-05 : f64}
// CHECK: %[[A:.+]] = plan.buffer "temp" at 192 : memref<2x8xf32>
// CHECK: plan.kernel "add" ins(%[[Y]], %[[Y]] : {{.*}}) outs(%[[A]] : memref<2x8xf32>)
// CHECK: %[[B:.+]] = plan.buffer "temp" at 128 : memref<2x8xf32>
// CHECK: plan.kernel "neg" ins(%[[A]] : memref<2x8xf32>) outs(%[[B]] : memref<2x8xf32>)
// CHECK: plan.return %[[A]], %[[B]] : memref<2x8xf32>, memref<2x8xf32>
func.func @main(%x: tensor<2x8xf32> {compute.input = 0 : i64}, %g: tensor<8xf32> {compute.input = 1 : i64})
    -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %a = compute.add %y, %y : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %b = compute.neg %a : tensor<2x8xf32>
  return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}
