//===- PlanOps.td - Plan dialect operations ---------------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_PLAN_IR_PLANOPS_TD
#define ZERO_DIALECT_PLAN_IR_PLANOPS_TD

include "zero/Dialect/Plan/IR/PlanDialect.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"

def Plan_BufferType : MemRefOf<[F32, F64, BF16, F16, I1, I8, UI8, I32, I64]>;

// BufferRole and KernelKind: generated from the plan file's schema (zplan.proto's
// Role and Kernel.Kind), the one list of both (utils/gen-plan-enums.py).
include "zero/Dialect/Plan/IR/PlanEnums.td"

def Plan_ProgramOp : Plan_Op<"program",
    [Symbol, SingleBlockImplicitTerminator<"ReturnOp">, IsolatedFromAbove]> {
  let summary = "One compiled step: an arena, its buffers and a kernel list.";
  let description = [{
    ```mlir
    plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
      %x = plan.buffer input at 0 {index = 0 : i64, name = "x"} : memref<4xf32>
      %y = plan.buffer temp at 64 : memref<4xf32>
      plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
      plan.return %y : memref<4xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$arena_bytes,
                       I64Attr:$world_size, OptionalAttr<I64Attr>:$host_arena_bytes,
                       OptionalAttr<I64Attr>:$nvme_arena_bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  // Checked after the buffers themselves, so a bad offset is reported once.
  let hasRegionVerifier = 1;
}

def Plan_BufferOp : Plan_Op<"buffer", [HasParent<"ProgramOp">]> {
  let summary = "A statically placed tensor in the program's arena.";
  let description = [{
    `role` is `temp` (produced and consumed inside the step), `param` (loaded from the
    ONNX initializer `name`; the optimizer updates it in place), `state` (optimizer
    state `name`, zero at the start, kept across steps), `master` (mixed precision:
    the f32 master copy of parameter `name`, loaded from the same initializer),
    `runtime` (a scalar the runtime sets before each step: `loss_scale`), `input`
    (graph input number `index`) or `constant` (initialized from `value`). The
    buffer occupies bytes
    `[offset, offset + size)`.

    A `view of` another buffer (its root, never itself a view) is a `temp` that
    reads bytes of the root in another shape: a reshape, or a contiguous slice (no
    kernel copies it). It lies inside the root's bytes, and the root lives as long
    as its views are read.

    A `host` buffer lies in the program's host arena (`host_arena_bytes`) instead
    of the device's: optimizer offload (ZeRO-Offload) keeps master weights and
    optimizer state there, and the kernels that read them run on the host. An
    `nvme` buffer (a `param`, `master` or `state` buffer under NVMe offload) lies in
    each rank's NVMe file (`nvme_arena_bytes`) at an offset aligned for direct I/O;
    only `nvme_read` and `nvme_write` touch it.

    ```mlir
    plan.program @main attributes {arena_bytes = 384 : i64, host_arena_bytes = 128 : i64,
                                   world_size = 1 : i64} {
      %w = plan.buffer param at 256 {name = "fc.weight"} : memref<8x4xf32>
      %v = plan.buffer temp at 256 view of %w : memref<8x4xf32> : memref<32xf32>
      %m = plan.buffer state at 0 {host, name = "fc.weight.exp_avg"} : memref<8x4xf32>
      %y = plan.buffer temp at 0 : memref<32xf32>
      plan.kernel relu ins(%v : memref<32xf32>) outs(%y : memref<32xf32>)
      plan.return %y : memref<32xf32>
    }
    ```
  }];
  let arguments = (ins Plan_BufferRole:$role, I64Attr:$offset,
                       OptionalAttr<StrAttr>:$name, OptionalAttr<I64Attr>:$index,
                       OptionalAttr<ElementsAttr>:$value, UnitAttr:$host,
                       UnitAttr:$nvme, Optional<Plan_BufferType>:$view_of);
  let results = (outs Plan_BufferType:$result);
  let assemblyFormat =
      "$role `at` $offset (`view` `of` $view_of^ `:` type($view_of))? attr-dict `:` "
      "type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes the buffer occupies in the arena.
    int64_t getSizeInBytes();
  }];
}

def Plan_KernelOp : Plan_Op<"kernel", [HasParent<"ProgramOp">, AttrSizedOperandSegments]> {
  let summary = "Runs a runtime kernel: reads `ins`, writes `outs`.";
  let description = [{
    `kernel` is the kind: an entry of the runtime's kernel tables; `attrs` holds its integer,
    float, string and integer-array arguments. Outputs are `temp` buffers, or `param`
    and `state` buffers that an optimizer step updates (possibly in place: an output
    may be one of the inputs).

    A kernel whose buffers are `host` buffers runs on the host; `to_host` and
    `to_device` (one input, one output of the same type) move bytes between
    the two arenas, `nvme_read` and `nvme_write` between an `nvme` buffer and a
    host one, and are the only kernels that read one space and write the other.

    ```mlir
    plan.program @main attributes {arena_bytes = 256 : i64, world_size = 1 : i64} {
      %x = plan.buffer input at 0 {index = 0 : i64, name = "x"} : memref<4x8xf32>
      %y = plan.buffer temp at 128 : memref<4x8xf32>
      plan.kernel softmax ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>)
          attrs {axis = 1 : i64}
      plan.return %y : memref<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Plan_KernelKind:$kernel, Variadic<Plan_BufferType>:$inputs,
                       Variadic<Plan_BufferType>:$outputs,
                       DefaultValuedAttr<DictionaryAttr, "{}">:$attrs);
  let assemblyFormat = [{
    $kernel (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)` (`attrs` $attrs^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Plan_ReturnOp : Plan_Op<"return", [HasParent<"ProgramOp">, Terminator]> {
  let summary = "The program's outputs, in graph-output order.";
  let description = [{
    Ends the program; `names` are the graph outputs' names.

    ```mlir
    plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
      %loss = plan.buffer input at 0 {index = 0 : i64, name = "loss"} : memref<f32>
      plan.return %loss : memref<f32> {names = ["loss"]}
    }
    ```
  }];
  let arguments = (ins Variadic<Plan_BufferType>:$results,
                       OptionalAttr<StrArrayAttr>:$names);
  let assemblyFormat = "($results^ `:` type($results))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, mlir::ValueRange{}, nullptr); }]>];
}

#endif // ZERO_DIALECT_PLAN_IR_PLANOPS_TD
