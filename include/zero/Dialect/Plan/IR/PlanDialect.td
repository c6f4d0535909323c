//===- PlanDialect.td - The executable plan dialect -------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_PLAN_IR_PLANDIALECT_TD
#define ZERO_DIALECT_PLAN_IR_PLANDIALECT_TD

include "mlir/IR/OpBase.td"

def Plan_Dialect : Dialect {
  let name = "plan";
  let cppNamespace = "::zero::plan";
  let summary = "Buffers at static arena offsets and the kernels that run on them.";
  let description = [{
    The last level before the `.zplan` file. A `plan.program` owns one arena of
    `arena_bytes`; every tensor is a `plan.buffer` at a fixed byte offset in it, and
    buffers whose lifetimes do not overlap share bytes. Kernels name their inputs and
    outputs; the op order is the execution order. The dialect maps one to one onto
    `include/zplan/zplan.proto`.
  }];
}

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

#endif // ZERO_DIALECT_PLAN_IR_PLANDIALECT_TD
