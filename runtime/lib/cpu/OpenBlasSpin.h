//===- OpenBlasSpin.h - OpenBLAS's idle threads let the cores go soon -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CPU_OPENBLASSPIN_H
#define ZRT_LIB_CPU_OPENBLASSPIN_H

namespace zrt::cpu {

/// After each GEMM, OpenBLAS's threads spin for 2^28 cycles (about 0.1 s) before
/// they sleep, holding the cores the kernels' own threads need between GEMMs.
/// Unless OPENBLAS_THREAD_TIMEOUT is set, sets it to 2^20 cycles (about 0.3 ms: a
/// train of GEMMs still finds the threads awake) and has OpenBLAS read it again and
/// restart its threads. Call it before starting any thread that may run a GEMM.
/// True when it did; false where the user chose a value or the
/// OpenBLAS build lacks the (exported, internal) entry points, which are looked up
/// at run time for that reason.
bool shortenOpenBlasSpin();

} // namespace zrt::cpu

#endif // ZRT_LIB_CPU_OPENBLASSPIN_H
