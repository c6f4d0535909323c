// RUN: %mlir_opt_zero %s --split-input-file --verify-diagnostics

plan.program @main attributes {arena_bytes = 32 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{bytes [16, 48) lie outside the arena of 32 bytes}}
  %x = plan.buffer temp at 16 : memref<8xf32>
  plan.return
}

// -----

// expected-error@+1 {{world_size must be at least 1}}
plan.program @main attributes {arena_bytes = 32 : i64, world_size = 0 : i64} {
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'role' [temp, param, input, constant, state, master, runtime]}}
  %x = plan.buffer scratch at 0 : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{offset must be non-negative}}
  %x = plan.buffer temp at -8 : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{a param buffer needs a name}}
  %x = plan.buffer param at 0 : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{an input buffer needs its input index}}
  %x = plan.buffer input at 0 : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{a value is given exactly for constant buffers}}
  %x = plan.buffer constant at 0 : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{value type does not match the buffer type}}
  %x = plan.buffer constant at 0 {value = dense<1.0> : tensor<2xf32>} : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64} : memref<4xf32>
  %y = plan.buffer input at 16 {index = 1 : i64} : memref<4xf32>
  // expected-error@+1 {{writes a input buffer}}
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64} : memref<4xf32>
  // expected-error@+1 {{writes no output}}
  "plan.kernel"(%x) {kernel = 14 : i32, operandSegmentSizes = array<i32: 1, 0>} : (memref<4xf32>) -> ()
  plan.return
}

// -----

// A kernel kind is one of KernelKind's cases, not any name.
plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64} : memref<4xf32>
  %y = plan.buffer temp at 16 : memref<4xf32>
  // expected-error@+1 {{enum values for attribute 'kernel' [add, sub, mul}}
  plan.kernel swish ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64} : memref<4xf32>
  %y = plan.buffer temp at 16 : memref<4xf32>
  // expected-error@+1 {{attribute 'kernel' failed to satisfy constraint: what a plan kernel computes}}
  "plan.kernel"(%x, %y) {kernel = 99 : i32, operandSegmentSizes = array<i32: 1, 1>} : (memref<4xf32>, memref<4xf32>) -> ()
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer input at 0 {index = 0 : i64} : memref<4xf32>
  %y = plan.buffer temp at 16 : memref<4xf32>
  // expected-error@+1 {{attribute 'what' must be an integer, float, string or i64 array}}
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) attrs {what = [1, 2]}
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{a state buffer needs a name}}
  %x = plan.buffer state at 0 : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer temp at 0 : memref<4xf32>
  %c = plan.buffer constant at 16 {value = dense<1.0> : tensor<4xf32>} : memref<4xf32>
  // expected-error@+1 {{writes a constant buffer}}
  plan.kernel relu ins(%x : memref<4xf32>) outs(%c : memref<4xf32>)
  plan.return
}

// -----

func.func @outside() {
  // expected-error@+1 {{expects parent op 'plan.program'}}
  %x = plan.buffer temp at 0 : memref<4xf32>
  return
}

// -----

// Optimizer offload: a host buffer lies in the host arena.
plan.program @main attributes {arena_bytes = 64 : i64, host_arena_bytes = 16 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{bytes [0, 32) lie outside the host arena of 16 bytes}}
  %x = plan.buffer temp at 0 {host} : memref<8xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, host_arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer temp at 0 : memref<4xf32>
  %y = plan.buffer temp at 0 {host} : memref<4xf32>
  // expected-error@+1 {{mixes host and device buffers (only to_host and to_device cross)}}
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, host_arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer temp at 0 {host} : memref<4xf32>
  %y = plan.buffer temp at 16 {host} : memref<4xf32>
  // expected-error@+1 {{copies a device buffer into a host buffer}}
  plan.kernel to_host ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, host_arena_bytes = 64 : i64, world_size = 1 : i64} {
  %x = plan.buffer temp at 0 {host} : memref<4xf32>
  // expected-error@+1 {{a view lies in its root's memory (host or device)}}
  %v = plan.buffer temp at 0 view of %x : memref<4xf32> : memref<2x2xf32>
  plan.return
}

// -----

// NVMe offload: an nvme buffer is a block-aligned param, master or state buffer in
// the NVMe file, and only nvme_read and nvme_write touch it.
plan.program @main attributes {arena_bytes = 64 : i64, nvme_arena_bytes = 4096 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{an nvme buffer is a param, master or state buffer, not temp}}
  %x = plan.buffer temp at 0 {nvme} : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, nvme_arena_bytes = 8192 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{an nvme buffer's offset is a multiple of 4096}}
  %x = plan.buffer state at 16 {name = "m", nvme} : memref<4xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, nvme_arena_bytes = 4096 : i64, world_size = 1 : i64} {
  // expected-error@+1 {{bytes [0, 8192) lie outside the nvme arena of 4096 bytes}}
  %x = plan.buffer state at 0 {name = "m", nvme} : memref<2048xf32>
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, nvme_arena_bytes = 4096 : i64, world_size = 1 : i64} {
  %x = plan.buffer state at 0 {name = "m", nvme} : memref<4xf32>
  %y = plan.buffer temp at 0 : memref<4xf32>
  // expected-error@+1 {{reads an nvme buffer into a host buffer}}
  plan.kernel nvme_read ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return
}

// -----

plan.program @main attributes {arena_bytes = 64 : i64, host_arena_bytes = 64 : i64, nvme_arena_bytes = 4096 : i64, world_size = 1 : i64} {
  %x = plan.buffer state at 0 {name = "m", nvme} : memref<4xf32>
  %y = plan.buffer temp at 0 {host} : memref<4xf32>
  // expected-error@+1 {{touches an nvme buffer (only nvme_read and nvme_write do)}}
  plan.kernel relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  plan.return
}
