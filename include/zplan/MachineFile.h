//===- MachineFile.h - The machine file's keys ------------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A machine file is one JSON object of the figures the cost model predicts a step
// from; `zero-run --calibrate` measures and writes one, `zero-opt --machine FILE`
// reads it. Its keys, written once for both sides. Every figure is a number in SI
// units; a missing key keeps the cost model's default for the "cpu" machine.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_MACHINEFILE_H
#define ZPLAN_MACHINEFILE_H

namespace zplan::machine {

/// A string: the machine's name, shown in reports.
inline constexpr const char *kName = "name";
/// FLOP/s of a large f32 GEMM, over all the threads a rank uses.
inline constexpr const char *kMatmulFlops = "matmul_flops";
/// FLOP/s of a large bf16 GEMM (f32 accumulation): the products and fused
/// attention of 16-bit plans. Absent: matmul_flops.
inline constexpr const char *kMatmulFlops16 = "matmul_flops_16bit";
/// FLOP/s of elementwise arithmetic (every kernel but the GEMMs).
inline constexpr const char *kVectorFlops = "vector_flops";
/// Bytes/s of memory (bytes read plus bytes written).
inline constexpr const char *kMemoryBandwidth = "memory_bandwidth";
/// Seconds each kernel costs besides its work (a launch).
inline constexpr const char *kKernelOverheadS = "kernel_overhead_s";
/// Seconds per step of a ring collective (latency), and per byte on the wire.
inline constexpr const char *kAlphaS = "alpha_s";
inline constexpr const char *kBetaSPerByte = "beta_s_per_byte";
/// Ranks per node (an integer): collectives among more ranks than this cross
/// nodes, and their ring steps take the inter-node figures below. Absent: every
/// rank on one node.
inline constexpr const char *kRanksPerNode = "ranks_per_node";
/// The ring figures of a link between nodes. Absent: alpha_s and beta_s_per_byte.
inline constexpr const char *kInterAlphaS = "inter_alpha_s";
inline constexpr const char *kInterBetaSPerByte = "inter_beta_s_per_byte";
/// A string: how collectives move their bytes, for the report's traffic by link
/// class. "ring" (NCCL's and MPI's rings; the default) or "direct" (each rank
/// sends every peer its part at once: zero-run's TCP collectives, launched
/// without mpirun).
inline constexpr const char *kCollectiveAlgorithm = "collective_algorithm";
/// Bytes/s a rank reads from and writes to its NVMe offload file (direct I/O).
inline constexpr const char *kNvmeReadBandwidth = "nvme_read_bandwidth";
inline constexpr const char *kNvmeWriteBandwidth = "nvme_write_bandwidth";

} // namespace zplan::machine

#endif // ZPLAN_MACHINEFILE_H
