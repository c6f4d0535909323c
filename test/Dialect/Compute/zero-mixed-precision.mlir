// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16})' | FileCheck %s --check-prefix=CAST
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=fp16},zero-build-training-step,canonicalize,cse)' | FileCheck %s --check-prefix=STEP
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=2 world-size=4 bucket-size-mb=0.0001},canonicalize)' | FileCheck %s --check-prefix=S2
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001},canonicalize)' | FileCheck %s --check-prefix=S3
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse,zero-shard{stage=1 world-size=4 bucket-size-mb=0.0001 reduce-dtype=fp32},canonicalize)' | FileCheck %s --check-prefix=F32RED

// Autocast: trainable parameters become bf16; matmuls take and give bf16; the
// scalar constant takes the tensor's type instead of widening it; layer_norm
// takes f32 operands (its bias is an f32 constant); the loss reads the bf16 logits
// into f32 log-probabilities.
// CAST-LABEL: func.func @main(%arg0: tensor<7x3xbf16> {compute.param = "emb"}
// CAST-SAME: tensor<5xbf16> {compute.param = "g1"}
// CAST-SAME: compute.precision = "bf16"
// CAST: compute.matmul {{.+}} : tensor<2x3xbf16>, tensor<3x5xbf16> -> tensor<2x5xbf16>
// CAST: compute.cast {{.+}} : tensor<f32> -> tensor<bf16>
// CAST: compute.mul {{.+}} : tensor<2x5xbf16>, tensor<bf16> -> tensor<2x5xbf16>
// CAST: compute.cast {{.+}} : tensor<2x5xbf16> -> tensor<2x5xf32>
// CAST: compute.cast {{.+}} : tensor<5xbf16> -> tensor<5xf32>
// CAST: compute.layer_norm {{.+}} : tensor<2x5xf32>, tensor<5xf32>, tensor<5xf32>
// CAST: compute.cast {{.+}} : tensor<2x5xf32> -> tensor<2x5xbf16>
// CAST-NOT: compute.cast {{.+}} : tensor<2x7xbf16> -> tensor<2x7xf32>
// CAST: compute.softmax_cross_entropy {{.+}} : tensor<2x7xbf16>, tensor<2xi64> -> tensor<f32>, tensor<2x7xf32>

// The training step: f32 master copies, the loss scale the runtime sets, an
// overflow count over the 16-bit gradients, the optimizer on the master copy
// (multiplied by 1 / scale, skipped on overflow), the parameter its f16 rounding, and
// a step counter that does not count skipped steps. The loss's gradient of the f16
// logits is f16, from the f32 log-probabilities.
// STEP-LABEL: func.func @main
// STEP-SAME: tensor<f32> {compute.runtime = "loss_scale"}
// STEP-SAME: tensor<7x3xf32> {compute.master = "emb"}
// STEP-SAME: compute.output_names = ["loss", "overflow", "emb", "emb"
// STEP: compute.softmax_cross_entropy_grad {{.+}} : tensor<2x7xf32>, tensor<2xi64>, tensor<f32> -> tensor<2x7xf16>
// One count over the four gradients (one kernel).
// STEP: compute.nonfinite_count %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<7x3xf16>, tensor<3x5xf16>, tensor<5xf16>, tensor<5x3xf16> -> tensor<f32>
// STEP-NOT: compute.nonfinite_count
// STEP: %[[SCALE:.+]] = compute.reciprocal %arg6 : tensor<f32>
// STEP: compute.adamw %{{.+}} scale %[[SCALE]] skip_if %[[OVF:[0-9]+]] {{.+}} : tensor<7x3xf32>, tensor<7x3xf16>, tensor<i64> -> tensor<7x3xf32>
// STEP: compute.cast %new_param : tensor<7x3xf32> -> tensor<7x3xf16>
// STEP: %[[SKIP:.+]] = compute.cast %[[OVF]] : tensor<f32> -> tensor<i1>
// STEP: compute.sub
// STEP: return %{{.+}}, %[[OVF]],

// Stage 2: bf16 gradient buckets reduce-scattered; master copies and moments as
// f32 bucket slices; the overflow count taken on the reduced slices only and
// summed over the ranks; the updated slices rounded to bf16 and all-gathered.
// S2-LABEL: func.func @main
// S2-SAME: tensor<11xf32> {compute.bucket_elements = 44 : i64, compute.bucket_members = [{{.+}}], compute.master_bucket = "bucket0"}
// S2-NOT: compute.master =
// S2: shard.reduce_scatter {{.+}} : tensor<16xbf16> -> tensor<4xbf16>
// S2: shard.reduce_scatter {{.+}} : tensor<44xbf16> -> tensor<11xbf16>
// S2-COUNT-2: compute.nonfinite_count %reduce_scatter
// S2: shard.all_reduce {{.+}} : tensor<1xf32> -> tensor<1xf32>
// S2: compute.adamw {{.+}} : tensor<11xf32>, tensor<11xbf16>, tensor<i64> -> tensor<11xf32>
// S2: compute.cast %new_param : tensor<11xf32> -> tensor<11xbf16>
// S2: shard.all_gather {{.+}} : tensor<11xbf16> -> tensor<44xbf16>

// Stage 3: the parameters are bf16 bucket slices, gathered in bf16; the master
// copies f32 slices of the same buckets.
// S3-LABEL: func.func @main
// S3-SAME: tensor<11xbf16> {compute.bucket_elements = 44 : i64, compute.bucket_members = [{{.+}}], compute.param_bucket = "bucket0"}
// S3-SAME: tensor<11xf32> {compute.bucket_elements = 44 : i64, compute.bucket_members = [{{.+}}], compute.master_bucket = "bucket0"}
// S3: shard.all_gather {{.+}} {zero.phase = "forward"} : tensor<11xbf16> -> tensor<44xbf16>
// S3: shard.all_reduce {{.+}} : tensor<1xf32> -> tensor<1xf32>
// S3: compute.cast %new_param : tensor<11xf32> -> tensor<11xbf16>
// S3-NOT: shard.all_gather {{.+}} : tensor<11xbf16> -> tensor<44xbf16>
// S3: return

// --reduce-dtype=fp32: the bf16 gradient bucket is widened, then reduced in f32.
// F32RED: compute.cast {{.+}} : tensor<44xbf16> -> tensor<44xf32>
// F32RED: shard.reduce_scatter {{.+}} : tensor<44xf32> -> tensor<11xf32>
// F32RED: compute.adamw {{.+}} : tensor<11xf32>, tensor<11xf32>, tensor<i64> -> tensor<11xf32>
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
