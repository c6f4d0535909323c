//===- ParallelFor.h - The CPU kernels' threads ----------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CPU kernels, GEMMs included, split their elements, rows or products over one
// pool of threads per process (zero-run --threads); OpenBLAS runs each GEMM part
// on the thread that calls it. The caller
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

/// The kernels' threads (zero-run --threads), OpenBLAS set to one thread per call.
void setCpuThreads(int threads);
/// zero-run's default thread count: OpenBLAS's own, as the library loaded
/// (OPENBLAS_NUM_THREADS, else one per core).
int defaultCpuThreads();

/// Calls body(begin, end) over consecutive ranges covering [0, n), in parallel
/// when n is at least 2 * `grain` (ranges of `grain` or more). Rethrows the first
/// exception a range threw, after every range has ended.
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &body);

} // namespace zrt

#endif // ZRT_PARALLELFOR_H
