//===- SoftmaxLossKernelsOnHost.cpp - Softmax and losses, on the host ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: the very source nvcc compiles, built by the host compiler
// against the emulated CUDA headers (cuda-emulator/include).
//
//===----------------------------------------------------------------------===//

#include "../lib/cuda/SoftmaxLossKernels.cu"
