//===- ComputeOps.td - Compute dialect operations ---------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTEOPS_TD
#define ZERO_DIALECT_COMPUTE_IR_COMPUTEOPS_TD

include "zero/Dialect/Compute/IR/ComputeDialect.td"
include "zero/Dialect/Compute/IR/ComputeInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// An op with a gradient rule (ComputeGradients.cpp) declares it here.
def Compute_Differentiable : DeclareOpInterfaceMethods<Compute_DifferentiableOpInterface>;

// bf16 and f16 appear only in mixed-precision training steps (--zero-autocast).
def Compute_Tensor : RankedTensorOf<[F32, F64, BF16, F16, I1, I8, UI8, I32, I64]>;
def Compute_FloatTensor : RankedTensorOf<[F32, F64, BF16, F16]>;
def Compute_IndexTensor : RankedTensorOf<[I32, I64]>;
def Compute_BoolTensor : RankedTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Compute_ConstantOp : Compute_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "A tensor known at compile time.";
  let description = [{
    Holds a dense tensor value: ONNX `Constant` nodes and the result of folding shape
    computations. Parameters are never constants: they are function arguments.

    ```mlir
    %0 = compute.constant dense<[2, 32]> : tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Compute_BinaryOp<string mnemonic, string what, list<Trait> traits = [],
                       string resultElement = "f32">
    : Compute_Op<mnemonic, !listconcat([Pure], traits)> {
  let summary = "Elementwise " # what # " with ONNX broadcasting.";
  let description = [{
    Applies `}] # what # [{` to `lhs` and `rhs` after broadcasting both to the
    result shape (numpy rules: trailing dimensions align, a dimension of 1 stretches).

    ```mlir
    %r = compute.}] # mnemonic # [{ %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3x}] # resultElement # [{>
    ```
  }];
  let arguments = (ins Compute_Tensor:$lhs, Compute_Tensor:$rhs);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Compute_AddOp : Compute_BinaryOp<"add", "addition", [Commutative, Compute_Differentiable]> {
  let hasCanonicalizer = 1;
}
def Compute_SubOp : Compute_BinaryOp<"sub", "subtraction", [Compute_Differentiable]>;
def Compute_MulOp : Compute_BinaryOp<"mul", "multiplication",
                                     [Commutative, Compute_Differentiable]> {
  let hasCanonicalizer = 1;
}
def Compute_DivOp : Compute_BinaryOp<"div", "division (integers truncate)",
                                     [Compute_Differentiable]>;
def Compute_PowOp : Compute_BinaryOp<"pow", "power", [Compute_Differentiable]> {
  let description = [{
    `lhs` raised to `rhs`, after broadcasting. As in ONNX, the exponent may have
    another element type than the base; the result has the base's.

    ```mlir
    %r = compute.pow %x, %e : tensor<4xf32>, tensor<i64> -> tensor<4xf32>
    ```
  }];
}
def Compute_EqualOp : Compute_BinaryOp<"equal", "equality (the result is i1)",
                                       [Commutative], "i1">;

class Compute_UnaryOp<string mnemonic, string what, Type type = Compute_Tensor>
    : Compute_Op<mnemonic, [Pure, SameOperandsAndResultType, Compute_Differentiable]> {
  let summary = "Elementwise " # what # ".";
  let description = [{
    Applies `}] # what # [{` to every element.

    ```mlir
    %r = compute.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Compute_NegOp : Compute_UnaryOp<"neg", "negation">;
def Compute_SqrtOp : Compute_UnaryOp<"sqrt", "square root", Compute_FloatTensor>;
def Compute_ReciprocalOp
    : Compute_UnaryOp<"reciprocal", "1 / x", Compute_FloatTensor>;
def Compute_ExpOp : Compute_UnaryOp<"exp", "exponential", Compute_FloatTensor>;
def Compute_LogOp : Compute_UnaryOp<"log", "natural logarithm", Compute_FloatTensor>;
def Compute_ReluOp : Compute_UnaryOp<"relu", "max(x, 0)", Compute_FloatTensor>;
def Compute_TanhOp : Compute_UnaryOp<"tanh", "hyperbolic tangent", Compute_FloatTensor>;
def Compute_SigmoidOp
    : Compute_UnaryOp<"sigmoid", "1 / (1 + exp(-x))", Compute_FloatTensor>;
def Compute_ErfOp : Compute_UnaryOp<"erf", "the error function", Compute_FloatTensor>;
// The exact GELU, x Phi(x) = x/2 (1 + erf(x / sqrt 2)): zero-recompose-gelu makes
// one of the erf chain an exporter writes for it.
def Compute_GeluOp : Compute_UnaryOp<"gelu", "GELU (exact form, with erf)",
                                     Compute_FloatTensor>;
// GELU's tanh approximation, x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's
// (Hugging Face's gelu_new, ONNX's Gelu with approximate "tanh"), and the form
// cuBLASLt's GELU epilogues compute.
def Compute_GeluTanhOp : Compute_UnaryOp<"gelu_tanh", "GELU (tanh approximation)",
                                         Compute_FloatTensor>;
def Compute_SoftplusOp : Compute_UnaryOp<"softplus", "log(1 + exp(x))", Compute_FloatTensor>;

def Compute_CastOp : Compute_Op<"cast", [Pure, Compute_Differentiable, SameOperandsAndResultShape]> {
  let summary = "Elementwise conversion to the result's element type.";
  let description = [{
    Converts every element as C++ `static_cast` does; to `i1`, any non-zero value is
    true.

    ```mlir
    %r = compute.cast %x : tensor<4xi64> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Compute_WhereOp : Compute_Op<"where", [Pure, Compute_Differentiable]> {
  let summary = "Elementwise select with ONNX broadcasting.";
  let description = [{
    `result[i] = condition[i] ? lhs[i] : rhs[i]`, all three broadcast to the result.

    ```mlir
    %r = compute.where %c, %a, %b
        : tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
    ```
  }];
  let arguments = (ins Compute_BoolTensor:$condition, Compute_Tensor:$lhs,
                       Compute_Tensor:$rhs);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and normalization
//===----------------------------------------------------------------------===//

def Compute_MatMulOp : Compute_Op<"matmul", [Pure, Compute_Differentiable]> {
  let summary = "Batched matrix product with numpy semantics.";
  let description = [{
    The product of the last two dimensions; leading (batch) dimensions broadcast. A 1-D
    `lhs` is a row vector and a 1-D `rhs` a column vector, and the added dimension is
    dropped from the result, as numpy.matmul and ONNX MatMul do.

    ```mlir
    %r = compute.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$lhs, Compute_FloatTensor:$rhs);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

class Compute_AxisOp<string mnemonic, string what>
    : Compute_Op<mnemonic, [Pure, SameOperandsAndResultType, Compute_Differentiable]> {
  let summary = what # " along one axis.";
  let description = [{
    Computes }] # what # [{ along `axis` (non-negative), subtracting the maximum first
    for stability.

    ```mlir
    %r = compute.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Compute_SoftmaxOp : Compute_Op<"softmax", [Pure, Compute_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "Softmax along one axis, after an optional scale and additive bias.";
  let description = [{
    Computes softmax along `axis` (non-negative), subtracting the maximum first
    for stability. With `scale` (absent: 1) or `bias` (a tensor of the input's
    element type that broadcasts to it), it is the softmax of `input * scale + bias`,
    the product and the sum each rounded to the element type, as a multiply and an
    add kernel before it would round them: --zero-fuse-elementwise folds
    attention's scale and mask in. Both need `axis` to be the last dimension.

    ```mlir
    %r = compute.softmax %x {axis = 1 : i64} : tensor<4x8xf32>
    %a = compute.softmax %s bias(%m : tensor<8x8xf32>) {axis = 3 : i64, scale = 1.250000e-01 : f64}
        : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, Optional<Compute_FloatTensor>:$bias,
                       I64Attr:$axis, OptionalAttr<F64Attr>:$scale);
  let results = (outs Compute_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` type($input)
  }];
  let builders = [
    OpBuilder<(ins "mlir::Value":$input, "int64_t":$axis), [{
      build($_builder, $_state, input.getType(), input, mlir::Value(),
            $_builder.getI64IntegerAttr(axis), mlir::FloatAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Compute_LogSoftmaxOp : Compute_AxisOp<"log_softmax", "Log-softmax">;

def Compute_LayerNormOp : Compute_Op<"layer_norm", [Pure, Compute_Differentiable]> {
  let summary = "Layer normalization over the trailing dimensions from `axis`.";
  let description = [{
    Normalizes `input` over dimensions `axis..rank-1` to zero mean and unit variance
    (biased variance, plus `epsilon`), then applies `scale` and `bias` (shaped like
    those dimensions). Also returns the mean and 1/sqrt(var + epsilon), shaped like the
    input with the normalized dimensions set to 1.

    ```mlir
    %y, %mean, %rstd = compute.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
        : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
        -> tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$input, Compute_FloatTensor:$scale,
                       Compute_FloatTensor:$bias, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Compute_FloatTensor:$result, Compute_FloatTensor:$mean,
                      Compute_FloatTensor:$inv_std_dev);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias attr-dict `:` type($input) `,` type($scale) `,`
    type($bias) `->` type($result) `,` type($mean) `,` type($inv_std_dev)
  }];
  let hasVerifier = 1;
}

def Compute_SoftmaxCrossEntropyOp : Compute_Op<"softmax_cross_entropy", [Pure, Compute_Differentiable]> {
  let summary = "Softmax cross-entropy against integer class labels.";
  let description = [{
    `scores` is `[N, C, d1, ...]`, `labels` is `[N, d1, ...]` with values in `[0, C)`
    or equal to `ignore_index` (such positions contribute nothing and, for `mean`, are
    not counted). Optional per-class `weights` `[C]` scale each position's loss and,
    for `mean`, the denominator. `reduction` is `none`, `sum` or `mean`. The second
    result is the log-softmax of `scores` over dimension 1.

    ```mlir
    %loss, %logp = compute.softmax_cross_entropy %s, %l {reduction = "mean"}
        : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$scores, Compute_IndexTensor:$labels,
                       Optional<Compute_FloatTensor>:$weights, StrAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Compute_FloatTensor:$loss, Compute_FloatTensor:$log_prob);
  let assemblyFormat = [{
    $scores `,` $labels (`weights` $weights^)? attr-dict `:` type($scores) `,`
    type($labels) (`,` type($weights)^)? `->` type($loss) `,` type($log_prob)
  }];
  let hasVerifier = 1;
}

def Compute_AttentionOp : Compute_Op<"attention", [Pure, Compute_Differentiable]> {
  let summary = "Scaled dot-product attention, fused: no score matrix is kept.";
  let description = [{
    `softmax(query keyᵀ · scale + mask) value` per batch and head, where `query`
    is `[B, Hq, Tq, D]`, `key` `[B, Hkv, Tk, D]` and `value` `[B, Hkv, Tk, Dv]`;
    `Hkv` divides `Hq` and query head `h` reads key/value head `h / (Hq / Hkv)`
    (grouped-query attention). With `causal`, query `i` sees keys `0..i` (the
    top-left corner, as ONNX's Attention and PyTorch's `is_causal`). The optional
    `mask` broadcasts to `[B, Hq, Tq, Tk]`: booleans keep a score where true,
    floats (the query's type) are added to it. A query that sees no key gets
    zeros. The second result is each row's log-sum-exp of the scaled, masked
    scores, in f32 (f64 for f64 queries): what the gradient needs to recompute the probabilities block
    by block (`compute.attention_grad`).

    ```mlir
    %o, %lse = compute.attention %q, %k, %v {causal = true, scale = 1.250000e-01 : f64}
        : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
        -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$query, Compute_FloatTensor:$key,
                       Compute_FloatTensor:$value, Optional<AnyRankedTensor>:$mask,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Compute_FloatTensor:$result, Compute_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) `->` type($result) `,` type($lse)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Compute_ReduceOp<string mnemonic, string what>
    : Compute_Op<mnemonic, [Pure, Compute_Differentiable]> {
  let summary = what # " over the listed axes.";
  let description = [{
    Reduces `axes` (non-negative, sorted, unique) by }] # what # [{; with `keepdims`
    the reduced dimensions stay as 1. An empty `axes` list reduces nothing.

    ```mlir
    %r = compute.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = true}
        : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Compute_ReduceSumOp : Compute_ReduceOp<"reduce_sum", "Summation">;
def Compute_ReduceMeanOp : Compute_ReduceOp<"reduce_mean", "The arithmetic mean">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Compute_ReshapeOp : Compute_Op<"reshape", [Pure, Compute_Differentiable]> {
  let summary = "The same elements in row-major order, another shape.";
  let description = [{
    ONNX Reshape, Flatten, Squeeze and Unsqueeze all become this op; the result type
    carries the static target shape.

    ```mlir
    %r = compute.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Compute_TransposeOp : Compute_Op<"transpose", [Pure, Compute_Differentiable]> {
  let summary = "Permutes dimensions: result dim i is input dim perm[i].";
  let description = [{
    ```mlir
    %r = compute.transpose %x {perm = array<i64: 0, 2, 1>}
        : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  // An identity permutation, or one that undoes the input's own transpose (the
  // backward pass transposes transposed weights back), folds away.
  let hasFolder = 1;
}

def Compute_SliceOp : Compute_Op<"slice", [Pure, Compute_Differentiable]> {
  let summary = "A strided window, with one start and step per dimension.";
  let description = [{
    Result dimension i takes input indices `starts[i] + k * steps[i]`, k in
    `[0, result_dim_i)`. Starts are normalized (in range) by the importer and steps are
    non-zero, possibly negative; the verifier checks every index stays inside the input.

    ```mlir
    %r = compute.slice %x {starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
        : tensor<4x8xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Compute_ConcatOp : Compute_Op<"concat", [Pure, Compute_Differentiable]> {
  let summary = "Joins tensors along one axis.";
  let description = [{
    ```mlir
    %r = compute.concat %a, %b {axis = 0 : i64}
        : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<5x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Compute_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Compute_ExpandOp : Compute_Op<"expand", [Pure, Compute_Differentiable]> {
  let summary = "Broadcasts a tensor to the result shape.";
  let description = [{
    ```mlir
    %r = compute.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Compute_GatherOp : Compute_Op<"gather", [Pure, Compute_Differentiable]> {
  let summary = "Takes slices of `data` along `axis` at the given indices.";
  let description = [{
    The result shape is `data[:axis] ++ indices ++ data[axis+1:]`. Negative indices
    count from the end; an index out of range is a runtime error. An embedding lookup:

    ```mlir
    %r = compute.gather %table, %tokens {axis = 0 : i64}
        : tensor<256x64xf32>, tensor<2x32xi64> -> tensor<2x32x64xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$data, Compute_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Compute_TriluOp : Compute_Op<"trilu", [Pure, Compute_Differentiable, SameOperandsAndResultType]> {
  let summary = "Keeps the upper or lower triangle of the last two dimensions.";
  let description = [{
    With `upper`, element (i, j) is kept when `j - i >= k`, otherwise when
    `j - i <= k`; the rest become zero.

    ```mlir
    %r = compute.trilu %x {k = 0 : i64, upper = false} : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Compute_Tensor:$input, BoolAttr:$upper, I64Attr:$k);
  let results = (outs Compute_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

include "zero/Dialect/Compute/IR/ComputeTrainingOps.td"
include "zero/Dialect/Compute/IR/ComputeFusionOps.td"

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTEOPS_TD
