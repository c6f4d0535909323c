// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=2 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{fuse-below-kb=0})' | FileCheck %s --check-prefix=S2
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=1 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{fuse-below-kb=0})' | FileCheck %s --check-prefix=S1
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=2 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{no-overlap=true fuse-below-kb=0})' | FileCheck %s --check-prefix=SYNC
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=0 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{fuse-below-kb=0})' | FileCheck %s --check-prefix=S0
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{prefetch-buckets=1 fuse-below-kb=0})' | FileCheck %s --check-prefix=PREFETCH1
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{prefetch-buckets=4 fuse-below-kb=0})' | FileCheck %s --check-prefix=PREFETCH4
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{prefetch-buckets=4 max-live-mb=0.0001 fuse-below-kb=0})' | FileCheck %s --check-prefix=BUDGET
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule{max-live-mb=0.00005 fuse-below-kb=0})' | FileCheck %s --check-prefix=TOOSMALL

// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=2 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule)' | FileCheck %s --check-prefix=FUSE2
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-build-training-step,canonicalize,cse,zero-shard{stage=3 world-size=4 bucket-size-mb=0.0001},canonicalize,cse,zero-schedule)' | FileCheck %s --check-prefix=FUSE3

// The step of a tied-embedding model in three buckets (emb 24, w1+b1 20, wo 16
// elements on 4 ranks), as in test/Dialect/Compute/zero-shard.mlir.

// Stage 2: each reduce-scatter starts when backward completes its bucket and
// runs under the rest of backward (here: wo's under the w1 and emb gradients);
// at most 2 (--prefetch-buckets) are in flight, since each reads its full gradient
// bucket until its wait: wo's is waited for before emb's starts. The others are
// waited for where the optimizer needs them.
// S2-LABEL: func.func @main
// S2: %[[P:.+]], %[[T:.+]] = zero.reduce_scatter_start %{{.+}} : tensor<16xf32> -> tensor<4xf32>
// S2: %[[P20:.+]], %[[T20:.+]] = zero.reduce_scatter_start %{{.+}} : tensor<20xf32> -> tensor<5xf32>
// S2: compute.gather_grad
// S2: zero.wait %[[T]], %[[P]] : tensor<4xf32>
// S2-NEXT: zero.reduce_scatter_start %{{.+}} : tensor<24xf32> -> tensor<6xf32>
// S2: zero.wait %{{.+}} : tensor<6xf32>
// S2: compute.adamw
// S2: zero.wait %[[T20]], %[[P20]] : tensor<5xf32>
// S2: compute.adamw

// Stage 1: the reduce-scatters start after backward (after the last gradient op),
// two in flight at most; each is waited for at its bucket's update (or before the
// second next starts), the updated slices gathered right after.
// S1-LABEL: func.func @main
// S1: compute.gather_grad
// S1: zero.reduce_scatter_start {{.+}} : tensor<24xf32> -> tensor<6xf32>
// S1: zero.reduce_scatter_start {{.+}} : tensor<20xf32> -> tensor<5xf32>
// S1: zero.wait {{.+}} : tensor<6xf32>
// S1-NEXT: zero.reduce_scatter_start {{.+}} : tensor<16xf32> -> tensor<4xf32>
// S1: compute.adamw
// S1: zero.all_gather_start {{.+}} : tensor<6xf32> -> tensor<24xf32>

// --no-overlap: every start is followed at once by its wait.
// SYNC-LABEL: func.func @main
// SYNC: zero.reduce_scatter_start {{.+}} tensor<16xf32> -> tensor<4xf32>
// SYNC-NEXT: zero.wait {{.+}} : tensor<4xf32>
// SYNC: zero.reduce_scatter_start {{.+}} tensor<20xf32> -> tensor<5xf32>
// SYNC-NEXT: zero.wait {{.+}} : tensor<5xf32>
// SYNC: zero.all_gather_start
// SYNC-NEXT: zero.wait

// Stage 0: the all-reduce waits sink to the optimizer too.
// S0-LABEL: func.func @main
// S0: zero.all_reduce_start {{.+}} : tensor<16xf32> -> tensor<16xf32>
// S0: compute.gather_grad
// S0: zero.wait
// S0: compute.adamw

// Stage 3, one bucket of prefetch: the next gather starts right after the wait
// of the one before, so it runs under that bucket's compute. Starts keep the order
// of the gathers, the same on every rank.
// PREFETCH1-LABEL: func.func @main
// PREFETCH1: zero.all_gather_start %{{.+}} {zero.phase = "forward"} : tensor<6xf32> -> tensor<24xf32>
// PREFETCH1: zero.wait {{.+}} : tensor<24xf32>
// PREFETCH1-NEXT: zero.all_gather_start %{{.+}} {zero.phase = "forward"} : tensor<5xf32> -> tensor<20xf32>
// PREFETCH1: compute.gather
// PREFETCH1: zero.wait {{.+}} : tensor<20xf32>
// PREFETCH1-NEXT: zero.all_gather_start %{{.+}} {zero.phase = "forward"} : tensor<4xf32> -> tensor<16xf32>

// Four buckets of prefetch and no budget: every gather starts at the top.
// PREFETCH4-LABEL: func.func @main
// PREFETCH4-NEXT: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<6xf32>
// PREFETCH4-NEXT: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<5xf32>
// PREFETCH4-NEXT: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<4xf32>
// PREFETCH4-NEXT: zero.all_gather_start {{.+}} {zero.phase = "backward"} : tensor<6xf32>

// The same prefetch depth with a budget of one bucket (104 bytes): a gather waits
// until the bucket before it is dead (the last reader of the parameters, which the
// plan reads in place from the bucket: here the embedding lookup).
// BUDGET-LABEL: func.func @main
// BUDGET-NEXT: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<6xf32>
// BUDGET: %[[W0:.+]] = zero.wait
// BUDGET-NEXT: compute.slice %[[W0]]
// BUDGET: compute.gather
// BUDGET-NEXT: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<5xf32>

// Fusion (default: under 256 KiB): the three small reduce-scatters become one of
// 60 elements. Each input is laid out as [N, slice] blocks, so that rank r gets its
// 6 + 5 + 4 elements, which are sliced apart again.
// FUSE2-LABEL: func.func @main
// FUSE2: compute.reshape %{{.+}} : tensor<16xf32> -> tensor<4x4xf32>
// FUSE2: compute.concat {{.+}} {axis = 1 : i64} : tensor<4x4xf32>, tensor<4x5xf32> -> tensor<4x9xf32>
// FUSE2: compute.concat {{.+}} {axis = 1 : i64} : tensor<4x9xf32>, tensor<4x6xf32> -> tensor<4x15xf32>
// FUSE2: zero.reduce_scatter_start %{{.+}} : tensor<60xf32> -> tensor<15xf32>
// FUSE2-NOT: zero.reduce_scatter_start
// Stage 3: the forward gathers fuse into one, and the backward ones into another
// (phases are never mixed); the gathered [N, 15] is split by columns.
// FUSE3-LABEL: func.func @main
// FUSE3: zero.all_gather_start %{{.+}} {zero.phase = "forward"} : tensor<15xf32> -> tensor<60xf32>
// FUSE3: compute.slice %{{.+}} {starts = array<i64: 0, 11>, steps = array<i64: 1, 1>} : tensor<4x15xf32> -> tensor<4x4xf32>
// FUSE3-NOT: zero.phase = "forward"
// FUSE3: zero.all_gather_start %{{.+}} {zero.phase = "backward"}

// Every bucket larger than the budget (52 bytes): the limit is soft, as DeepSpeed's
// stage3_max_live_parameters, so each is gathered where it is read, alone: no
// start moves ahead of the one before's wait (the default prefetch is 2).
// TOOSMALL-LABEL: func.func @main
// TOOSMALL: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<6xf32>
// TOOSMALL-NEXT: zero.wait
// TOOSMALL: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<5xf32>
// TOOSMALL-NEXT: zero.wait
// TOOSMALL: zero.all_gather_start {{.+}} {zero.phase = "forward"} : tensor<4xf32>
// TOOSMALL-NEXT: zero.wait
// TOOSMALL: zero.all_gather_start {{.+}} {zero.phase = "backward"} : tensor<6xf32>
// TOOSMALL-NEXT: zero.wait

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
