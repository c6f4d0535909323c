//===- ParallelFor.h - The CPU kernels' threads ----------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CPU kernels split their elements or rows over one pool of threads per
// process, as many as OpenBLAS uses (zero-run --threads sets both). The caller
// takes a share itself. One kernel at a time uses the pool: a kernel that finds it
// busy (another rank's thread, the offloaded optimizer's worker) runs on its own
// thread alone, which is what those callers' cores are for.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_PARALLELFOR_H
#define ZRT_PARALLELFOR_H

#include <cstdint>
#include <functional>

namespace zrt {

/// Threads the CPU kernels use from now on, the caller's included (at least 1).
void setKernelThreads(int threads);
int kernelThreads();

/// OpenBLAS's threads and the kernels' together (zero-run --threads). Above one
/// thread, OpenBLAS's idle threads also spin for less (lib/cpu/OpenBlasSpin.h).
void setCpuThreads(int threads);
/// The threads OpenBLAS uses (OPENBLAS_NUM_THREADS, else one per core).
int blasThreads();

/// Calls body(begin, end) over consecutive ranges covering [0, n), in parallel
/// when n is at least 2 * `grain` (ranges of `grain` or more). Rethrows the first
/// exception a range threw, after every range has ended.
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body);

} // namespace zrt

#endif // ZRT_PARALLELFOR_H
