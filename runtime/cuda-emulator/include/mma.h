//===- mma.h - Warp matrix multiply-accumulate (WMMA), emulated ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Test build only: the nvcuda::wmma calls the tensor-core kernels make, with
// mma.h's names. On a GPU a fragment is spread over the 32 threads of a warp in a
// layout the API does not disclose; here every emulated thread holds the whole
// tile (the kernels never touch single elements, so the results are the same),
// and the first thread of a warp does each product for all of them (Wmma.cpp).
// What a GPU would fault on or silently misread ends the process: a pointer that
// is not 256-bit aligned, a leading dimension that is not a multiple of 16 bytes,
// threads of one warp passing different fragments to mma_sync. Products accumulate in f32 from the 16-bit
// operands, as the tensor cores do (the order of the sums may differ).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CUDA_EMULATOR_MMA_H
#define ZERO_CUDA_EMULATOR_MMA_H

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace zero_cuda_emulator::detail {
[[noreturn]] void fatal(const std::string &why);
}

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

/// A 16x16x16 tile: A is M x K, B is K x N, the accumulator M x N.
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator has the m16n16k16 shape");
  static constexpr int kRows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = kRows * kCols;
  T x[num_elements]; // row-major, the whole tile in every thread
};

namespace detail {
/// For this thread's next mma_sync in its block (Wmma.cpp): true, with `result`
/// filled, when another thread of its warp made that product already (after
/// checking that it passed the same fragments); false when this thread is the
/// first, which then computes and calls recordWarpProduct.
bool warpProduct(const void *inputs, size_t inputBytes, void *result, size_t resultBytes);
void recordWarpProduct(const void *result, size_t resultBytes);

inline void checkAccess(const char *call, const void *ptr, unsigned ldm, size_t elementBytes) {
  if ((uintptr_t)ptr % 32)
    zero_cuda_emulator::detail::fatal(std::string(call) +
                                      ": the pointer is not 256-bit aligned");
  if ((ldm * elementBytes) % 16)
    zero_cuda_emulator::detail::fatal(std::string(call) + ": ldm " + std::to_string(ldm) +
                                      " is not a multiple of 16 bytes");
}
/// Element (r, c) of a tile stored with leading dimension ldm.
inline size_t at(bool colMajor, int r, int c, unsigned ldm) {
  return colMajor ? (size_t)c * ldm + r : (size_t)r * ldm + c;
}
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename L, typename V>
void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &value) {
  for (T &e : f.x)
    e = T(value);
}

/// A or B, in the layout the fragment's type names.
template <typename Use, int M, int N, int K, typename T, typename L>
void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const T *ptr, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load names its layout");
  detail::checkAccess("load_matrix_sync", ptr, ldm, sizeof(T));
  using Frag = fragment<Use, M, N, K, T, L>;
  for (int r = 0; r < Frag::kRows; ++r)
    for (int c = 0; c < Frag::kCols; ++c)
      f.x[r * Frag::kCols + c] = ptr[detail::at(std::is_same_v<L, col_major>, r, c, ldm)];
}

template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *ptr, unsigned ldm,
                      layout_t layout) {
  detail::checkAccess("load_matrix_sync", ptr, ldm, sizeof(T));
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      f.x[r * N + c] = ptr[detail::at(layout == mem_col_major, r, c, ldm)];
}

template <int M, int N, int K, typename T>
void store_matrix_sync(T *ptr, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                       layout_t layout) {
  detail::checkAccess("store_matrix_sync", ptr, ldm, sizeof(T));
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      ptr[detail::at(layout == mem_col_major, r, c, ldm)] = f.x[r * N + c];
}

/// d = a b + c, summed in the accumulator's type; made once per warp.
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB,
          typename TC>
void mma_sync(fragment<accumulator, M, N, K, TC> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
              const fragment<matrix_b, M, N, K, TB, LB> &b,
              const fragment<accumulator, M, N, K, TC> &c) {
  unsigned char inputs[sizeof(a.x) + sizeof(b.x) + sizeof(c.x)];
  std::memcpy(inputs, a.x, sizeof(a.x));
  std::memcpy(inputs + sizeof(a.x), b.x, sizeof(b.x));
  std::memcpy(inputs + sizeof(a.x) + sizeof(b.x), c.x, sizeof(c.x));
  if (detail::warpProduct(inputs, sizeof(inputs), d.x, sizeof(d.x)))
    return;
  TC out[M * N];
  for (int r = 0; r < M; ++r)
    for (int n = 0; n < N; ++n) {
      TC s = c.x[r * N + n];
      for (int k = 0; k < K; ++k)
        s += (TC)a.x[r * K + k] * (TC)b.x[k * N + n];
      out[r * N + n] = s;
    }
  for (int e = 0; e < M * N; ++e)
    d.x[e] = out[e];
  detail::recordWarpProduct(d.x, sizeof(d.x));
}

} // namespace nvcuda::wmma

#endif // ZERO_CUDA_EMULATOR_MMA_H
