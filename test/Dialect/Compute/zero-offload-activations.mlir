// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-offload-activations)' | FileCheck %s

// The activations backward reads from forward go to the host once made and come
// back before their first backward reader; forward readers keep the device value.
// A value backward reads at once (the loss's own results) stays; graph inputs stay.
// CHECK-LABEL: func.func @main
// CHECK: %[[H:.+]] = compute.matmul %arg2, %arg0
// CHECK-NEXT: %[[SAVEDH:.+]] = compute.to_host %[[H]] : tensor<2x5xf32>
// CHECK-NEXT: %[[A:.+]] = compute.relu %[[H]]
// CHECK-NEXT: %[[SAVEDA:.+]] = compute.to_host %[[A]] : tensor<2x5xf32>
// CHECK-NEXT: compute.matmul %[[A]], %arg1
// CHECK-NEXT: %loss, %log_prob = compute.softmax_cross_entropy
// CHECK-NEXT: compute.softmax_cross_entropy_grad %log_prob
// CHECK: %[[BACKA:.+]] = compute.to_device %[[SAVEDA]] : tensor<2x5xf32>
// CHECK-NEXT: compute.transpose %[[BACKA]]
// CHECK: %[[BACKH:.+]] = compute.to_device %[[SAVEDH]] : tensor<2x5xf32>
// CHECK-NEXT: compute.relu_grad %[[BACKH]]
// CHECK-NOT: %[[H]]
// CHECK-NOT: %[[A]]
// CHECK: return
func.func @main(%w1: tensor<3x5xf32> {compute.param = "w1"}, %wo: tensor<5x7xf32> {compute.param = "wo"},
                %x: tensor<2x3xf32> {compute.input = 0 : i64}, %l: tensor<2xi64> {compute.input = 1 : i64})
    -> tensor<f32> attributes {compute.output_names = ["loss"]} {
  %h = compute.matmul %x, %w1 : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
  %a = compute.relu %h : tensor<2x5xf32>
  %logits = compute.matmul %a, %wo : tensor<2x5xf32>, tensor<5x7xf32> -> tensor<2x7xf32>
  %loss, %lp = compute.softmax_cross_entropy %logits, %l {reduction = "mean"} : tensor<2x7xf32>, tensor<2xi64> -> tensor<f32>, tensor<2x7xf32>
  return %loss : tensor<f32>
}
