//===- Passes.td - Collective scheduling, parameter offload *- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_ZERO_TRANSFORMS_PASSES_TD
#define ZERO_DIALECT_ZERO_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ScheduleCollectivesPass : Pass<"zero-schedule", "mlir::ModuleOp"> {
  let summary = "Splits collectives into start and wait and places them so that "
                "communication overlaps computation.";
  let description = [{
    Every `shard.all_gather`, `shard.reduce_scatter` and `shard.all_reduce` becomes a
    `zero.*_start` and a `zero.wait` at the same place; then, unless `no-overlap`:

    - a gradient reduction's wait, and the pure ops that only consume its result,
      sink to where the result is first needed (the optimizer), so the reduction
      runs under the rest of backward; but at most max(1, `prefetch-buckets`)
      reductions are in flight (a reduction reads its full gradient bucket until
      its wait): reduction i is waited for before reduction i + that many starts;
    - a stage-3 gather (`zero.phase`) starts at most `prefetch-buckets` gathers
      ahead of its use (right after the wait of the gather that many places
      earlier), and later if that would make the gathered buckets alive at once
      exceed `max-live-mb`. The limit is soft, as DeepSpeed's
      `stage3_max_live_parameters`: a bucket larger than it is gathered where it
      is first read, with nothing prefetched beside it.

    Before that, neighbouring collectives of one kind (no other collective between
    them) are fused while the fused full tensor stays under `fuse-below-kb`: one
    transfer instead of two saves a latency term, alpha (N-1) for a ring. Fused
    reduce-scatters and all-gathers keep each rank's slices together (inputs as
    [N, s] blocks, concatenated along the slices), so every rank still gets its own.

    Starts keep their relative order, which is the same on every rank.
  }];
  let dependentDialects = ["::zero::zops::ZeroDialect"];
  let options = [
    Option<"prefetchBuckets", "prefetch-buckets", "int64_t", "2",
           "How many gathers ahead a stage-3 gather may start; also how many "
           "gradient reductions may be in flight (at least 1).">,
    Option<"maxLiveMb", "max-live-mb", "double", "0.0",
           "MiB of gathered parameter buckets alive at once, a soft limit: a larger "
           "bucket is gathered alone (0: no limit).">,
    Option<"fuseBelowKb", "fuse-below-kb", "double", "256.0",
           "Fuse neighbouring collectives while the fused tensor is under this (0: off).">,
    Option<"noOverlap", "no-overlap", "bool", "false",
           "Keep every collective synchronous (start then wait at once).">,
  ];
}

def OffloadParamsPass : Pass<"zero-offload-params", "mlir::ModuleOp"> {
  let summary = "ZeRO-3 parameter offload: each rank's parameter slices live in "
                "host memory between their uses.";
  let description = [{
    Runs last on a stage-3 training step (after `--zero-schedule` and, when the
    optimizer is offloaded too, after `--zero-offload-optimizer`). The arguments an
    all-gather reads, directly or concatenated into a fused gather (the parameter
    slices; replicated parameters below the
    persistence threshold stay on the device) are marked `compute.host`, so the
    lowering places them in the host arena. Each device op that reads one gets its
    own `compute.to_device` copy right before it (the gather's start: the copy lives
    from there to the gather's wait, not for the whole step). The updated slice
    returns to the host: a host optimizer's result as it is (its copy to the device
    goes), a device optimizer's by `compute.to_host` right after it is made. The
    arithmetic is the same ops on the same values: losses and weights do not change.

    ```mlir
    %d = compute.to_device %slice : tensor<7536xbf16>
    %pending, %token = zero.all_gather_start %d on @zero ...
    ```
  }];
  let dependentDialects = ["::zero::compute::ComputeDialect"];
}

def OffloadNvmePass : Pass<"zero-offload-nvme", "mlir::ModuleOp"> {
  let summary = "ZeRO-Infinity: host-offloaded parameter slices and optimizer "
                "state live in each rank's NVMe file between their uses.";
  let description = [{
    Runs after `--zero-offload-optimizer` and `--zero-offload-params`, on the
    arguments they placed in host memory: with `params`, the parameter slices;
    with `optimizer`, the master weights and optimizer state (a scheduled learning
    rate stays on the host). Each becomes a `compute.nvme` argument; every op that
    reads it gets its own `compute.nvme_read` right before it (a host copy lives
    only while it is read), and the new value the step returns for it is written
    back by a `compute.nvme_write` once it is made and the old value's last read
    is done, so the lowering writes it in place. With `read-ahead` N, the reads
    of each op move before the N-th op that reads NVMe before it (the reads of
    the first N + 1 such ops all before the first one): the runtime's NVMe worker
    then reads while those ops run, in the order the reads are needed, as the
    collective schedule starts stage-3 gathers `prefetch-buckets` ahead. Each read
    ahead holds its host copy longer: host bytes for speed.

    ```mlir
    %m = compute.nvme_read %exp_avg : tensor<4096xf32>
    %p, %m2, %v2 = compute.adamw %master, %g, %m, %v, %step ... {zero.host}
    %w = compute.nvme_write %m2 : tensor<4096xf32>
    ```
  }];
  let dependentDialects = ["::zero::compute::ComputeDialect"];
  let options = [
    Option<"params", "params", "bool", "false",
           "Move the host-held parameter slices (--offload-param) to NVMe.">,
    Option<"optimizer", "optimizer", "bool", "false",
           "Move the host-held master weights and optimizer state to NVMe.">,
    Option<"readAhead", "read-ahead", "int64_t", "0",
           "Issue each op's reads this many NVMe-reading ops ahead (0: right "
           "before it; zero-opt passes --prefetch-buckets).">,
  ];
}

#endif // ZERO_DIALECT_ZERO_TRANSFORMS_PASSES_TD
