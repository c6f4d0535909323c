// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=2 bucket-size-mb=0.0001},canonicalize,zero-schedule,zero-offload-optimizer,zero-offload-params,zero-offload-nvme{params=true optimizer=true})' | FileCheck %s
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=2 bucket-size-mb=0.0001},canonicalize,zero-schedule,zero-offload-optimizer,zero-offload-params,zero-offload-nvme{optimizer=true})' | FileCheck %s --check-prefix=OPT
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=2 bucket-size-mb=0.0001},canonicalize,zero-schedule,zero-offload-optimizer,zero-offload-params,zero-offload-nvme{params=true optimizer=true read-ahead=1})' | FileCheck %s --check-prefix=AHEAD

// ZeRO-Infinity (mixed precision, stage 3, two buckets): the bf16 slices, the f32
// masters and the AdamW state leave host memory for the NVMe file.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %arg4: tensor<21xbf16> {{{.+}}compute.nvme, compute.param_bucket = "bucket0"}
// CHECK-SAME: %arg5: tensor<21xf32> {{{.+}}compute.master_bucket = "bucket0", compute.nvme}
// CHECK-SAME: %arg6: tensor<21xf32> {{{.+}}compute.nvme, compute.state = "bucket0.exp_avg"}
// Each reader reads its own host copy right before it: the gathers' copies to the
// device, forward and backward ...
// CHECK: %[[R1:.+]] = compute.nvme_read %arg8 : tensor<8xbf16>
// CHECK-NEXT: compute.to_device %[[R1]]
// CHECK: zero.all_gather_start {{.+}}"forward"
// CHECK: %[[B1:.+]] = compute.nvme_read %arg8 : tensor<8xbf16>
// CHECK-NEXT: compute.to_device %[[B1]]
// CHECK: zero.all_gather_start {{.+}}"backward"
// ... and the host optimizer, whose new values go back at once.
// CHECK: %[[M:.+]] = compute.nvme_read %arg5 : tensor<21xf32>
// CHECK-NEXT: %[[A:.+]] = compute.nvme_read %arg6 : tensor<21xf32>
// CHECK-NEXT: %[[V:.+]] = compute.nvme_read %arg7 : tensor<21xf32>
// CHECK-NEXT: %new_param, %new_exp_avg, %new_exp_avg_sq = compute.adamw %[[M]], %{{.+}}, %[[A]], %[[V]],
// CHECK-NEXT: %[[WM:.+]] = compute.nvme_write %new_param : tensor<21xf32>
// CHECK-DAG: %[[WV:.+]] = compute.nvme_write %new_exp_avg_sq : tensor<21xf32>
// CHECK-DAG: %[[WA:.+]] = compute.nvme_write %new_exp_avg : tensor<21xf32>
// CHECK: %[[P16:.+]] = compute.cast %new_param {zero.host} : tensor<21xf32> -> tensor<21xbf16>
// CHECK-NEXT: %[[WP:.+]] = compute.nvme_write %[[P16]] : tensor<21xbf16>
// The step returns the writes: the new values' home is the file.
// CHECK: return %loss, %{{.+}}, %[[WA]], %[[WV]], %[[WM]], %[[WP]],

// Only the optimizer's states move: the parameter slices stay in host memory.
// OPT-LABEL: func.func @main
// OPT-SAME: %arg4: tensor<21xbf16> {{{.+}}compute.host, compute.param_bucket = "bucket0"}
// OPT-SAME: %arg5: tensor<21xf32> {{{.+}}compute.master_bucket = "bucket0", compute.nvme}
// OPT: compute.to_device %arg8
// OPT: compute.nvme_read %arg5
// read-ahead=1: each reader's reads move before the reader before it (the first
// two readers' before the first), so the NVMe worker reads the next value while
// one is used, in the order they are needed.
// AHEAD-LABEL: func.func @main
// AHEAD: %[[F1:.+]] = compute.nvme_read %arg8 : tensor<8xbf16>
// AHEAD-NEXT: %[[F2:.+]] = compute.nvme_read %arg4 : tensor<21xbf16>
// AHEAD-NEXT: compute.to_device %[[F1]]
// AHEAD-NEXT: %[[B1:.+]] = compute.nvme_read %arg8 : tensor<8xbf16>
// AHEAD-NEXT: compute.to_device %[[F2]]
// AHEAD: zero.all_gather_start {{.+}}"forward"
// AHEAD: %[[B2:.+]] = compute.nvme_read %arg4 : tensor<21xbf16>
// AHEAD-NEXT: compute.to_device %[[B1]]
// AHEAD-NEXT: %[[M:.+]] = compute.nvme_read %arg5 : tensor<21xf32>
// AHEAD-NEXT: compute.nvme_read %arg6
// AHEAD-NEXT: compute.nvme_read %arg7
// AHEAD-NEXT: compute.to_device %[[B2]]
// AHEAD: zero.all_gather_start {{.+}}"backward"
// AHEAD: compute.adamw %[[M]],

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
