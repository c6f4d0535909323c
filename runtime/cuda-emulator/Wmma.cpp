//===- Wmma.cpp - One product per warp for the emulated mma_sync ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Every emulated thread holds whole fragments (include/mma.h), so the 32 threads
// of a warp would each do the same 16x16x16 product. Instead the first thread of
// a warp to reach its n-th mma_sync in a block does it, and the others take its
// result, after checking that they passed the same fragments: on a GPU a warp's
// threads hold parts of one fragment, so different ones are a bug there.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <mma.h>

#include <cstring>
#include <vector>

using namespace zero_cuda_emulator::detail;

namespace {

struct Product {
  std::vector<unsigned char> inputs, result;
};

/// The products of the block the host thread runs, per warp in call order.
struct WarpProducts {
  uint64_t block = 0;
  std::vector<uint32_t> calls;                // per thread of the block
  std::vector<std::vector<Product>> products; // per warp
};
thread_local WarpProducts state;

WarpProducts &current() {
  if (state.block != blockSerial || state.calls.size() < blockDim.x) {
    state.block = blockSerial;
    state.calls.assign(blockDim.x, 0);
    state.products.assign((blockDim.x + 31) / 32, {});
  }
  return state;
}

} // namespace

bool nvcuda::wmma::detail::warpProduct(const void *inputs, size_t inputBytes, void *result,
                                       size_t resultBytes) {
  WarpProducts &s = current();
  uint32_t n = s.calls[threadIdx.x]++;
  std::vector<Product> &warp = s.products[threadIdx.x / 32];
  if (n >= warp.size()) { // the first of its warp: it computes, and records
    Product p;
    p.inputs.assign((const unsigned char *)inputs, (const unsigned char *)inputs + inputBytes);
    warp.push_back(std::move(p));
    return false;
  }
  const Product &p = warp[n];
  if (p.inputs.size() != inputBytes || std::memcmp(p.inputs.data(), inputs, inputBytes))
    fatal("mma_sync: threads " + std::to_string(threadIdx.x / 32 * 32) + " and " +
          std::to_string(threadIdx.x) + " of block " + std::to_string(blockIdx.x) +
          " passed different fragments to their product number " + std::to_string(n) +
          " (a warp's threads hold parts of one fragment)");
  std::memcpy(result, p.result.data(), resultBytes);
  return true;
}

void nvcuda::wmma::detail::recordWarpProduct(const void *result, size_t resultBytes) {
  std::vector<Product> &warp = state.products[threadIdx.x / 32];
  warp.back().result.assign((const unsigned char *)result,
                            (const unsigned char *)result + resultBytes);
}
