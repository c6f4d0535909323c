// RUN: %mlir_opt_zero %s | FileCheck %s
// RUN: %mlir_opt_zero %s | %mlir_opt_zero | FileCheck %s

shard.grid @zero(shape = 4)
shard.grid @mesh(shape = 2x2)

// Split-phase collectives round-trip, with the contract of the shard collective
// they replace: grid, grid axes, reduction kind (sum by default).
// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<4xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<4xf32>, tensor<16xf32>) {
  // CHECK: %[[P:.+]], %[[T:.+]] = zero.all_gather_start %{{.+}} on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  %p, %t = zero.all_gather_start %x on @zero grid_axes = [0] : tensor<4xf32> -> tensor<16xf32>
  // CHECK: zero.reduce_scatter_start %{{.+}} on @zero grid_axes = [0] : tensor<16xf32> -> tensor<4xf32>
  %q, %u = zero.reduce_scatter_start %y on @zero grid_axes = [0] reduction = sum : tensor<16xf32> -> tensor<4xf32>
  // CHECK: zero.all_reduce_start %{{.+}} on @mesh grid_axes = [1] reduction = max : tensor<16xf32> -> tensor<16xf32>
  %r, %v = zero.all_reduce_start %y on @mesh grid_axes = [1] reduction = max : tensor<16xf32> -> tensor<16xf32>
  // CHECK: zero.wait %[[T]], %[[P]] : tensor<16xf32>
  %0 = zero.wait %t, %p : tensor<16xf32>
  %1 = zero.wait %u, %q : tensor<4xf32>
  %2 = zero.wait %v, %r : tensor<16xf32>
  return %0, %1, %2 : tensor<16xf32>, tensor<4xf32>, tensor<16xf32>
}
