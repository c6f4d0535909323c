//===- BlasCore.h - OpenBLAS's kernels on CPUs it does not know -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_BLASCORE_H
#define ZRT_BLASCORE_H

namespace zrt {

/// OpenBLAS picks its kernels when it is loaded, by the CPU's family and model. A
/// CPU newer than the library knows (Debian 12's 0.3.21 on a Xeon with AMX) gets
/// its generic x86-64 kernels ("Prescott"): the test GPT's step took 696 ms there
/// against 189 ms with its AVX-512 kernels (utils/bench-train-step.py). When
/// OpenBLAS chose Prescott on a CPU with AVX-512 or AVX2 and OPENBLAS_CORETYPE is
/// not set, this runs `argv` again (execv of this program, before anything else
/// has started) with OPENBLAS_CORETYPE naming the newest kernels the CPU runs,
/// and says so on stderr (rank 0 of an MPI job only). Otherwise it returns.
void useKnownBlasCore(char **argv);

/// The kernels OpenBLAS runs (its core name: "SkylakeX", "Haswell", ...).
const char *blasCoreName();

} // namespace zrt

#endif // ZRT_BLASCORE_H
