// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=2 world-size=2 bucket-size-mb=0.0001},canonicalize,zero-schedule,zero-offload-optimizer)' | FileCheck %s

// ZeRO-Offload (mixed precision, stage 2, two buckets): the f32 masters and the
// AdamW state become host arguments; the step count and the loss scale, which the
// device reads too, stay on the device.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg6: tensor<f32> {compute.runtime = "loss_scale"}
// CHECK-SAME: %arg7: tensor<i64> {compute.state = "optimizer.step"}
// CHECK-SAME: {compute.bucket_elements = 42 : i64, {{.+}}compute.host, compute.master_bucket = "bucket0"}
// CHECK-SAME: {compute.bucket_elements = 42 : i64, {{.+}}compute.host, compute.state = "bucket0.exp_avg"}
// A reduced gradient crosses as soon as it is waited for; the overflow count, which
// the device takes on it, moves up beside the copy, so the device copy dies there.
// CHECK: %[[W:.+]] = zero.wait
// CHECK-NEXT: %[[G0:.+]] = compute.slice %[[W]]
// CHECK-NEXT: %[[H0:.+]] = compute.to_host %[[G0]] : tensor<8xbf16>
// CHECK-NEXT: compute.nonfinite_count %[[G0]]
// CHECK-NEXT: %[[G1:.+]] = compute.slice %[[W]]
// CHECK-NEXT: %[[H1:.+]] = compute.to_host %[[G1]] : tensor<21xbf16>
// CHECK-NEXT: compute.nonfinite_count %[[G1]]
// The update and the cast to bf16 run on the host; the new bf16 slice crosses back
// right before the gather that reads it.
// CHECK: %[[P:.+]], %{{.+}}, %{{.+}} = compute.adamw %{{.+}}, %[[H1]], {{.+}}zero.host
// CHECK-NEXT: %[[C:.+]] = compute.cast %[[P]] {zero.host} : tensor<21xf32> -> tensor<21xbf16>
// CHECK-NEXT: %[[D:.+]] = compute.to_device %[[C]] : tensor<21xbf16>
// CHECK-NEXT: zero.all_gather_start %[[D]]
// CHECK: compute.adamw %{{.+}}, %[[H0]], {{.+}}zero.host
func.func @main(%emb: tensor<7x3xf32> {compute.param = "emb"}, %w1: tensor<3x5xf32> {compute.param = "w1"},
                %g1: tensor<5xf32> {compute.param = "g1"}, %wo: tensor<5x3xf32> {compute.param = "wo"},
                %t: tensor<2xi64> {compute.input = 0 : i64}, %l: tensor<2xi64> {compute.input = 1 : i64})
    -> tensor<f32> attributes {compute.output_names = ["loss"]} {
  %e = compute.gather %emb, %t {axis = 0 : i64} : tensor<7x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
  %h = compute.matmul %e, %w1 : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
  %half = compute.constant dense<0.5> : tensor<f32>
  %hs = compute.mul %h, %half : tensor<2x5xf32>, tensor<f32> -> tensor<2x5xf32>
  %z = compute.constant dense<0.0> : tensor<5xf32>
  %n, %mean, %rstd = compute.layer_norm %hs, %g1, %z {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x5xf32>, tensor<5xf32>, tensor<5xf32> -> tensor<2x5xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %o = compute.matmul %n, %wo : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
  %et = compute.transpose %emb {perm = array<i64: 1, 0>} : tensor<7x3xf32> -> tensor<3x7xf32>
  %logits = compute.matmul %o, %et : tensor<2x3xf32>, tensor<3x7xf32> -> tensor<2x7xf32>
  %loss, %lp = compute.softmax_cross_entropy %logits, %l {reduction = "mean"} : tensor<2x7xf32>, tensor<2xi64> -> tensor<f32>, tensor<2x7xf32>
  return %loss : tensor<f32>
}
