//===- ZeroOps.td - Split-phase collectives ---------------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_ZERO_IR_ZEROOPS_TD
#define ZERO_DIALECT_ZERO_IR_ZEROOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Dialect/Shard/IR/ShardBase.td"

def Zero_Dialect : Dialect {
  let name = "zero";
  let cppNamespace = "::zero::zops";
  let summary = "Split-phase collectives, placed for overlap.";
  let description = [{
    The scheduled level: each `shard` collective of the sharded level becomes a start
    (which begins the transfer and gives a token) and a wait (which ends it and gives
    the usable result). Both have side effects on the communication resource, so
    every rank keeps the same total order of collectives and no pass reorders,
    merges or drops them.

    The schedule's facts about ops and the module are `zero.*` attributes (an op's
    phase, a recomputed copy, the ZeRO stage), each declared once with its type
    and place in ZeroAttributes.cpp and verified by the dialect.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

class Zero_Type<string name, string typeMnemonic> : TypeDef<Zero_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Zero_TokenType : Zero_Type<"Token", "token"> {
  let summary = "An outstanding collective.";
  let description = [{
    Produced by a `zero.*_start` op and consumed by exactly one `zero.wait`.
  }];
}

class Zero_Op<string mnemonic, list<Trait> traits = []>
    : Op<Zero_Dialect, mnemonic, traits>;

// Starts and waits read and write the communication channel: that orders them
// among themselves (the same order on every rank) without ordering compute.
// A start keeps the contract of the `shard` collective it replaces: the grid, its
// axes and, for reductions, the kind; verifySymbolUses checks them against the
// grid, and the plan lowering accepts only what the runtime does (the 1-D grid of
// the world, axis 0, sum).
class Zero_StartOp<string mnemonic, string what, string example, string result,
                   dag extraArgs = (ins)>
    : Zero_Op<mnemonic, [MemoryEffects<[MemRead, MemWrite]>,
                         DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Starts " # what # "; the result is valid only after the wait.";
  let description = [{
    Begins }] # what # [{ of a flat tensor over the ranks of `grid` along
    `grid_axes`. The transfer proceeds while the ops between the start and its
    `zero.wait` run; the input must not change and the result must not be read
    before the wait, except by a later start: collectives run in the order they
    are started, each after the one before has written its result (hybrid
    sharding chains a slice's all-reduce to its reduce-scatter so).

    ```mlir
    shard.grid @zero(shape = 4)
    %pending, %token = zero.}] # mnemonic # [{ }] # example # [{

    %r = zero.wait %token, %pending : }] # result # [{
    ```
  }];
  let arguments = !con((ins RankedTensorOf<[F32, F64, BF16, F16]>:$input,
                            FlatSymbolRefAttr:$grid,
                            DefaultValuedAttr<Shard_GridAxesAttr, "{}">:$grid_axes),
                       extraArgs);
  let results = (outs RankedTensorOf<[F32, F64, BF16, F16]>:$pending, Zero_TokenType:$token);
  let hasVerifier = 1;
}

def Zero_AllGatherStartOp : Zero_StartOp<"all_gather_start", "an all-gather",
    "%x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>", "tensor<16xf32>"> {
  let assemblyFormat = [{
    $input `on` $grid (`grid_axes` `=` $grid_axes^)? attr-dict `:` type($input) `->`
    type($pending)
  }];
}

class Zero_ReductionStartOp<string mnemonic, string what, string example,
                            string result>
    : Zero_StartOp<mnemonic, what, example, result,
        (ins DefaultValuedAttr<Shard_ReductionKindAttr,
                               "::mlir::shard::ReductionKind::Sum">:$reduction)> {
  let assemblyFormat = [{
    $input `on` $grid (`grid_axes` `=` $grid_axes^)? (`reduction` `=` $reduction^)?
    attr-dict `:` type($input) `->` type($pending)
  }];
}

def Zero_ReduceScatterStartOp : Zero_ReductionStartOp<"reduce_scatter_start",
    "a reduce-scatter",
    "%x on @zero grid_axes = [0] : tensor<16xf32> -> tensor<4xf32>", "tensor<4xf32>">;
def Zero_AllReduceStartOp : Zero_ReductionStartOp<"all_reduce_start", "an all-reduce",
    "%x on @zero grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>",
    "tensor<16xf32>">;

def Zero_WaitOp : Zero_Op<"wait", [MemoryEffects<[MemRead, MemWrite]>,
                                   AllTypesMatch<["pending", "result"]>]> {
  let summary = "Completes a started collective and gives its result.";
  let description = [{
    `token` comes from a `zero.*_start` op; `pending` is that op's result, which
    only the wait makes readable.

    ```mlir
    shard.grid @zero(shape = 4)
    %pending, %token = zero.all_gather_start %x on @zero : tensor<4xf32> -> tensor<16xf32>
    %full = zero.wait %token, %pending : tensor<16xf32>
    ```
  }];
  let arguments = (ins Zero_TokenType:$token, RankedTensorOf<[F32, F64, BF16, F16]>:$pending);
  let results = (outs RankedTensorOf<[F32, F64, BF16, F16]>:$result);
  let assemblyFormat = "$token `,` $pending attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // ZERO_DIALECT_ZERO_IR_ZEROOPS_TD
