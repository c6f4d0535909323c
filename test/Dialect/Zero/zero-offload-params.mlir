// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=2 bucket-size-mb=0.0001},canonicalize,zero-schedule,zero-offload-params)' | FileCheck %s --check-prefix=PARAM
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=2 bucket-size-mb=0.0001},canonicalize,zero-schedule,zero-offload-optimizer,zero-offload-params)' | FileCheck %s --check-prefix=BOTH

// ZeRO-3 parameter offload (mixed precision, two buckets whose gathers are fused
// into one): the bf16 slices become host arguments; the f32 masters and the AdamW
// state stay where the optimizer runs.
// PARAM-LABEL: func.func @main
// PARAM-SAME: %arg4: tensor<21xbf16> {{{.+}}compute.host, compute.param_bucket = "bucket0"}
// PARAM-SAME: %arg5: tensor<21xf32> {{{.+}}}], compute.master_bucket = "bucket0"}
// PARAM-SAME: %arg8: tensor<8xbf16> {{{.+}}compute.host, compute.param_bucket = "bucket1"}
// Each gather copies the slices it reads to the device right before it (the fused
// gather's concatenation reads the copies), forward and backward alike.
// PARAM: %[[D1:.+]] = compute.to_device %arg8 : tensor<8xbf16>
// PARAM-NEXT: %[[D0:.+]] = compute.to_device %arg4 : tensor<21xbf16>
// PARAM-NEXT: %[[C:.+]] = compute.concat %[[D0]], %[[D1]]
// PARAM-NEXT: zero.all_gather_start %[[C]] {{.+}}"forward"
// PARAM: %[[B1:.+]] = compute.to_device %arg8 : tensor<8xbf16>
// PARAM-NEXT: %[[B0:.+]] = compute.to_device %arg4 : tensor<21xbf16>
// PARAM-NEXT: %[[BC:.+]] = compute.concat %[[B0]], %[[B1]]
// PARAM-NEXT: zero.all_gather_start %[[BC]] {{.+}}"backward"
// The optimizer runs on the device; the new bf16 slice crosses to the host as soon
// as it is made, and that copy is what the step returns.
// PARAM: compute.adamw %arg5
// PARAM-NEXT: %[[N0:.+]] = compute.cast %new_param : tensor<21xf32> -> tensor<21xbf16>
// PARAM-NEXT: %[[H0:.+]] = compute.to_host %[[N0]] : tensor<21xbf16>
// PARAM: return %loss, %{{.+}}, %{{.+}}, %{{.+}}, %new_param, %[[H0]],
// PARAM-NOT: compute.to_device

// With the optimizer offloaded too, the new slices are made on the host and stay
// there: the copies back to the device that the optimizer offload placed are gone.
// BOTH-LABEL: func.func @main
// BOTH-SAME: %arg4: tensor<21xbf16> {{{.+}}compute.host, compute.param_bucket = "bucket0"}
// BOTH-SAME: %arg5: tensor<21xf32> {{{.+}}compute.host, compute.master_bucket = "bucket0"}
// BOTH: zero.all_gather_start {{.+}}"backward"
// BOTH-NOT: compute.to_device
// BOTH: %[[P0:.+]] = compute.cast %new_param {zero.host} : tensor<21xf32> -> tensor<21xbf16>
// BOTH: %[[P1:.+]] = compute.cast %new_param_6 {zero.host} : tensor<8xf32> -> tensor<8xbf16>
// BOTH-NOT: compute.to_device
// BOTH: return %loss, %{{.+}}, %{{.+}}, %{{.+}}, %new_param, %[[P0]], %{{.+}}, %{{.+}}, %new_param_6, %[[P1]],
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
