// A plan whose buffer lies outside its arena cannot be written by zero-opt (the plan
// verifier stops it), so this one is patched after writing: the loader must still
// refuse it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: zero-opt %s --emit=zplan -o %t/ok.zplan
// RUN: zero-run %t/ok.zplan | FileCheck %s --check-prefix=OK
// RUN: protoc --python_out=%t -I %S/../../../include/zplan zplan.proto
// RUN: %python %S/Inputs/edit-plan.py %t %t/ok.zplan %t/bad.zplan "buffer(1).offset = 4096"
// RUN: not zero-run %t/bad.zplan 2>&1 | FileCheck %s
// OK: output_0: f32[4] = 0 0 0 0
// CHECK: zero-run: error: {{.*}}bad.zplan: buffer 1 at offset 4096 with 16 bytes lies outside the arena of 128 bytes
plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
  %x = plan.buffer constant at 0 {value = dense<-1.0> : tensor<4xf32>} : memref<4xf32>
  %y = plan.buffer temp at 64 : memref<4xf32>
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return %y : memref<4xf32>
}
