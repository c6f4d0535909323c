//===- BlasCore.cpp - OpenBLAS's kernels on CPUs it does not know ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/BlasCore.h"

#include <cblas.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

const char *zrt::blasCoreName() {
  const char *name = openblas_get_corename();
  return name ? name : "?";
}

void zrt::useKnownBlasCore(char **argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::strcmp(blasCoreName(), "Prescott") != 0)
    return;
  const char *core = nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    core = __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
#endif
  if (!core)
    return;
  // Rank 0 only under mpirun (its launchers name the rank in the environment).
  const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank)
    rank = std::getenv("PMI_RANK");
  if (!rank || std::strcmp(rank, "0") == 0)
    std::fprintf(stderr,
                 "zero-run: OpenBLAS does not know this CPU and chose its generic "
                 "'Prescott' kernels; running with OPENBLAS_CORETYPE=%s, the newest it has "
                 "that this CPU runs (set OPENBLAS_CORETYPE to choose)\n",
                 core);
  setenv("OPENBLAS_CORETYPE", core, 1);
  std::fflush(stderr);
  execv("/proc/self/exe", argv);
  // Not replaced (no /proc): go on with the generic kernels.
  std::fprintf(stderr, "zero-run: could not run again (%s); OpenBLAS keeps its generic "
                       "kernels\n",
               std::strerror(errno));
}
