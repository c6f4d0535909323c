// RUN: %mlir_opt_zero %s | FileCheck %s
// Round trip: printing and parsing again gives the same IR.
// RUN: %mlir_opt_zero %s | %mlir_opt_zero | FileCheck %s

// Every buffer role, a kernel with attributes, named outputs.
// CHECK-LABEL: plan.program @main
// CHECK-SAME: arena_bytes = 448 : i64, world_size = 1 : i64
plan.program @main attributes {arena_bytes = 448 : i64, world_size = 1 : i64} {
  // CHECK: %[[W:.+]] = plan.buffer param at 0 {name = "fc.weight"} : memref<4x4xf32>
  %w = plan.buffer param at 0 {name = "fc.weight"} : memref<4x4xf32>
  // CHECK: %[[X:.+]] = plan.buffer input at 64 {index = 0 : i64, name = "x"} : memref<2x4xf32>
  %x = plan.buffer input at 64 {index = 0 : i64, name = "x"} : memref<2x4xf32>
  // CHECK: %[[C:.+]] = plan.buffer constant at 128 {value = dense<5.000000e-01> : tensor<f32>} : memref<f32>
  %c = plan.buffer constant at 128 {value = dense<0.5> : tensor<f32>} : memref<f32>
  // CHECK: %[[Y:.+]] = plan.buffer temp at 192 : memref<2x4xf32>
  %y = plan.buffer temp at 192 : memref<2x4xf32>
  // CHECK: plan.kernel matmul ins(%[[X]], %[[W]] : memref<2x4xf32>, memref<4x4xf32>) outs(%[[Y]] : memref<2x4xf32>)
  plan.kernel matmul ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%y : memref<2x4xf32>)
  %z = plan.buffer temp at 256 : memref<2x4xf32>
  // CHECK: plan.kernel softmax ins(%[[Y]] : memref<2x4xf32>) outs(%{{.+}} : memref<2x4xf32>) attrs {axis = 1 : i64}
  plan.kernel softmax ins(%y : memref<2x4xf32>) outs(%z : memref<2x4xf32>) attrs {axis = 1 : i64}
  // CHECK: plan.return %{{.+}} : memref<2x4xf32> {names = ["probs"]}
  plan.return %z : memref<2x4xf32> {names = ["probs"]}
}
