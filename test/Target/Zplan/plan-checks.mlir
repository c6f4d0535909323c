// zero-opt runs zero-run's own checks on every plan it writes, every kernel bound:
// a plan the runtime would refuse is a compile error (here written by hand; from
// an ONNX model it would be a compiler bug).
// RUN: not zero-opt %s --emit=zplan -o %t.zplan 2>&1 | FileCheck %s
// RUN: not zero-opt %S/Inputs/overlapping-buffers.mlir --emit=zplan -o %t.zplan 2>&1 | FileCheck %s --check-prefix=OVERLAP

// CHECK: error: internal error, the plan fails zero-run's checks: kernel 'relu' {{.*}}: result has shape [3], expected [4]
plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
  %x = plan.buffer constant at 0 {value = dense<-1.0> : tensor<4xf32>} : memref<4xf32>
  %y = plan.buffer temp at 64 : memref<3xf32>
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<3xf32>)
  plan.return %y : memref<3xf32>
}
// OVERLAP: error: internal error, the plan fails zero-run's checks: the plan: buffer 1 [0, 16) and buffer 0 [0, 16) share bytes while both are alive (kernels 0 to 1)
