//===- OpenBlasSpin.cpp - OpenBLAS's idle threads let the cores go soon ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// OpenBLAS reads OPENBLAS_THREAD_TIMEOUT when it loads, before main. Its pthreads
// build exports openblas_read_env (reads the variables again), blas_thread_shutdown_
// (joins its threads) and blas_thread_init (starts them, with the timeout read
// last). They are called here, before any rank thread exists: a GEMM that found the
// threads shut down would start them itself, and two ranks' GEMMs doing so at once
// race inside OpenBLAS (a crash seen in rank-failure.test). On the 2-core benchmark machine, utils/bench-train-step.py's
// GPT at two threads ran 208, 208, 214 ms per step with OpenBLAS's default spin and
// 192, 197, 198 ms with 2^20 cycles (alternating runs of 25 steps).
//
//===----------------------------------------------------------------------===//

#include "OpenBlasSpin.h"

#include <dlfcn.h>

#include <cstdlib>

bool zrt::cpu::shortenOpenBlasSpin() {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT"))
    return false; // the user's choice
  auto readEnv = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "openblas_read_env"));
  auto shutdown = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
  auto start = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_init"));
  if (!readEnv || !shutdown || !start)
    return false;
  setenv("OPENBLAS_THREAD_TIMEOUT", "20", /*overwrite=*/0);
  readEnv();
  shutdown();
  start();
  return true;
}
