//===- Kernels.h - The kernel table: kinds to implementations --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A kernel is bound once, when the plan loads: binding checks every shape, dtype
// and attribute against what the kernel needs and returns a closure that runs it.
// Running then needs no checks beyond data-dependent ones (a gather index).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_KERNELS_H
#define ZRT_KERNELS_H

#include "zrt/Tensor.h"
#include "zplan.pb.h"
#include "zplan/KernelKind.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace zrt {

class AsyncCollectives;
class Communicator;
class NvmeFile;

/// The plan schema's kernel kinds (Kernel::MATMUL, ...) key the kernel tables.
using zero::zplan::Kernel;
using KernelKind = zero::zplan::Kernel::Kind;

/// One kernel launch as the plan describes it.
struct KernelCall {
  KernelKind kind = Kernel::KIND_UNSPECIFIED;
  std::string loc;
  std::vector<TensorView> ins;
  std::vector<TensorView> outs;
  const google::protobuf::Map<std::string, zero::zplan::Attr> *attrs = nullptr;
  /// The ranks the plan runs on (collective kernels only).
  Communicator *comm = nullptr;
  /// Where started collectives run (split-phase collective kernels only).
  AsyncCollectives *async = nullptr;
  /// NVMe offload (nvme_read, nvme_write): the rank's file and the NVMe
  /// buffer's offset in it (its TensorView has no address).
  NvmeFile *nvme = nullptr;
  int64_t nvmeOffset = 0;

  bool hasAttr(const std::string &key) const;
  int64_t intAttr(const std::string &key) const;
  double floatAttr(const std::string &key) const;
  std::string stringAttr(const std::string &key) const;
  std::vector<int64_t> intsAttr(const std::string &key) const;
  /// Throws zrt::Error unless there are exactly `nIn` inputs and `nOut` outputs.
  void expectArity(size_t nIn, size_t nOut) const;
  /// "matmul", for messages and profiles.
  std::string name() const { return zero::zplan::kernelKindName(kind); }
  /// "kernel 'matmul' at <loc>", for messages.
  std::string where() const;
};

using BoundKernel = std::function<void()>;
using KernelBinder = BoundKernel (*)(const KernelCall &);
using KernelTable = std::map<KernelKind, KernelBinder>;

/// The CPU implementation of every kernel the compiler emits.
const KernelTable &cpuKernels();

/// Kernel `k` of `plan` as a call, its buffers at their offsets in `arena`, or in
/// `hostArena` for host buffers (computing addresses there, touching none).
KernelCall planKernelCall(const zero::zplan::Plan &plan, int k, char *arena,
                          char *hostArena, Communicator *comm, AsyncCollectives *async,
                          NvmeFile *nvme = nullptr);
/// Binds `call` from `table`. Throws zrt::Error when the table lacks the kernel or
/// binding finds a problem.
BoundKernel bindKernelCall(const KernelTable &table, const KernelCall &call);
/// Both: kernel `k` of `plan`, bound.
BoundKernel bindPlanKernel(const KernelTable &table, const zero::zplan::Plan &plan, int k,
                           char *arena, char *hostArena, Communicator *comm,
                           AsyncCollectives *async);

/// How the CPU runs bf16 matrix products, for zero-run to say.
const char *bf16MatmulPath();

// Families, each in its own file under lib/cpu.
void addElementwiseKernels(KernelTable &table);
void addFusedKernels(KernelTable &table);
void addLinearAlgebraKernels(KernelTable &table);
void addNormalizationKernels(KernelTable &table);
void addAttentionKernels(KernelTable &table);
void addReductionKernels(KernelTable &table);
void addDataMovementKernels(KernelTable &table);
void addTrainingKernels(KernelTable &table);
void addCollectiveKernels(KernelTable &table);

} // namespace zrt

#endif // ZRT_KERNELS_H
