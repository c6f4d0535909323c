//===- Passes.td - Conversion passes ----------------------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CONVERSION_PASSES_TD
#define ZERO_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertComputeToPlanPass : Pass<"convert-compute-to-plan", "mlir::ModuleOp"> {
  let summary = "Lowers the compute-level `main` function to a plan.program with "
                "static buffer offsets.";
  let description = [{
    Every tensor of `func.func @main` becomes a `plan.buffer` at a fixed byte offset in
    one arena, every compute op a `plan.kernel`. Parameters, inputs and constants live
    for the whole step; each temporary lives from the op that writes it to its last
    reader, and buffers whose lifetimes do not overlap share bytes (placed once all
    lifetimes are known: largest first, lowest free offset, 64-byte alignment). A
    kernel's outputs never share bytes with its inputs. A reshape, or a slice whose
    elements lie contiguously, is a view (`plan.buffer temp ... view of %root`) of
    its input's bytes, not a copy kernel, unless `views` is off; the root then lives
    as long as its views are read.

    Before:
    ```mlir
    func.func @main(%x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<4xf32> {
      %0 = compute.relu %x : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
    After:
    ```mlir
    plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
      %0 = plan.buffer input at 0 {index = 0 : i64} : memref<4xf32>
      %1 = plan.buffer temp at 64 : memref<4xf32>
      plan.kernel relu ins(%0 : memref<4xf32>) outs(%1 : memref<4xf32>)
      plan.return %1 : memref<4xf32>
    }
    ```
  }];
  let dependentDialects = ["::zero::plan::PlanDialect"];
  let options = [
    Option<"worldSize", "world-size", "int64_t", "1",
           "Number of ranks the plan is compiled for.">,
    Option<"views", "views", "bool", "true",
           "Reshapes and contiguous slices read their input in place (false: copy "
           "kernels, for comparison).">,
  ];
}

#endif // ZERO_CONVERSION_PASSES_TD
