//===- QuantizedCollectives.h - ZeRO++'s int8 collectives -------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The plan's collectives with `quantize_block` B: the same results as the
// communicator's, up to int8 block quantization (BlockQuantization.h), with about
// a quarter of f32's bytes (half of bf16's) on the wire. Built from any
// communicator's all-gather and all-to-all, so every launcher gets the same bits.
//
//  - all-gather (qwZ): each rank quantizes its part; every rank, the owner too,
//    gets every part dequantized, so all ranks compute with the same weights.
//  - reduce-scatter (qgZ): each rank quantizes the chunk meant for each rank; an
//    all-to-all delivers them; the owner dequantizes and sums in rank order (its
//    own chunk unquantized).
//  - all-reduce (qgZ across groups): that reduce-scatter over chunks of
//    ceil(count / ranks), then a quantized all-gather of the sums.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_QUANTIZEDCOLLECTIVES_H
#define ZRT_QUANTIZEDCOLLECTIVES_H

#include "zrt/Communicator.h"

namespace zrt {

void quantizedAllGather(Communicator &comm, const void *in, void *out, int64_t count,
                        DType t, int64_t block);
void quantizedReduceScatterSum(Communicator &comm, const void *in, void *out,
                               int64_t count, DType t, int64_t block);
void quantizedAllReduceSum(Communicator &comm, const void *in, void *out, int64_t count,
                           DType t, int64_t block);

} // namespace zrt

#endif // ZRT_QUANTIZEDCOLLECTIVES_H
