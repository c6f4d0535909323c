//===- nvrtc.h - NVRTC, emulated on the host --------------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The part of NVRTC the CUDA backend calls (lib/cuda/GeneratedKernels.cpp), with
// NVRTC's names and values. A program compiles with the host compiler, as a
// shared object holding each kernel's host entry (a generated source's
// `#ifndef __CUDACC_RTC__` half); its "CUBIN" is that object's bytes.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_NVRTC_H
#define ZERO_CUDA_EMULATOR_NVRTC_H

#include <cstddef>

typedef enum {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_OUT_OF_MEMORY = 1,
  NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
  NVRTC_ERROR_INVALID_INPUT = 3,
  NVRTC_ERROR_INVALID_PROGRAM = 4,
  NVRTC_ERROR_INVALID_OPTION = 5,
  NVRTC_ERROR_COMPILATION = 6,
} nvrtcResult;

typedef struct _nvrtcProgram *nvrtcProgram;

const char *nvrtcGetErrorString(nvrtcResult result);
nvrtcResult nvrtcVersion(int *major, int *minor);
nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
                               int numHeaders, const char *const *headers,
                               const char *const *includeNames);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
/// Options: --gpu-architecture=..., -std=c++17 and --use_fast_math=false are
/// accepted (the host has one architecture); others are NVRTC_ERROR_INVALID_OPTION.
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *size);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin);

#endif // ZERO_CUDA_EMULATOR_NVRTC_H
