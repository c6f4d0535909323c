// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=0 world-size=4 bucket-size-mb=0.0001})' | FileCheck %s --check-prefix=S0
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=1 world-size=4 bucket-size-mb=0.0001})' | FileCheck %s --check-prefix=S1
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=2 world-size=4 bucket-size-mb=0.0001})' | FileCheck %s --check-prefix=S2
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001})' | FileCheck %s --check-prefix=S3
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001 persistence-threshold=10})' | FileCheck %s --check-prefix=PERSIST

// A tied embedding (emb is gathered from and multiplied by), 56 parameters. With
// 104-byte buckets, first-use order gives three buckets: emb (21 elements, padded
// to 24 for 4 ranks), w1 + b1 (20), wo (15, padded to 16).

// Stage 0: gradients are all-reduced per bucket; the optimizer is unchanged.
// S0: shard.grid @zero(shape = 4)
// S0-DAG: shard.all_reduce {{.+}} : tensor<24xf32> -> tensor<24xf32>
// S0-DAG: shard.all_reduce {{.+}} : tensor<20xf32> -> tensor<20xf32>
// S0-DAG: shard.all_reduce {{.+}} : tensor<16xf32> -> tensor<16xf32>
// S0-NOT: shard.reduce_scatter
// S0-COUNT-4: compute.adamw {{.+}} -> tensor<{{[0-9x]+}}xf32>

// Stage 1: reduce-scatter after backward (after the last gradient op), the update
// of the own slice with sharded state, all-gather of the parameters.
// S1-LABEL: func.func @main
// The sharded state records its bucket's layout (checkpoints map it to parameters).
// S1-SAME: tensor<6xf32> {compute.bucket_elements = 24 : i64, compute.bucket_members = [{name = "emb", offset = 0 : i64, shape = array<i64: 7, 3>}], compute.state = "bucket0.exp_avg"}
// S1-SAME: tensor<5xf32> {compute.bucket_elements = 20 : i64, compute.bucket_members = [{{.+}}], compute.state = "bucket1.exp_avg"}
// S1-SAME: tensor<4xf32> {compute.bucket_elements = 16 : i64, compute.bucket_members = [{{.+}}], compute.state = "bucket2.exp_avg"}
// S1: compute.gather_grad
// S1: shard.reduce_scatter {{.+}} : tensor<24xf32> -> tensor<6xf32>
// S1: shard.all_slice {{.+}} : tensor<24xf32> -> tensor<6xf32>
// S1: shard.reduce_scatter {{.+}} : tensor<20xf32> -> tensor<5xf32>
// S1: shard.reduce_scatter {{.+}} : tensor<16xf32> -> tensor<4xf32>
// S1: compute.adamw {{.+}} : tensor<6xf32>, tensor<6xf32>, tensor<i64> -> tensor<6xf32>
// S1: shard.all_gather {{.+}} : tensor<6xf32> -> tensor<24xf32>

// Stage 2: a bucket is reduce-scattered as soon as backward completes it: wo's
// (the last used in forward, so the first done in backward) before emb's gradient.
// S2-LABEL: func.func @main
// S2: shard.reduce_scatter {{.+}} : tensor<16xf32> -> tensor<4xf32>
// S2: shard.reduce_scatter {{.+}} : tensor<20xf32> -> tensor<5xf32>
// S2: compute.gather_grad
// S2: shard.reduce_scatter {{.+}} : tensor<24xf32> -> tensor<6xf32>
// S2: compute.adamw
// S2: shard.all_gather

// Stage 3: parameters are bucket slices; a bucket is gathered before its first
// forward use and again before its first backward use; the update is in place.
// S3-LABEL: func.func @main
// S3-NOT: compute.param = "emb"
// S3-SAME: tensor<6xf32> {compute.bucket_elements = 24 : i64, compute.bucket_members = [{name = "emb", offset = 0 : i64, shape = array<i64: 7, 3>}], compute.param_bucket = "bucket0"}
// S3-SAME: tensor<5xf32> {compute.bucket_elements = 20 : i64, compute.bucket_members = [{name = "w1", offset = 0 : i64, shape = array<i64: 3, 5>}, {name = "b1", offset = 15 : i64, shape = array<i64: 5>}], compute.param_bucket = "bucket1"}
// S3: %[[F0:.+]] = shard.all_gather %{{.+}} on @zero grid_axes = [0] gather_axis = 0 {zero.phase = "forward"} : tensor<6xf32> -> tensor<24xf32>
// S3: compute.slice %[[F0]] {starts = array<i64: 0>, steps = array<i64: 1>} : tensor<24xf32> -> tensor<21xf32>
// S3: compute.gather
// S3: shard.all_gather {{.+}} {zero.phase = "forward"} : tensor<5xf32> -> tensor<20xf32>
// S3: shard.all_gather {{.+}} {zero.phase = "forward"} : tensor<4xf32> -> tensor<16xf32>
// S3: shard.all_gather {{.+}} {zero.phase = "backward"} : tensor<6xf32> -> tensor<24xf32>
// S3: shard.reduce_scatter {{.+}} : tensor<16xf32> -> tensor<4xf32>
// S3-COUNT-3: compute.adamw
// S3-NOT: shard.all_gather
// S3: return

// With a persistence threshold of 10 elements, b1 (5) stays whole and replicated:
// its own bucket, sliced for the update and gathered back, never gathered before use.
// PERSIST-LABEL: func.func @main
// PERSIST-SAME: compute.param = "b1"
// PERSIST-SAME: compute.bucket_members = [{name = "w1", offset = 0 : i64, shape = array<i64: 3, 5>}]
// PERSIST: shard.all_slice {{.+}} : tensor<8xf32> -> tensor<2xf32>
// PERSIST: shard.all_gather {{.+}} : tensor<2xf32> -> tensor<8xf32>
func.func @main(%emb: tensor<7x3xf32> {compute.param = "emb"}, %w1: tensor<3x5xf32> {compute.param = "w1"},
                %b1: tensor<5xf32> {compute.param = "b1"}, %wo: tensor<5x3xf32> {compute.param = "wo"},
                %t: tensor<2xi64> {compute.input = 0 : i64}, %l: tensor<2xi64> {compute.input = 1 : i64})
    -> tensor<f32> attributes {compute.output_names = ["loss"]} {
  %e = compute.gather %emb, %t {axis = 0 : i64} : tensor<7x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
  %h = compute.matmul %e, %w1 : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
  %h2 = compute.add %h, %b1 : tensor<2x5xf32>, tensor<5xf32> -> tensor<2x5xf32>
  %o = compute.matmul %h2, %wo : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
  %et = compute.transpose %emb {perm = array<i64: 1, 0>} : tensor<7x3xf32> -> tensor<3x7xf32>
  %logits = compute.matmul %o, %et : tensor<2x3xf32>, tensor<3x7xf32> -> tensor<2x7xf32>
  %loss, %lp = compute.softmax_cross_entropy %logits, %l {reduction = "mean"} : tensor<2x7xf32>, tensor<2xi64> -> tensor<f32>, tensor<2x7xf32>
  return %loss : tensor<f32>
}
