//===- ComputeFusionOps.td - Fused elementwise chains ------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What --zero-fuse-elementwise makes of a chain of elementwise ops: one op
// whose body is the chain; what --zero-fuse-matmul-epilogue makes of a matrix
// product and the adds after it. Included from ComputeOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_IR_COMPUTEFUSIONOPS_TD
#define ZERO_DIALECT_COMPUTE_IR_COMPUTEFUSIONOPS_TD

def Compute_FusedOp : Compute_Op<"fused", [Pure, IsolatedFromAbove]> {
  let summary = "A chain of elementwise ops computed as one kernel.";
  let description = [{
    The body computes the result from the block arguments (the `ins`, in order)
    with elementwise compute ops (`add`, `sub`, `mul`, `div`, `pow`, the float unary
    ops, `cast`, `where`, `relu_grad`) and scalar constants, and yields it. Every
    value of the body has the result's shape or broadcasts to it; values are f32,
    bf16 or f16, and `i1` only as a `where` condition read from an input. It is
    lowered to one `fused` kernel whose program (zplan/FusedProgram.h) evaluates
    the body element by element, so that no value between its ops is stored.

    ```mlir
    %r = compute.fused ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %s = compute.add %a, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
      %e = compute.erf %s : tensor<4x8xf32>
      compute.yield %e : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Compute_Tensor>:$inputs);
  let results = (outs Compute_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "(`ins` `(` $inputs^ `:` type($inputs) `)`)? `->` type($result) $body attr-dict";
  let hasRegionVerifier = 1;
}

def Compute_YieldOp : Compute_Op<"yield", [Pure, Terminator,
                                           HasParent<"FusedOp">]> {
  let summary = "The value a compute.fused body computes.";
  let description = [{
    Ends the body of a `compute.fused` op with its result, of the fused op's type.

    ```mlir
    %r = compute.fused ins(%x : tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>):
      %n = compute.neg %a : tensor<4x8xf32>
      compute.yield %n : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Compute_Tensor:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Compute_FusedMatMulOp
    : Compute_Op<"fused_matmul", [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "A matrix product with its epilogue: `lhs rhs + bias + addend`, an "
                "activation, and `lhs`'s sums.";
  let description = [{
    `compute.matmul` of `lhs` and `rhs`, plus `bias` (`[N]`, or ones then `N`:
    one value per column of the result, as a linear layer's) and plus `addend`
    (the result's type: a residual connection), either or both. The sum is formed
    before the result is rounded to its type, once: the kernel starts its
    accumulator from `addend + bias` (as `addmm` does), so no kernel reads the
    product again to add them.

    With `activation = "gelu_tanh"` and a `pre_activation` result (no addend),
    the result is `gelu_tanh(lhs rhs + bias)` and `pre_activation` is
    `lhs rhs + bias` itself, kept for the backward (cuBLASLt's GELU_AUX_BIAS).
    With `activation = "gelu_tanh"` and an `activation_input` operand (no bias or
    addend), the result is `gelu_tanh_grad(activation_input, lhs rhs)`: the
    gradient of the GELU's input from that of its output (cuBLASLt's DGELU).

    With an `lhs_sums` result, the op also gives each row of `lhs` summed over the
    product's inner dimension, for a 2-D product (`[M]`, the result's element
    type). A weight gradient `Gᵀ X` then gives its bias gradient (G's column sums)
    as it reads G, as cuBLASLt's bias-gradient epilogue does, and no kernel reads G
    again for it.

    ```mlir
    %y = compute.fused_matmul %x, %w bias(%b : tensor<16xbf16>)
        addend(%r : tensor<2x4x16xbf16>) : tensor<2x4x8xbf16>, tensor<8x16xbf16>
        -> tensor<2x4x16xbf16>
    %a, %p = compute.fused_matmul %x, %w bias(%b : tensor<16xbf16>)
        {activation = "gelu_tanh"} : tensor<2x4x8xbf16>, tensor<8x16xbf16>
        -> tensor<2x4x16xbf16> pre_activation(tensor<2x4x16xbf16>)
    %dp = compute.fused_matmul %da, %wt activation_input(%p : tensor<2x4x16xbf16>)
        {activation = "gelu_tanh"} : tensor<2x4x8xbf16>, tensor<8x16xbf16>
        -> tensor<2x4x16xbf16>
    %dw, %db = compute.fused_matmul %gt, %h : tensor<16x8xbf16>, tensor<8x32xbf16>
        -> tensor<16x32xbf16>, tensor<16xbf16>
    ```
  }];
  let arguments = (ins Compute_FloatTensor:$lhs, Compute_FloatTensor:$rhs,
                       Optional<Compute_FloatTensor>:$bias,
                       Optional<Compute_FloatTensor>:$addend,
                       Optional<Compute_FloatTensor>:$activation_input,
                       OptionalAttr<StrAttr>:$activation);
  let results = (outs Compute_FloatTensor:$result,
                      Optional<Compute_FloatTensor>:$lhs_sums,
                      Optional<Compute_FloatTensor>:$pre_activation);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`addend` `(` $addend^ `:` type($addend) `)`)?
    (`activation_input` `(` $activation_input^ `:` type($activation_input) `)`)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result) (`,` type($lhs_sums)^)?
    (`pre_activation` `(` type($pre_activation)^ `)`)?
  }];
  let hasVerifier = 1;
}

#endif // ZERO_DIALECT_COMPUTE_IR_COMPUTEFUSIONOPS_TD
