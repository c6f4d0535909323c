//===- ComputeTrainingOps.td - Backward and optimizer ops -*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The ops the training-step builder adds: gradients that are awkward to express
// with forward ops, and optimizer updates. Included from ComputeOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTETRAININGOPS_TD
#define ZERO_DIALECT_COMPUTE_IR_COMPUTETRAININGOPS_TD

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def Compute_ReluGradOp : Compute_Op<"relu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of relu: `grad` where `input > 0`, else 0.";
  let description = [{
    ```mlir
    %dx = compute.relu_grad %x, %dy : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, Compute_FloatTensor:$grad);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
}

def Compute_GeluGradOp : Compute_Op<"gelu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of gelu: `grad (Phi(input) + input phi(input))`.";
  let description = [{
    Phi and phi are the standard normal distribution and density: GELU's derivative
    in one kernel, as PyTorch's gelu_backward computes it.

    ```mlir
    %dx = compute.gelu_grad %x, %dy : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, Compute_FloatTensor:$grad);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
}

def Compute_GeluTanhGradOp
    : Compute_Op<"gelu_tanh_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of gelu_tanh, as PyTorch's gelu_backward computes it.";
  let description = [{
    With t = tanh(sqrt(2/pi) (x + 0.044715 x^3)):
    `grad (1/2 (1 + t) + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2))`.

    ```mlir
    %dx = compute.gelu_tanh_grad %x, %dy : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, Compute_FloatTensor:$grad);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
}

def Compute_SoftmaxGradOp
    : Compute_Op<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of softmax with respect to its input, from its output.";
  let description = [{
    `output * (grad - sum(grad * output))`, the sum along `axis`, where `output` is
    softmax's result and `grad` the gradient of it: one kernel instead of a product,
    a row sum and the rest. Then times `scale` (default 1), as a multiply by that
    constant after it would (the canonicalizer folds one in: attention's scale).

    ```mlir
    %dx = compute.softmax_grad %y, %dy {axis = 1 : i64} : tensor<4x8xf32>
    %ds = compute.softmax_grad %y, %dy {axis = 1 : i64, scale = 1.250000e-01 : f64}
        : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$output, Compute_FloatTensor:$grad,
                       I64Attr:$axis, DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Compute_AttentionGradOp : Compute_Op<"attention_grad", [Pure]> {
  let summary = "Gradients of attention with respect to query, key and value.";
  let description = [{
    From attention's operands, its result, the log-sum-exp it saved and the
    gradient of its result: the probabilities are recomputed block by block
    (FlashAttention-2's backward), so no `Tq × Tk` matrix is kept between the
    passes. `key_grad` and `value_grad` sum over the query heads that share a
    key/value head. The mask (the forward's) gets no gradient.

    ```mlir
    %dq, %dk, %dv = compute.attention_grad %q, %k, %v, %o, %lse, %do {causal = true, scale = 1.250000e-01 : f64}
        : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>,
          tensor<2x4x16x8xf32>, tensor<2x4x16xf32>, tensor<2x4x16x8xf32>
        -> tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$query, Compute_FloatTensor:$key,
                       Compute_FloatTensor:$value, Compute_FloatTensor:$output,
                       Compute_FloatTensor:$lse, Compute_FloatTensor:$grad,
                       Optional<AnyRankedTensor>:$mask, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Compute_FloatTensor:$query_grad, Compute_FloatTensor:$key_grad,
                      Compute_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $lse `,` $grad
    (`mask` `(` $mask^ `:` type($mask) `)`)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) `,` type($output) `,` type($lse) `,`
    type($grad) `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
  }];
  let hasVerifier = 1;
}

def Compute_LayerNormGradOp : Compute_Op<"layer_norm_grad", [Pure]> {
  let summary = "Gradients of layer_norm with respect to input, scale and bias.";
  let description = [{
    From the forward input, scale and the saved mean and 1/std, and the gradient of
    the output: `dx`, and `dscale`, `dbias` summed over the leading dimensions, shaped
    like the normalized dimensions `input.shape[axis:]` (the caller reduces them to
    the scale's own shape when it broadcast). With `accumulate` (a tensor of the
    input's type), `dx` is that plus the input gradient, as an add after it would
    compute it: the canonicalizer folds the residual connection's gradient sum in.

    ```mlir
    %dx, %dg, %db = compute.layer_norm_grad %x, %g, %mean, %rstd, %dy {axis = 2 : i64}
        : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>,
          tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %sx, %sg, %sb = compute.layer_norm_grad %x, %g, %mean, %rstd, %dy
        accumulate(%r : tensor<2x4x8xf32>) {axis = 2 : i64}
        : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>,
          tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, Compute_FloatTensor:$scale,
                       Compute_FloatTensor:$mean, Compute_FloatTensor:$inv_std_dev,
                       Compute_FloatTensor:$grad,
                       Optional<Compute_FloatTensor>:$accumulate, I64Attr:$axis);
  let results = (outs Compute_FloatTensor:$input_grad, Compute_FloatTensor:$scale_grad,
                      Compute_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $mean `,` $inv_std_dev `,` $grad
    (`accumulate` `(` $accumulate^ `:` type($accumulate) `)`)? attr-dict `:`
    type($input) `,` type($scale) `,` type($mean) `,` type($inv_std_dev) `,`
    type($grad) `->` type($input_grad) `,` type($scale_grad) `,` type($bias_grad)
  }];
  let hasVerifier = 1;
}

def Compute_SoftmaxCrossEntropyGradOp
    : Compute_Op<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "Gradient of softmax_cross_entropy's loss with respect to the scores.";
  let description = [{
    `(softmax(scores) - onehot(label)) * weight[label] * g`, where `g` is the loss
    gradient (per position for `none`; divided by the summed weights of the counted
    positions for `mean`), and zero at ignored positions. Takes the forward's
    `log_prob` so the softmax is not computed again.

    ```mlir
    %ds = compute.softmax_cross_entropy_grad %logp, %labels, %dloss {reduction = "mean"}
        : tensor<8x16xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$log_prob, Compute_IndexTensor:$labels,
                       Compute_FloatTensor:$grad, Optional<Compute_FloatTensor>:$weights,
                       StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = [{
    $log_prob `,` $labels `,` $grad (`weights` $weights^)? attr-dict `:`
    type($log_prob) `,` type($labels) `,` type($grad) (`,` type($weights)^)? `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Compute_SoftmaxCrossEntropyWithGradOp
    : Compute_Op<"softmax_cross_entropy_with_grad", [Pure]> {
  let summary = "The loss and its gradient of the scores in one pass (a fused classifier).";
  let description = [{
    `softmax_cross_entropy` and `softmax_cross_entropy_grad` of its loss at once,
    when the loss gradient `grad` is known before the forward (the training
    step's seed): each row of `scores` is read once and its gradient written in
    its place, so no log-probabilities are kept between the forward and the
    backward (llm.c's fused classifier). `zero-fuse-classifier` makes it. The
    loss is the scores' type, or f32 for 16-bit scores (then `grad` and `weights`
    are f32 too); `scores_grad` has the scores' type.

    ```mlir
    %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %dloss {reduction = "mean"}
        : tensor<8x16xbf16>, tensor<8xi64>, tensor<f32> -> tensor<f32>, tensor<8x16xbf16>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$scores, Compute_IndexTensor:$labels,
                       Compute_FloatTensor:$grad, Optional<Compute_FloatTensor>:$weights,
                       StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Compute_FloatTensor:$loss, Compute_FloatTensor:$scores_grad);
  let assemblyFormat = [{
    $scores `,` $labels `,` $grad (`weights` $weights^)? attr-dict `:`
    type($scores) `,` type($labels) `,` type($grad) (`,` type($weights)^)? `->`
    type($loss) `,` type($scores_grad)
  }];
  let hasVerifier = 1;
}

def Compute_GatherGradOp : Compute_Op<"gather_grad", [Pure]> {
  let summary = "Scatter-adds the gradient of a gather back into `data`'s shape.";
  let description = [{
    The adjoint of `compute.gather`: a zero tensor of the result type, to which each
    slice of `grad` is added at the index it was gathered from (an embedding's
    gradient; repeated indices accumulate).

    ```mlir
    %dt = compute.gather_grad %tokens, %dy {axis = 0 : i64}
        : tensor<2x32xi64>, tensor<2x32x64xf32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Compute_IndexTensor:$indices, Compute_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad attr-dict `:` type($indices) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Compute_SliceGradOp : Compute_Op<"slice_grad", [Pure]> {
  let summary = "Places the gradient of a slice into a zero tensor of the input shape.";
  let description = [{
    The adjoint of `compute.slice` with the same `starts` and `steps`.

    ```mlir
    %dx = compute.slice_grad %dy {starts = array<i64: 0, 64>, steps = array<i64: 1, 1>}
        : tensor<4x64xf32> -> tensor<4x192xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

// Runtime scalars of the optimizers (buildable, so the assembly needs no types).
def Compute_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
def Compute_F64Scalar : 0DTensorOf<[F64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF64Type())">;

def Compute_AdamWOp : Compute_Op<"adamw", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["param", "exp_avg", "exp_avg_sq", "new_param", "new_exp_avg",
                   "new_exp_avg_sq"]>, AllShapesMatch<["param", "grad"]>]> {
  let summary = "One AdamW step, as torch.optim.AdamW computes it.";
  let description = [{
    With `t` the step number (1 on the first step):

        p = p * (1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    Returns the new parameter and moments; the lowering writes them in place.

    Optional runtime operands: `scale`, a factor `g` is multiplied by first (in the
    parameter's type: mixed precision's 1 / (loss scale * ranks), gradient
    clipping's coefficient); `skip_if`, a count that skips the step when it is not
    zero (every result is its operand: the overflow check); `lr`, the learning rate
    of this step (a schedule), in place of the `lr` attribute. With `scale`, `grad`
    may be 16-bit while `param` is the f32 master copy.

    ```mlir
    %p1, %m1, %v1 = compute.adamw %p, %g, %m, %v, %t {beta1 = 0.9 : f64,
        beta2 = 0.999 : f64, eps = 1.0e-08 : f64, lr = 1.0e-03 : f64,
        weight_decay = 0.01 : f64}
        : tensor<64xf32>, tensor<64xf32>, tensor<i64> -> tensor<64xf32>
    %q1, %n1, %w1 = compute.adamw %q, %h, %n, %w, %t scale %s skip_if %found lr %lr {
        beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64,
        lr = 1.0e-03 : f64, weight_decay = 0.01 : f64}
        : tensor<64xf32>, tensor<64xbf16>, tensor<i64> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$param, Compute_FloatTensor:$grad,
                       Compute_FloatTensor:$exp_avg, Compute_FloatTensor:$exp_avg_sq,
                       0DTensorOf<[I64]>:$step,
                       Optional<Compute_F32Scalar>:$grad_scale,
                       Optional<Compute_F32Scalar>:$found_inf,
                       Optional<Compute_F64Scalar>:$lr_value, F64Attr:$lr,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs Compute_FloatTensor:$new_param, Compute_FloatTensor:$new_exp_avg,
                      Compute_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step
    (`scale` $grad_scale^)? (`skip_if` $found_inf^)? (`lr` $lr_value^)? attr-dict `:`
    type($param) `,` type($grad) `,` type($step) `->` type($new_param)
  }];
  let builders = [OpBuilder<(ins "mlir::Value":$param, "mlir::Value":$grad,
      "mlir::Value":$exp_avg, "mlir::Value":$exp_avg_sq, "mlir::Value":$step,
      "mlir::Value":$grad_scale, "mlir::Value":$found_inf, "mlir::Value":$lr_value,
      "double":$lr, "double":$beta1, "double":$beta2, "double":$eps,
      "double":$weight_decay), [{
    mlir::Type t = param.getType();
    build($_builder, $_state, t, t, t, param, grad, exp_avg, exp_avg_sq, step,
          grad_scale, found_inf, lr_value,
          $_builder.getF64FloatAttr(lr), $_builder.getF64FloatAttr(beta1),
          $_builder.getF64FloatAttr(beta2), $_builder.getF64FloatAttr(eps),
          $_builder.getF64FloatAttr(weight_decay));
  }]>];
}

def Compute_SgdOp : Compute_Op<"sgd", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["param", "momentum_buffer", "new_param", "new_momentum_buffer"]>,
    AllShapesMatch<["param", "grad"]>]> {
  let summary = "One SGD-with-momentum step, as torch.optim.SGD computes it.";
  let description = [{
    With dampening 0 and no Nesterov term:

        g = g + weight_decay * p
        buf = momentum * buf + g        (buf starts at 0, so the first step gives g)
        p = p - lr * buf

    `scale`, `skip_if` and `lr` as for `compute.adamw`.

    ```mlir
    %p1, %b1 = compute.sgd %p, %g, %buf {lr = 0.1 : f64, momentum = 0.9 : f64,
        weight_decay = 0.0 : f64} : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$param, Compute_FloatTensor:$grad,
                       Compute_FloatTensor:$momentum_buffer,
                       Optional<Compute_F32Scalar>:$grad_scale,
                       Optional<Compute_F32Scalar>:$found_inf,
                       Optional<Compute_F64Scalar>:$lr_value, F64Attr:$lr,
                       F64Attr:$momentum, F64Attr:$weight_decay);
  let results = (outs Compute_FloatTensor:$new_param,
                      Compute_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer (`scale` $grad_scale^)?
    (`skip_if` $found_inf^)? (`lr` $lr_value^)? attr-dict `:` type($param) `,`
    type($grad) `->` type($new_param)
  }];
  let builders = [OpBuilder<(ins "mlir::Value":$param, "mlir::Value":$grad,
      "mlir::Value":$momentum_buffer, "mlir::Value":$grad_scale,
      "mlir::Value":$found_inf, "mlir::Value":$lr_value, "double":$lr,
      "double":$momentum, "double":$weight_decay), [{
    mlir::Type t = param.getType();
    build($_builder, $_state, t, t, param, grad, momentum_buffer, grad_scale, found_inf,
          lr_value, $_builder.getF64FloatAttr(lr), $_builder.getF64FloatAttr(momentum),
          $_builder.getF64FloatAttr(weight_decay));
  }]>];
}

def Compute_SumSquaresOp : Compute_Op<"sum_squares", [Pure]> {
  let summary = "The sum of the squares of every element of the inputs, as one f32.";
  let description = [{
    Accumulated in f64, rounded once. Gradient clipping's norm: one op sums every
    gradient of a rank (so that its kernel is one launch over all of them, as
    nonfinite_count's), and (ZeRO) an all-reduce sums the ranks' slices: the
    squared L2 norm. The inputs may differ in shape and float type.

    ```mlir
    %s = compute.sum_squares %g, %h : tensor<64xbf16>, tensor<8x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Compute_FloatTensor>:$inputs);
  let results = (outs Compute_F32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Compute_ClipGradScaleOp : Compute_Op<"clip_grad_scale", [Pure]> {
  let summary = "Gradient clipping's factor, as torch.nn.utils.clip_grad_norm_.";
  let description = [{
    With `sum_squares` the summed squares of the gradients as the optimizer reads
    them and `scale` the factor it multiplies them by: `norm = sqrt(sum_squares) *
    scale` is the L2 norm of the true gradient; the results are `scale * min(1,
    max_norm / (norm + 1e-6))` (the optimizer's new `scale`) and `norm`.

    ```mlir
    %scale2, %norm = compute.clip_grad_scale %sumsq, %scale {max_norm = 1.0 : f64}
    ```
  }];
  let arguments = (ins Compute_F32Scalar:$sum_squares, Compute_F32Scalar:$scale,
                       F64Attr:$max_norm);
  let results = (outs Compute_F32Scalar:$clipped_scale, Compute_F32Scalar:$norm);
  let assemblyFormat = "$sum_squares `,` $scale attr-dict";
}

def Compute_NonfiniteCountOp : Compute_Op<"nonfinite_count", [Pure]> {
  let summary = "How many elements of the inputs are inf or NaN, as one f32.";
  let description = [{
    The overflow check of mixed-precision training: the optimizer skips a step
    whose gradients (summed over the tensors and the ranks) hold any. One op
    counts every gradient of a rank, so that its kernel is one launch over all of
    them; the inputs may differ in shape and float type.

    ```mlir
    %n = compute.nonfinite_count %g, %h : tensor<64xbf16>, tensor<8x8xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Compute_FloatTensor>:$inputs);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer offload
//===----------------------------------------------------------------------===//

def Compute_ToHostOp : Compute_Op<"to_host", [Pure, SameOperandsAndResultType]> {
  let summary = "The same tensor, copied from device memory to host memory.";
  let description = [{
    Optimizer offload (ZeRO-Offload) runs the optimizer on the host: a gradient
    crosses to the host once it is reduced. Ops marked `zero.host` read host values.

    ```mlir
    %h = compute.to_host %g : tensor<64xbf16>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Compute_ToDeviceOp : Compute_Op<"to_device", [Pure, SameOperandsAndResultType]> {
  let summary = "The same tensor, copied from host memory to device memory.";
  let description = [{
    The updated 16-bit parameters of an offloaded optimizer return to the device.

    ```mlir
    %d = compute.to_device %p : tensor<64xbf16>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// NVMe offload
//===----------------------------------------------------------------------===//

def Compute_NvmeReadOp : Compute_Op<"nvme_read", [Pure, SameOperandsAndResultType]> {
  let summary = "The same tensor, read from the NVMe file into host memory.";
  let description = [{
    NVMe offload (ZeRO-Infinity) keeps parameter slices, master weights and
    optimizer state in each rank's NVMe file (`compute.nvme` arguments); a host
    copy exists only while something reads it.

    ```mlir
    %m = compute.nvme_read %exp_avg : tensor<4096xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Compute_NvmeWriteOp : Compute_Op<"nvme_write", [Pure, SameOperandsAndResultType]> {
  let summary = "The same tensor, written from host memory to the NVMe file.";
  let description = [{
    The new value of a `compute.nvme` argument: what the step returns for it.

    ```mlir
    %w = compute.nvme_write %new_exp_avg : tensor<4096xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTETRAININGOPS_TD
