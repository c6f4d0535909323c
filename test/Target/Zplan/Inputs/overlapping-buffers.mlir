// Two buffers over the same bytes, both alive at kernel 0 (plan-checks.mlir).
plan.program @main attributes {arena_bytes = 128 : i64, world_size = 1 : i64} {
  %x = plan.buffer constant at 0 {value = dense<-1.0> : tensor<4xf32>} : memref<4xf32>
  %y = plan.buffer temp at 0 : memref<4xf32>
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return %y : memref<4xf32>
}
