//===- cuda.h - The CUDA driver API's modules, emulated on the host -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Loading a compiled module and launching its kernels, as the CUDA backend does
// for generated kernels (lib/cuda/GeneratedKernels.cpp). A module is what the
// emulated NVRTC made (nvrtc.h): a shared object, loaded from memory. A kernel
// `name` is its `name_thread(params, thread)` entry, run for every thread of the
// grid on the stream like any emulated kernel; `name_params` says how many
// 8-byte parameters it takes and `name_pointer_params` how many of them, first,
// are addresses, checked to lie in device memory as a GPU would fault on them.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_CUDA_H
#define ZERO_CUDA_EMULATOR_CUDA_H

#include "cuda_runtime.h"

typedef enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
} CUresult;

typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef CUstream_st *CUstream;

CUresult cuGetErrorString(CUresult error, const char **text);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleUnload(CUmodule module);
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name);
CUresult cuLaunchKernel(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ,
                        unsigned blockX, unsigned blockY, unsigned blockZ,
                        unsigned sharedMemBytes, CUstream stream, void **kernelParams,
                        void **extra);

#endif // ZERO_CUDA_EMULATOR_CUDA_H
