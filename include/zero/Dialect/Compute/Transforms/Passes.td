//===- Passes.td - Compute dialect passes -----------------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_TD
#define ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseAttentionPass : Pass<"zero-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Attention written as its parts becomes one compute.attention.";
  let description = [{
    Runs on the imported graph, before the training step is built, so that the
    backward is one compute.attention_grad (which recomputes the probabilities
    from the saved log-sum-exp) and no B·H·T×T scores or probabilities are kept.
    Matched: `matmul(softmax(S), V)` along the last axis, where `S` is
    `matmul(Q, Kᵀ)` times or divided by scalar constants (the scale), then plus an
    additive mask or through `where(mask, S, c)` with c at most -1e4 (a boolean
    mask); scalar constants may also scale Q and Kᵀ before their product, and the
    probabilities may pass a NaN guard `where((p == p) == false, 0, p)` (the
    torch exporters' SDPA decomposition); Q, Kᵀ and V 4-D with one batch and head each; every value in between
    read by the chain only; a mask that is a trained parameter is left alone (the
    fused op gives it no gradient). A constant mask that hides exactly the keys
    after each query (in every sample: its leading dimensions may have any size)
    becomes `causal`; so does such a mask of an imported attention (the importer
    reads a frozen float initializer holding one as a constant). Then every
    compute.attention (fused here or imported from ONNX's Attention) whose key
    and value both repeat the heads
    of [B, Hkv, T, D] tensors, as grouped-query models write it (reshape to a
    group axis, expand, merge into the heads; the key possibly through
    torch.export's [B·H, T, D] transposes), reads those tensors instead: no
    repeated copy is made or kept. Skipped with `--no-attention-fusion`.

    ```mlir
    %s = compute.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
    %c = compute.mul %s, %scale : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
    %m = compute.add %c, %causal : tensor<2x4x8x8xf32>, tensor<8x8xf32> -> tensor<2x4x8x8xf32>
    %p = compute.softmax %m {axis = 3 : i64} : tensor<2x4x8x8xf32>
    %o = compute.matmul %p, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
    ```
    becomes
    ```mlir
    %o, %lse = compute.attention %q, %k, %v {causal = true, scale = 2.500000e-01 : f64}
        : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
        -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
    ```
  }];
}

def FuseClassifierPass : Pass<"zero-fuse-classifier", "mlir::ModuleOp"> {
  let summary = "The loss and its gradient of the scores become one op.";
  let description = [{
    Runs on the training step. A `softmax_cross_entropy` whose log-probabilities
    only its `softmax_cross_entropy_grad` reads (with the same labels, weights,
    reduction and ignore index), where that gradient's loss gradient can be
    computed before the forward (the step's seed: a constant or the loss scale,
    through ops that read nothing the loss makes), becomes one
    `softmax_cross_entropy_with_grad` where the forward was: the scores are read
    once, and no f32 log-probabilities of a B·T×V classifier are kept for the
    backward. The ops computing the loss gradient move before it. Skipped with
    `--no-fusion`.

    ```mlir
    %loss, %logp = compute.softmax_cross_entropy %s, %l {reduction = "mean"}
        : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x16xf32>
    %one = compute.constant dense<1.0> : tensor<f32>
    %ds = compute.softmax_cross_entropy_grad %logp, %l, %one {reduction = "mean"}
        : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xf32>
    ```
    becomes
    ```mlir
    %one = compute.constant dense<1.0> : tensor<f32>
    %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %one {reduction = "mean"}
        : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<f32>, tensor<8x16xf32>
    ```
  }];
}

def FuseMatMulEpiloguePass : Pass<"zero-fuse-matmul-epilogue", "mlir::ModuleOp"> {
  let summary = "A matrix product's bias and residual adds join the product.";
  let description = [{
    Runs after scheduling, before elementwise fusion. An add of a product that
    only it reads and a bias (one value per column: `[N]`, or ones then `N`) or a
    tensor of the product's type (an addend: the residual connection) becomes one
    `compute.fused_matmul`, whose kernel starts its accumulator from them: a
    linear layer's bias, and the residual added after the attention projection
    and the MLP's second layer, are no kernels of their own that read and write
    the whole activation. A bias first, then an addend; the product moves to the
    add. Then a bias gradient, the column sums of G (a `reduce_sum` over all but
    the last axis, every reader of which comes after the product), becomes the
    `lhs_sums` of the 2-D product that reads G's rows transposed (the weight
    gradient `Gᵀ X`), so that G is read once (cuBLASLt's bias-gradient epilogue).
    Last, GELU's tanh form: a `gelu_tanh` of a product with at most a bias joins
    it (`activation = "gelu_tanh"`), the product's value kept as its
    `pre_activation` result for the gradient (cuBLASLt's GELU_AUX_BIAS); a
    `gelu_tanh_grad` of a product only it reads joins that product, reading the
    pre-activation as its `activation_input` (DGELU). The MLP's GELU and its
    gradient then read and write no activation of their own. Skipped with
    `--no-epilogue-fusion`.

    ```mlir
    %p = compute.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
    %h = compute.add %p, %b : tensor<8x32xbf16>, tensor<32xbf16> -> tensor<8x32xbf16>
    %y = compute.add %r, %h : tensor<8x32xbf16>, tensor<8x32xbf16> -> tensor<8x32xbf16>
    ```
    becomes
    ```mlir
    %y = compute.fused_matmul %x, %w bias(%b : tensor<32xbf16>)
        addend(%r : tensor<8x32xbf16>) : tensor<8x16xbf16>, tensor<16x32xbf16>
        -> tensor<8x32xbf16>
    ```
  }];
}

def RecomposeGeluPass : Pass<"zero-recompose-gelu", "mlir::ModuleOp"> {
  let summary = "The erf or tanh chain an exporter writes for GELU becomes one "
                "compute.gelu or compute.gelu_tanh.";
  let description = [{
    Runs first, on the imported graph. PyTorch exports `gelu` (exact form) as
    `x * (erf(x / sqrt 2) + 1) * 0.5`: five ops, and about fourteen more in its
    gradient. As one op the forward and the backward are one instruction each
    (compute.gelu, and compute.gelu_grad from its gradient rule), computed as
    PyTorch's own gelu and gelu_backward kernels do. Matched: a product of `x`, the
    scalar constant 1/2 and `erf(x / c + 1)` (or `erf(x * (1/c)) + 1`), c = sqrt 2
    within f32 rounding, in any order of factors and operands; every value in
    between read by the chain only, all of x's type.

    GELU's tanh form (GPT-2's; Hugging Face's `gelu_new`, PyTorch's
    `approximate="tanh"`), `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 *
    x^3)))`, becomes compute.gelu_tanh likewise: a product of `x`, 1/2 and
    `tanh(k * inner) + 1` with k = sqrt(2/pi) within f32 rounding and `inner =
    x + 0.044715 * cube`, the cube `pow(x, 3)` or products of x.

    ```mlir
    %s = compute.div %x, %sqrt2 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %e = compute.erf %s : tensor<4x8xf32>
    %a = compute.add %e, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %m = compute.mul %x, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %y = compute.mul %m, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    ```
    becomes
    ```mlir
    %y = compute.gelu %x : tensor<4x8xf32>
    ```
  }];
}

def AutocastPass : Pass<"zero-autocast", "mlir::ModuleOp"> {
  let summary = "Mixed precision: 16-bit parameters and matrix products, f32 where "
                "torch.autocast keeps it.";
  let description = [{
    Runs on the forward function @main, before `--zero-build-training-step`. The
    trainable parameters become bf16 or f16 (the training step then keeps an f32
    master copy of each and updates it); `compute.matmul` takes 16-bit operands and
    gives a 16-bit result (its kernels accumulate in f32); layer_norm, softmax,
    log_softmax, softmax_cross_entropy, reduce_sum, reduce_mean, pow, exp, log,
    reciprocal and sqrt take f32 operands; every other op runs in its operands'
    common type, widening to f32 when a 16-bit tensor meets an f32 tensor (a
    one-element operand takes the tensor's type instead, as PyTorch's scalars do).
    Casts are inserted where a value changes type. @main gets
    `compute.precision`.

    ```mlir
    // before
    %y = compute.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    // after (%w is now a bf16 argument)
    %xh = compute.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %y = compute.matmul %xh, %w : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"", "bf16 or fp16.">,
    Option<"freeze", "freeze", "std::string", "\"\"",
           "Regular expression: parameters whose names match are not trained (and "
           "stay f32).">,
  ];
}

def BuildTrainingStepPass : Pass<"zero-build-training-step", "mlir::ModuleOp"> {
  let summary = "Turns the forward function @main into one training step: forward, "
                "backward and optimizer update.";
  let description = [{
    Reverse-mode differentiation of the loss with respect to every trainable
    parameter (the float `compute.param` arguments without `compute.frozen`, the
    mark the importer puts on initializers outside the model's `zero.trainable`
    set, and not matched by `freeze`), one
    gradient rule per compute op. A parameter used several times (a tied embedding)
    gets the sum of its gradients. Then, for each parameter, an optimizer op
    (`compute.adamw` or `compute.sgd`) whose results are returned with
    `compute.updates = N`, the argument they replace; the optimizer state (moments,
    momentum buffers, the step counter) becomes extra `compute.state` arguments.
    With `gradients-only`, @main returns the loss and the gradients instead (for
    gradient checks).

    Mixed precision (after `--zero-autocast`, 16-bit parameters): each parameter
    gets an f32 master copy (`compute.master`), which the optimizer updates and
    casts back into the parameter; the loss gradient starts from the runtime value
    `loss_scale` (a `compute.runtime` argument), the optimizer divides by it, and
    the number of inf/NaN gradient elements (`compute.nonfinite_count`, summed) is
    returned as `overflow`: when it is not zero the optimizer skips the step and
    the step counter stays.

    With `grad-accum-steps=A`, the forward and backward are built A times, in
    order, each on its own copy of the graph inputs (`compute.micro_step = m`);
    each loss gradient starts from 1/A, the gradients are summed after each
    backward (adds marked `zero.accumulate`; in f32 for mixed precision), and the
    loss returned is the micro-batches' mean. Ops carry `zero.micro_phase` (2m for
    micro-batch m's forward, 2m + 1 for its backward).

    With `clip-grad-norm`, the gradients' global L2 norm (one `compute.sum_squares`
    over them all, into `compute.clip_grad_scale`) scales them as
    torch.nn.utils.clip_grad_norm_ does, and is returned as `grad_norm`. With
    `runtime-lr`, the optimizers read the learning rate from the runtime value `lr`.

    Before:
    ```mlir
    func.func @main(%w: tensor<4xf32> {compute.param = "w"},
                    %x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
      %0 = compute.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %1 = compute.reduce_sum %0 {axes = array<i64: 0>, keepdims = false}
          : tensor<4xf32> -> tensor<f32>
      return %1 : tensor<f32>
    }
    ```
    After (SGD, abridged):
    ```mlir
    func.func @main(%w: tensor<4xf32> {compute.param = "w"},
                    %x: tensor<4xf32> {compute.input = 0 : i64},
                    %buf: tensor<4xf32> {compute.state = "w.momentum_buffer"})
        -> (tensor<f32>, tensor<4xf32> {compute.updates = 0 : i64},
            tensor<4xf32> {compute.updates = 2 : i64}) {
      ...
      %g = compute.mul %dy, %x : ...
      %w1, %buf1 = compute.sgd %w, %g, %buf {lr = ..., momentum = ...}
      return %1, %w1, %buf1 : ...
    }
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"\"",
           "Name of the output to minimize (default: the only scalar float output).">,
    Option<"freeze", "freeze", "std::string", "\"\"",
           "Regular expression: parameters whose names match are not trained.">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd.">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate.">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's first-moment decay.">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW's second-moment decay.">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's denominator term.">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "Weight decay (default: 0.01 for adamw, 0 for sgd, as in PyTorch).">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum.">,
    Option<"gradientsOnly", "gradients-only", "bool", "false",
           "Return the loss and the gradients; no optimizer.">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "Clip the global L2 norm of the gradients to this (0: off).">,
    Option<"gradAccumSteps", "grad-accum-steps", "int64_t", "1",
           "Micro-batches per optimizer step (gradient accumulation).">,
    Option<"runtimeLr", "runtime-lr", "bool", "false",
           "The learning rate is a runtime value `lr` (a schedule) instead of a "
           "constant.">,
  ];
}

def RecomputePass : Pass<"zero-recompute", "mlir::ModuleOp"> {
  let summary = "Activation checkpointing: recomputes forward values in backward "
                "instead of keeping them alive in between.";
  let description = [{
    Runs on the output of `--zero-build-training-step`, before `--zero-shard`. A
    forward value that backward reads (a saved activation) is either kept, or
    recomputed: its op is cloned right before the first backward op that reads it
    (recursively, from kept values, parameters, inputs and constants), and every
    backward reader reads the clone. The clones are the same ops on the same
    operands, so they give bit-identical values. They carry `zero.recompute` (so
    that CSE does not merge them back) and the backward phase of their reader.

    `level` chooses what is kept:
    - 0: everything (no change);
    - 1: matrix products' outputs and what is not cheap to recompute; cheap ops'
      outputs (elementwise, normalization, softmax, data movement) are recomputed
      from them;
    - 2 and up: only the cut points of the forward (a value that is the only
      activation alive at its point of the forward order, such as the residual
      stream between blocks) are kept, every 2^(level-2)-th of them; everything
      between two kept cuts is recomputed, from the earlier one, in backward.
      What follows the last kept cut is kept (backward reads it at once).

    ```mlir
    // level 1: %h = gelu(%a) is recomputed from the kept matmul output %a
    %a = compute.matmul %x, %w ...
    %h = compute.gelu %a ...            // forward, dies after its forward readers
    ...                                 // backward:
    %h2 = compute.gelu %a {zero.recompute} ...
    %dw = compute.matmul %h2, %dy ...
    ```
  }];
  let options = [
    Option<"level", "level", "int64_t", "0",
           "0: keep every saved activation; 1: recompute cheap ops; 2+: keep every "
           "2^(level-2)-th cut point of the forward.">,
  ];
}

def OffloadActivationsPass : Pass<"zero-offload-activations", "mlir::ModuleOp"> {
  let summary = "DeepSpeed's cpu_checkpointing: the activations backward reads "
                "from forward wait for it in host memory.";
  let description = [{
    Runs on a training step after the collective schedule and the other offload
    passes. Each forward value that depends on a graph input and that its
    micro-batch's backward reads (all saved activations; with `--recompute`, the
    kept checkpoints that the recomputation starts from) is copied to the host
    right after it is made (`compute.to_host`; the device buffer then dies after
    its last forward reader) and back right before its first backward reader
    (`compute.to_device`, shared by the later backward readers). The same values
    reach the same ops: losses and weights do not change. Data-parallel ranks hold
    activations of their own samples, so there is nothing to partition across
    them (DeepSpeed's `partition_activations` splits the activations that
    model-parallel ranks share).

    ```mlir
    %h = compute.gelu %x : tensor<64x128xf32>
    %saved = compute.to_host %h : tensor<64x128xf32>
    ...
    %back = compute.to_device %saved : tensor<64x128xf32>
    ```
  }];
  let dependentDialects = ["::zero::compute::ComputeDialect"];
}

def OffloadOptimizerPass : Pass<"zero-offload-optimizer", "mlir::ModuleOp"> {
  let summary = "ZeRO-Offload: the optimizer runs on the host, its master weights "
                "and state in host memory.";
  let description = [{
    Runs last on a sharded training step (after `--zero-schedule-collectives`).
    The optimizer updates (`compute.adamw`, `compute.sgd`) and the casts of their
    results (the new 16-bit parameters) are marked `zero.host`; the arguments only
    they read (f32 master weights, optimizer state, a runtime learning rate) are
    marked `compute.host`, so the lowering places them in the host arena. A device
    value a host op reads crosses once, by `compute.to_host` right after it is made
    (a gradient as soon as it is reduced); a host result a device op reads crosses
    back by `compute.to_device` right before its first device reader (the gather
    of the updated parameters, or the end of the step). The arithmetic is the same
    ops on the same values: losses and weights do not change.

    ```mlir
    %gh = compute.to_host %g : tensor<8xbf16>
    %p, %m, %v = compute.adamw %master, %gh, %exp_avg, %exp_avg_sq, %step ... {zero.host}
    %p16 = compute.cast %p {zero.host} : tensor<8xf32> -> tensor<8xbf16>
    %d = compute.to_device %p16 : tensor<8xbf16>
    ```
  }];
}

def FuseElementwisePass : Pass<"zero-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Chains of elementwise ops become one compute.fused op each.";
  let description = [{
    Runs last at the compute level, on the finished step (or forward pass), right
    before the lowering to the plan. Starting from the last elementwise op of a
    chain, it takes in every elementwise producer whose value only the chain reads,
    that has the chain's result shape and the same `zero.*` marks (host work stays
    host work); scalar float constants become immediates. A value something else
    also reads (an activation that backward needs, a value two chains share) is not
    taken in: it stays a tensor of its own, made by its own kernel or chain. Chains
    of at least two ops, with at most 8 inputs and 24 ops, become a compute.fused
    op at the place of their last op; that is the only op the values in between
    move past, so nothing else of the schedule changes. The fused kernel rounds
    every value as the unfused kernels do: results are bit for bit the same.

    First, attention's scale and mask join the softmax that reads them: a softmax
    along the last axis of `add(mul(x, c), m)`, `add(x, m)` or `mul(x, c)` (c a
    scalar constant, m a tensor of the element type, each value read only by the
    next, the same marks) becomes `compute.softmax %x bias(%m) {scale = c}`, whose
    kernel rounds the product and the sum as the multiply and add kernels do.

    ```mlir
    %s = compute.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %e = compute.erf %s : tensor<4x8xf32>
    ```
    becomes
    ```mlir
    %e = compute.fused ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %s = compute.add %a, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
      %e = compute.erf %s : tensor<4x8xf32>
      compute.yield %e : tensor<4x8xf32>
    }
    ```
  }];
}

def ShardZeroPass : Pass<"zero-shard", "mlir::ModuleOp"> {
  let summary = "Shards a training step across ranks the way ZeRO stage 0-3 does, "
                "with flat, padded parameter buckets.";
  let description = [{
    Runs on the output of `--zero-build-training-step`. Trainable parameters are
    grouped, in first-use order, into buckets of about `bucket-size-mb`; a bucket is
    one flat 1-D tensor padded to a multiple of `world-size`, and rank r owns slice r.
    Collectives are `shard` ops on a 1-D `shard.grid @zero`:

    - stage 0: each gradient bucket is all-reduced (summed, then divided by N) as
      soon as backward has completed it; the optimizer is unchanged;
    - stages 1 and 2: each gradient bucket is reduce-scattered (stage 2: as soon as it
      is complete; stage 1: after backward), the optimizer updates the own slice with
      sharded state, and the updated slices are all-gathered into the parameters;
    - stage 3: parameters are stored as bucket slices (`compute.param_bucket`); a
      bucket is all-gathered before its first forward use and again before its first
      backward use; the optimizer updates the own slice in place. Parameters with
      fewer than `persistence-threshold` elements stay replicated and are handled as
      in stage 2.

    Mixed precision (16-bit parameters with f32 master copies): gradients are
    reduced in 16 bits (or f32 with `reduce-dtype=fp32`) and summed, the optimizer
    divides them by `loss_scale * N`; above stage 0 the master copies are stored
    as bucket slices (`compute.master_bucket`) and the updated 16-bit slices are
    all-gathered (stage 3: kept as the parameter slice). The overflow count is
    taken on the reduced gradients and, above stage 0, summed over the ranks.

    Communication per step in elements (Ψ trainable parameters, up to padding):
    stages 0-2 move 2Ψ (an all-reduce counts twice), stage 3 moves 3Ψ.

    Hybrid sharding (`shard-group-size` G dividing the world N, 1 <= G < N,
    stages 1-3): the grid is 2-D, `@zero = [N/G, G]`; buckets are padded to a
    multiple of G and rank r owns slice r mod G. Gathers and slices run along axis
    1 (within the group of consecutive ranks), a gradient bucket is
    reduce-scattered along axis 1 and its slice then all-reduced along axis 0
    (across the groups, which hold the same slices); the overflow count and the
    clipping norm sum along axis 1 only.

    ```mlir
    // stage 2, one bucket of two parameters (abridged)
    %g = compute.concat %gw, %gb, %pad {axis = 0 : i64} : ... -> tensor<12xf32>
    %gs = shard.reduce_scatter %g on @zero grid_axes = [0] scatter_axis = 0
        : tensor<12xf32> -> tensor<6xf32>
    %p1, %m1, %v1 = compute.adamw %ps, %gavg, %m, %v, %t ...
    %full = shard.all_gather %p1 on @zero grid_axes = [0] gather_axis = 0
        : tensor<6xf32> -> tensor<12xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"stage", "stage", "int64_t", "0", "ZeRO stage: 0, 1, 2 or 3.">,
    Option<"worldSize", "world-size", "int64_t", "1", "Number of ranks.">,
    Option<"bucketSizeMb", "bucket-size-mb", "double", "25.0",
           "Target bucket size in MiB.">,
    Option<"persistenceThreshold", "persistence-threshold", "int64_t", "0",
           "Stage 3: parameters with fewer elements stay replicated (0: off).">,
    Option<"hpzPartitionSize", "hpz-partition-size", "int64_t", "1",
           "Stage 3 (ZeRO++'s hpZ): the first gather of a bucket also slices out a "
           "secondary partition over groups of this many consecutive ranks (grid "
           "@zero_hpz = [world / size, size], axis 1), and the bucket's later "
           "gathers run within the group from it; 1: off.">,
    Option<"shardGroupSize", "shard-group-size", "int64_t", "0",
           "Hybrid sharding: shard over groups of this many consecutive ranks (grid "
           "axis 1 of @zero = [world / size, size]) and replicate across them (axis "
           "0); 0 or the world size: one 1-D grid of every rank.">,
    Option<"quantizedWeights", "quantized-weights", "bool", "false",
           "Stage 3 (ZeRO++'s qwZ): the parameter gathers move int8 blocks with "
           "one scale each (attribute zero.quantize_block); hpZ's gathers within "
           "a group stay exact.">,
    Option<"quantizedGradients", "quantized-gradients", "bool", "false",
           "Stages 1-3 (ZeRO++'s qgZ): the gradient reduce-scatters, and a hybrid "
           "grid's all-reduce across groups, move int8 blocks.">,
    Option<"quantizeBlock", "quantize-block", "int64_t", "256",
           "Values per int8 block (one f32 scale each) of the quantized "
           "collectives.">,
    Option<"reduceDtype", "reduce-dtype", "std::string", "\"\"",
           "Mixed precision: fp32 reduces the 16-bit gradients in f32 (default: in "
           "their own type).">,
  ];
}

#endif // ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_TD
