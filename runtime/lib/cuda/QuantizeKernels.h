//===- QuantizeKernels.h - ZeRO++'s int8 wire form on the GPU ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Launchers of QuantizeKernels.cu, for the quantized collectives' binders. A
// chunk's message is its wire form (zplan/QuantizedWire.h); chunk c's message
// starts at c * quantizedBytes(chunk, block).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_QUANTIZEKERNELS_H
#define ZRT_LIB_CUDA_QUANTIZEKERNELS_H

#include "CudaLaunch.h"

namespace zrt::cuda {

/// `chunks` chunks of `chunk` values of `in` (values at or past `count` are 0)
/// into their messages at `wire`; chunk `skip` (-1: none) is left alone.
void quantizeChunks(cudaStream_t s, Elem t, const void *in, int64_t count, int64_t chunk,
                    int64_t chunks, int64_t block, int64_t skip, void *wire);
/// The first `count` values of the messages at `wire` (chunks of `chunk`), into `out`.
void dequantizeChunks(cudaStream_t s, Elem t, const void *wire, int64_t chunk,
                      int64_t block, int64_t count, void *out);
/// `out` (chunk values) = the sum in rank order, in f32 rounded once, of rank
/// `me`'s `own` (its first ownCount values; zeros after) and every other rank's
/// message at wire + r * quantizedBytes(chunk, block), dequantized.
void sumQuantizedChunks(cudaStream_t s, Elem t, const void *wire, const void *own,
                        int64_t ownCount, int me, int ranks, int64_t chunk, int64_t block,
                        void *out);

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_QUANTIZEKERNELS_H
