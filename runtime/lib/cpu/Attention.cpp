//===- Attention.cpp - Fused scaled dot-product attention on the CPU ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// compute.attention and its gradient, tiled as FlashAttention-2 is: a block of
// query rows meets the keys block by block with an online softmax (running
// maximum and sum), so no Tq x Tk matrix exists; the forward keeps the output and
// each row's log-sum-exp. The backward recomputes a block's probabilities from
// the log-sum-exp, one query head per thread: for each block of keys, every
// block of queries that sees it adds its part of dQ, dK and dV (five block
// products, FlashAttention-2's order), so no two threads write one element; the
// heads that share a key/value head (grouped-query attention) sum their dK and dV
// after. Block products are OpenBLAS GEMMs in the compute type (f32 for 16-bit
// inputs, f64 for f64), with the scale as the product's alpha.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/ElementwiseMath.h"
#include "../kernels/StridedOperand.h"
#include "zplan/AttentionViews.h"
#include "zrt/ParallelFor.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

using namespace zrt;
using namespace zrt::cpu;

namespace {

// Query rows and keys per block: a block's scores stay in the core's L2 cache,
// and the products are large enough for OpenBLAS to run near its peak. The
// backward's blocks are smaller: it keeps two (P and dP) and makes five products
// of each. Chosen with utils/bench-attention-cpu.py (T = 1024, 12 heads of 64, one
// thread), before keys were transposed for the products: forward 128 x 512
// against 128 x 256 or 128 x 128, 21 against 22 and 23.5 ms; backward 64 x 128
// against 128 x 128 or 128 x 256, 38 against 42 and 45 ms (31 ms now).
constexpr int64_t kQueryBlock = 128, kKeyBlock = 512;
constexpr int64_t kBackwardQueryBlock = 64, kBackwardKeyBlock = 128;

/// C (m x n) = alpha op(A) op(B) + beta C, row-major.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

using Geometry = AttentionGeometry;

/// The row's e^(x - shift), in place, and their sum (the polynomial exp of the
/// elementwise kernels in f32; -inf gives 0). Two loops: the first vectorizes as a
/// map, the second as a sum over lanes; the row is still in L1.
template <typename C> ZRT_VECTORIZED void expShifted(C *row, C shift, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    row[c] = kernels::expOf(row[c] - shift);
}
template <typename C> C expShiftedSum(C *row, C shift, int64_t n) {
  expShifted(row, shift, n);
  return sumRunInPlace(row, n);
}

/// The row's maximum, at least `start` (-inf for a fully masked row).
template <typename C> C rowMax(const C *row, C start, int64_t n) {
  C mx = maxRun(row, n);
  return mx > start ? mx : start;
}

/// The row times `factor`, in place.
template <typename C> ZRT_VECTORIZED void scaleRow(C *row, C factor, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    row[c] *= factor;
}

/// dS = P (dP - delta), in place of P.
template <typename C> ZRT_VECTORIZED void scoreGradRow(C *p, const C *dp, C delta, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    p[c] *= dp[c] - delta;
}

/// The products of two rows, into `out` (a row's delta is their sum: dO . O).
template <typename C> ZRT_VECTORIZED void multiplyRows(const C *a, const C *b, C *out, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    out[c] = a[c] * b[c];
}

/// `rows` rows of `cols` elements of x (row stride `stride`) in the compute type
/// C, and their row stride: x itself when it is already C, else converted into
/// `buffer` (resized to fit), rows packed.
template <typename T, typename C>
std::pair<const C *, int64_t> asCompute(const T *x, int64_t rows, int64_t cols, int64_t stride,
                                        std::vector<C> &buffer) {
  if constexpr (std::is_same_v<T, C>) {
    return {x, rows <= 1 ? cols : stride}; // BLAS wants a leading dimension >= cols
  } else {
    if ((int64_t)buffer.size() < rows * cols)
      buffer.resize(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        buffer[r * cols + c] = (C)x[r * stride + c];
    return {buffer.data(), cols};
  }
}

/// The `rows` x `cols` matrix x (row stride `stride`), transposed into `out`
/// (cols x rows, row stride `ld`) in the compute type: the block products then
/// read keys and values as Kᵀ and Vᵀ with no transposed operand, which OpenBLAS
/// multiplies some 15% faster at these shapes. In tiles of 16 rows: each write
/// fills a cache line.
template <typename T, typename C>
void transposeInto(const T *x, int64_t rows, int64_t cols, int64_t stride, C *out,
                   int64_t ld) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = r0; r < r1; ++r)
        out[c * ld + r] = (C)x[r * stride + c];
  }
}

/// Applies the explicit and causal masks to a block of scaled scores, the scores
/// of query rows i0.. against keys j0..: -inf where masked.
template <typename T, typename C>
void maskScores(const Geometry &g, const void *mask, int64_t b, int64_t h, int64_t i0,
                int64_t rows, int64_t j0, int64_t cols, C *s) {
  const C lowest = -std::numeric_limits<C>::infinity();
  if (g.mask != Geometry::Mask::None) {
    const Shape &st = g.maskStrides;
    for (int64_t r = 0; r < rows; ++r) {
      C *row = s + r * cols;
      int64_t base = b * st[0] + h * st[1] + (i0 + r) * st[2] + j0 * st[3];
      if (g.mask == Geometry::Mask::Bool) {
        const uint8_t *m = static_cast<const uint8_t *>(mask) + base;
        for (int64_t c = 0; c < cols; ++c)
          if (!m[c * st[3]])
            row[c] = lowest;
      } else {
        const T *m = static_cast<const T *>(mask) + base;
        for (int64_t c = 0; c < cols; ++c)
          row[c] += (C)m[c * st[3]];
      }
    }
  }
  if (g.causal && j0 + cols - 1 > i0) // the block reaches past the diagonal
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < cols; ++c)
        s[r * cols + c] = lowest;
}

/// The keys query rows [i0, i0 + rows) meet: all, or up to the diagonal.
int64_t keyEnd(const Geometry &g, int64_t i0, int64_t rows) {
  return g.causal ? std::min(g.kvLen, i0 + rows) : g.kvLen;
}

template <typename T>
void attentionForward(const Geometry &g, const T *q, const T *k, const T *v,
                      const void *mask, T *out, ComputeType<T> *lse) {
  using C = ComputeType<T>;
  const C lowest = -std::numeric_limits<C>::infinity();
  // Every key head transposed once (Kᵀ: [batch, key heads, size, keys]), for all
  // the blocks of queries that meet it.
  std::vector<C> keysT(g.batch * g.kvHeads * g.size * g.kvLen);
  parallelFor(g.batch * g.kvHeads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bkv = begin; bkv < end; ++bkv)
      transposeInto(k + g.key.at(bkv / g.kvHeads, bkv % g.kvHeads, 0), g.kvLen, g.size,
                    g.key.row, keysT.data() + bkv * g.size * g.kvLen, g.kvLen);
  });
  int64_t qBlocks = (g.qLen + kQueryBlock - 1) / kQueryBlock;
  parallelFor(g.batch * g.qHeads * qBlocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qBuf, vBuf, s(kQueryBlock * kKeyBlock), acc(kQueryBlock * g.vSize),
        m(kQueryBlock), l(kQueryBlock);
    for (int64_t task = begin; task < end; ++task) {
      int64_t bh = task / qBlocks, i0 = (task % qBlocks) * kQueryBlock;
      int64_t b = bh / g.qHeads, h = bh % g.qHeads, kvh = h / g.group();
      int64_t rows = std::min(kQueryBlock, g.qLen - i0);
      auto [qb, ldq] = asCompute(q + g.query.at(b, h, i0), rows, g.size, g.query.row, qBuf);
      const C *kth = keysT.data() + (b * g.kvHeads + kvh) * g.size * g.kvLen;
      const T *vh = v + g.value.at(b, kvh, 0);
      std::fill(m.begin(), m.end(), lowest);
      std::fill(l.begin(), l.end(), C(0));
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t j0 = 0, jEnd = keyEnd(g, i0, rows); j0 < jEnd; j0 += kKeyBlock) {
        int64_t cols = std::min(kKeyBlock, jEnd - j0);
        auto [vb, ldv] = asCompute(vh + j0 * g.value.row, cols, g.vSize, g.value.row, vBuf);
        gemm(false, false, rows, cols, g.size, (C)g.scale, qb, ldq, kth + j0, g.kvLen, C(0),
             s.data(), cols);
        maskScores<T>(g, mask, b, h, i0, rows, j0, cols, s.data());
        // Online softmax: rescale what the row has summed to the new maximum.
        for (int64_t r = 0; r < rows; ++r) {
          C *row = s.data() + r * cols;
          C mx = rowMax(row, m[r], cols);
          if (mx == lowest) {
            std::fill(row, row + cols, C(0)); // nothing seen yet: adds nothing
            continue;
          }
          C sum = expShiftedSum(row, mx, cols);
          if (mx != m[r]) {
            C alpha = m[r] == lowest ? C(0) : std::exp(m[r] - mx);
            scaleRow(acc.data() + r * g.vSize, alpha, g.vSize);
            l[r] *= alpha;
            m[r] = mx;
          }
          l[r] += sum;
        }
        gemm(false, false, rows, g.vSize, cols, C(1), s.data(), cols, vb, ldv, C(1),
             acc.data(), g.vSize);
      }
      T *o = out + g.out.at(b, h, i0);
      C *rowLse = lse + bh * g.qLen + i0;
      for (int64_t r = 0; r < rows; ++r) {
        bool seen = l[r] > 0; // a row that sees no key is zeros
        for (int64_t d = 0; d < g.vSize; ++d)
          o[r * g.out.row + d] = T(seen ? acc[r * g.vSize + d] / l[r] : C(0));
        rowLse[r] = seen ? m[r] + std::log(l[r]) : lowest;
      }
    }
  });
}

/// A head's rows: where its first row starts and the step from one row to the next.
template <typename X> struct Rows {
  X *p;
  int64_t ld;
  X *row(int64_t r) const { return p + r * ld; }
};

/// The FlashAttention-2 backward of one query head, on one thread: for each block
/// of keys, every block of queries that sees it recomputes P = exp(S - lse) and
/// adds its part of the three gradients (five block products). dQ, dK and dV are
/// accumulated in the compute type, scale included.
template <typename T> struct HeadBackward {
  using C = ComputeType<T>;
  const Geometry &g;
  const void *mask;
  std::vector<C> qBuf, kBuf, vBuf, oBuf, doBuf, ktBuf, vtBuf, delta, s, dp;

  HeadBackward(const Geometry &g, const void *mask) : g(g), mask(mask) {
    s.resize(kBackwardQueryBlock * kBackwardKeyBlock);
    dp.resize(std::max(kBackwardQueryBlock * kBackwardKeyBlock, g.vSize));
  }

  void run(int64_t b, int64_t h, Rows<const T> q, Rows<const T> k, Rows<const T> v,
           Rows<const T> out, const C *lse, Rows<const T> dout, Rows<C> dq, Rows<C> dk,
           Rows<C> dv) {
    auto [qh, ldq] = asCompute(q.p, g.qLen, g.size, q.ld, qBuf);
    auto [kh, ldk] = asCompute(k.p, g.kvLen, g.size, k.ld, kBuf);
    auto [vh, ldv] = asCompute(v.p, g.kvLen, g.vSize, v.ld, vBuf);
    auto [oh, ldo] = asCompute(out.p, g.qLen, g.vSize, out.ld, oBuf);
    auto [doh, lddo] = asCompute(dout.p, g.qLen, g.vSize, dout.ld, doBuf);
    delta.resize(g.qLen);
    for (int64_t r = 0; r < g.qLen; ++r) { // delta = rowsum(dO * O)
      multiplyRows(doh + r * lddo, oh + r * ldo, dp.data(), g.vSize);
      delta[r] = sumRunInPlace(dp.data(), g.vSize);
    }
    for (auto [x, rows, width] : {std::tuple{dq, g.qLen, g.size}, std::tuple{dk, g.kvLen, g.size},
                                  std::tuple{dv, g.kvLen, g.vSize}})
      for (int64_t r = 0; r < rows; ++r)
        std::fill(x.row(r), x.row(r) + width, C(0));
    C scale = (C)g.scale;
    for (int64_t j0 = 0; j0 < g.kvLen; j0 += kBackwardKeyBlock) {
      int64_t cols = std::min(kBackwardKeyBlock, g.kvLen - j0);
      const C *kb = kh + j0 * ldk;
      ktBuf.resize(g.size * cols);
      vtBuf.resize(g.vSize * cols);
      transposeInto(kb, cols, g.size, ldk, ktBuf.data(), cols);
      transposeInto(vh + j0 * ldv, cols, g.vSize, ldv, vtBuf.data(), cols);
      const C *kt = ktBuf.data(), *vt = vtBuf.data();
      // Causal: query rows before j0 see none of these keys.
      for (int64_t i0 = g.causal ? j0 / kBackwardQueryBlock * kBackwardQueryBlock : 0; i0 < g.qLen;
           i0 += kBackwardQueryBlock) {
        int64_t rows = std::min(kBackwardQueryBlock, g.qLen - i0);
        const C *qb = qh + i0 * ldq, *dob = doh + i0 * lddo;
        gemm(false, false, rows, cols, g.size, scale, qb, ldq, kt, cols, C(0), s.data(), cols);
        maskScores<T>(g, mask, b, h, i0, rows, j0, cols, s.data());
        for (int64_t r = 0; r < rows; ++r) {
          C *row = s.data() + r * cols;
          if (std::isinf(lse[i0 + r])) // a row that sees no key: no probabilities
            std::fill(row, row + cols, C(0));
          else
            (void)expShiftedSum(row, lse[i0 + r], cols); // masked (-inf) scores give 0
        }
        // dV += Pᵀ dO; dP = dO Vᵀ; dS = P (dP - delta) in place of P.
        gemm(true, false, cols, g.vSize, rows, C(1), s.data(), cols, dob, lddo, C(1),
             dv.row(j0), dv.ld);
        gemm(false, false, rows, cols, g.vSize, C(1), dob, lddo, vt, cols, C(0), dp.data(),
             cols);
        for (int64_t r = 0; r < rows; ++r)
          scoreGradRow(s.data() + r * cols, dp.data() + r * cols, delta[i0 + r], cols);
        // dK += scale dSᵀ Q; dQ += scale dS K.
        gemm(true, false, cols, g.size, rows, scale, s.data(), cols, qb, ldq, C(1), dk.row(j0),
             dk.ld);
        gemm(false, false, rows, g.size, cols, scale, s.data(), cols, kb, ldk, C(1),
             dq.row(i0), dq.ld);
      }
    }
  }
};

/// `rows` rows of `width` elements, packed in `src`, into dst's rows as T.
template <typename T, typename C>
void store(const C *src, int64_t rows, int64_t width, Rows<T> dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < width; ++d)
      dst.row(r)[d] = T(src[r * width + d]);
}

template <typename T>
void attentionBackward(const Geometry &g, const T *q, const T *k, const T *v, const T *out,
                       const ComputeType<T> *lse, const T *dout, const void *mask, T *dq,
                       T *dk, T *dv) {
  using C = ComputeType<T>;
  int64_t heads = g.batch * g.qHeads;
  int64_t qCount = g.qLen * g.size, kCount = g.kvLen * g.size, vCount = g.kvLen * g.vSize;
  // A task per query head. The key and value gradients of the heads that share a
  // key/value head are summed after: each head's go to a buffer of its own,
  // unless the outputs can take them directly (f32, one head per key/value head).
  bool direct = std::is_same_v<T, C> && g.group() == 1;
  std::vector<C> dkHeads(direct ? 0 : heads * kCount), dvHeads(direct ? 0 : heads * vCount);
  auto rowsOf = [](auto *base, const kernels::HeadLayout &l, int64_t b, int64_t h) {
    return Rows<std::remove_pointer_t<decltype(base)>>{base + l.at(b, h, 0), l.row};
  };
  parallelFor(heads, 1, [&](int64_t begin, int64_t end) {
    HeadBackward<T> head(g, mask);
    std::vector<C> dqAcc;
    for (int64_t bh = begin; bh < end; ++bh) {
      int64_t b = bh / g.qHeads, h = bh % g.qHeads, kvh = h / g.group();
      Rows<C> dqh, dkh, dvh;
      if constexpr (std::is_same_v<T, C>) {
        dqh = rowsOf(dq, g.dquery, b, h);
      } else {
        dqAcc.resize(qCount);
        dqh = {dqAcc.data(), g.size};
      }
      if (direct) {
        dkh = rowsOf(reinterpret_cast<C *>(dk), g.dkey, b, kvh);
        dvh = rowsOf(reinterpret_cast<C *>(dv), g.dvalue, b, kvh);
      } else {
        dkh = {dkHeads.data() + bh * kCount, g.size};
        dvh = {dvHeads.data() + bh * vCount, g.vSize};
      }
      head.run(b, h, rowsOf(q, g.query, b, h), rowsOf(k, g.key, b, kvh),
               rowsOf(v, g.value, b, kvh), rowsOf(out, g.out, b, h), lse + bh * g.qLen,
               rowsOf(dout, g.dout, b, h), dqh, dkh, dvh);
      if constexpr (!std::is_same_v<T, C>)
        store(dqh.p, g.qLen, g.size, rowsOf(dq, g.dquery, b, h));
    }
  });
  if (direct)
    return;
  // Sum each key/value head's gradients over the query heads of its group.
  parallelFor(g.batch * g.kvHeads, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> sum;
    for (int64_t bkv = begin; bkv < end; ++bkv) {
      int64_t b = bkv / g.kvHeads, kvh = bkv % g.kvHeads;
      int64_t first = b * g.qHeads + kvh * g.group();
      for (auto [heads, width, to] :
           {std::tuple{&dkHeads, g.size, rowsOf(dk, g.dkey, b, kvh)},
            std::tuple{&dvHeads, g.vSize, rowsOf(dv, g.dvalue, b, kvh)}}) {
        int64_t count = g.kvLen * width;
        sum.assign(heads->begin() + first * count, heads->begin() + (first + 1) * count);
        for (int64_t h = 1; h < g.group(); ++h) {
          const C *part = heads->data() + (first + h) * count;
          for (int64_t i = 0; i < count; ++i)
            sum[i] += part[i];
        }
        store(sum.data(), g.kvLen, width, to);
      }
    }
  });
}

BoundKernel bindAttention(const KernelCall &call) {
  Geometry g = attentionGeometry(call, /*grad=*/false);
  const TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.outs[0],
                   lse = call.outs[1];
  const void *m = call.ins.size() == 4 ? call.ins[3].data : nullptr;
  return dispatchFloat(q.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      attentionForward(g, q.as<T>(), k.as<T>(), v.as<T>(), m, out.as<T>(),
                       lse.as<ComputeType<T>>());
    };
  });
}

BoundKernel bindAttentionGrad(const KernelCall &call) {
  Geometry g = attentionGeometry(call, /*grad=*/true);
  const TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.ins[3],
                   lse = call.ins[4], dout = call.ins[5];
  const TensorView dq = call.outs[0], dk = call.outs[1], dv = call.outs[2];
  const void *m = call.ins.size() == 7 ? call.ins[6].data : nullptr;
  return dispatchFloat(q.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      attentionBackward(g, q.as<T>(), k.as<T>(), v.as<T>(), out.as<T>(),
                        lse.as<ComputeType<T>>(), dout.as<T>(), m, dq.as<T>(), dk.as<T>(),
                        dv.as<T>());
    };
  });
}

/// Operand `name` over `t`, as attention reads or writes it: `t` as it lies or a
/// view of it (zplan/AttentionViews.h), of shape `expected`, its rows' elements
/// contiguous; one it writes covers `t` once (no element written twice, none left).
kernels::HeadLayout headLayout(const KernelCall &call, const char *name, const TensorView &t,
                               const Shape &expected, bool written) {
  kernels::StridedOperand view = kernels::stridedOperandOf(call, name, t);
  ZRT_CHECK(view.shape == expected, call.where() << ": the " << name << " is "
                                                 << shapeString(view.shape) << ", not "
                                                 << shapeString(expected));
  ZRT_CHECK((view.strides[3] == 1 || expected[3] <= 1) &&
                (expected[2] <= 1 || view.strides[2] >= expected[3]),
            call.where() << ": the " << name
                         << " view's rows are not contiguous and apart (strides "
                         << shapeString(view.strides) << ")");
  if (written)
    ZRT_CHECK(kernels::coversOnce(view, t.numel()),
              call.where() << ": the " << name
                           << " view does not cover its tensor exactly once");
  return {view.offset, view.strides[0], view.strides[1], view.strides[2]};
}

/// dQ, dK and dV each cover their own tensor once; or, written into one buffer
/// (the QKV projection's gradient, in place of its concat), they tile it: one
/// view at evenly spaced offsets, which together cover it once.
void checkGradientsCover(const KernelCall &call) {
  std::array<kernels::StridedOperand, 3> views;
  for (int i = 0; i < 3; ++i)
    views[i] = kernels::stridedOperandOf(call, ::zplan::attention::outputView(true, i),
                                         call.outs[i]);
  std::vector<int> shared;
  for (int i = 0; i < 3; ++i)
    if (call.outs[i].data == call.outs[0].data)
      shared.push_back(i);
  bool together = shared.size() == 3;
  ZRT_CHECK(together || shared.size() == 1 || call.outs[0].numel() == 0,
            call.where() << ": dquery shares its buffer with one other gradient only");
  if (!together) {
    for (int i = 0; i < 3; ++i) {
      const char *name = ::zplan::attention::outputView(true, i);
      ZRT_CHECK(i == 0 || call.outs[i].data != call.outs[3 - i].data ||
                    call.outs[i].numel() == 0,
                call.where() << ": dkey and dvalue share a buffer without dquery");
      ZRT_CHECK(kernels::coversOnce(views[i], call.outs[i].numel()),
                call.where() << ": the " << name
                             << " view does not cover its tensor exactly once");
    }
    return;
  }
  std::array<int, 3> order = {0, 1, 2};
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return views[a].offset < views[b].offset; });
  const kernels::StridedOperand &first = views[order[0]];
  int64_t step = views[order[1]].offset - first.offset;
  bool alike = step > 0 && views[order[2]].offset - views[order[1]].offset == step;
  for (const kernels::StridedOperand &v : views)
    alike = alike && v.shape == first.shape && v.strides == first.strides;
  kernels::StridedOperand tiled = first;
  tiled.shape.insert(tiled.shape.begin(), 3);
  tiled.strides.insert(tiled.strides.begin(), step);
  ZRT_CHECK(alike && kernels::coversOnce(tiled, call.outs[0].numel()),
            call.where() << ": dquery, dkey and dvalue share a buffer but do not tile it "
                            "(alike views at evenly spaced offsets, covering it once)");
}

/// The log-sum-exp is kept in the compute type: f32, or f64 for f64 queries.
void checkLse(const KernelCall &call, const TensorView &lse, const TensorView &q,
              const Geometry &g) {
  DType want = q.dtype == zero::zplan::F64 ? zero::zplan::F64 : zero::zplan::F32;
  ZRT_CHECK(lse.dtype == want, call.where() << ": the log-sum-exp must be "
                                            << dtypeName(want) << ", not "
                                            << dtypeName(lse.dtype));
  expectShape(call, lse, {g.batch, g.qHeads, g.qLen}, "log-sum-exp");
}

} // namespace

AttentionGeometry zrt::cpu::attentionGeometry(const KernelCall &call, bool grad) {
  if (grad)
    ZRT_CHECK((call.ins.size() == 6 || call.ins.size() == 7) && call.outs.size() == 3,
              call.where() << ": takes query, key, value, the forward's result and "
                              "log-sum-exp, the result's gradient and an optional mask, "
                              "and gives the three gradients");
  else
    ZRT_CHECK((call.ins.size() == 3 || call.ins.size() == 4) && call.outs.size() == 2,
              call.where() << ": takes query, key, value and an optional mask, and gives "
                              "the result and the log-sum-exp");
  const TensorView &q = call.ins[0], &k = call.ins[1], &v = call.ins[2];
  size_t maskAt = grad ? 6 : 3;
  const TensorView *mask = call.ins.size() > maskAt ? &call.ins[maskAt] : nullptr;
  ZRT_CHECK(k.dtype == q.dtype && v.dtype == q.dtype,
            call.where() << ": query, key and value differ in dtype");
  Shape qs = kernels::stridedOperandOf(call, "query", q).shape,
        ks = kernels::stridedOperandOf(call, "key", k).shape,
        vs = kernels::stridedOperandOf(call, "value", v).shape;
  ZRT_CHECK(qs.size() == 4 && ks.size() == 4 && vs.size() == 4,
            call.where() << ": query, key and value must be 4-D, got " << shapeString(qs)
                         << ", " << shapeString(ks) << ", " << shapeString(vs));
  AttentionGeometry g;
  g.batch = qs[0];
  g.qHeads = qs[1];
  g.qLen = qs[2];
  g.size = qs[3];
  g.kvHeads = ks[1];
  g.kvLen = ks[2];
  g.vSize = vs[3];
  ZRT_CHECK(ks[0] == g.batch && vs[0] == g.batch && ks[3] == g.size && vs[1] == g.kvHeads &&
                vs[2] == g.kvLen && g.kvHeads > 0 && g.qHeads % g.kvHeads == 0,
            call.where() << ": query " << shapeString(qs) << ", key " << shapeString(ks)
                         << " and value " << shapeString(vs) << " do not fit");
  g.scale = call.floatAttr("scale");
  ZRT_CHECK(std::isfinite(g.scale), call.where() << ": scale must be finite");
  g.causal = call.hasAttr("causal") && call.intAttr("causal") != 0;
  if (mask) {
    ZRT_CHECK(mask->dtype == zero::zplan::BOOL || mask->dtype == q.dtype,
              call.where() << ": the mask must be bool or the query's dtype, got "
                           << dtypeName(mask->dtype));
    Shape scores = {g.batch, g.qHeads, g.qLen, g.kvLen};
    ZRT_CHECK(mask->shape.size() <= 4 && broadcastShapes({mask->shape, scores}, call) == scores,
              call.where() << ": the mask " << mask->describe()
                           << " does not broadcast to the scores " << shapeString(scores));
    g.mask = mask->dtype == zero::zplan::BOOL ? AttentionGeometry::Mask::Bool : AttentionGeometry::Mask::Add;
    g.maskStrides = broadcastStrides(mask->shape, scores);
  }
  g.query = headLayout(call, "query", q, qs, false);
  g.key = headLayout(call, "key", k, ks, false);
  g.value = headLayout(call, "value", v, vs, false);
  Shape outShape = {g.batch, g.qHeads, g.qLen, g.vSize};
  if (!grad) {
    const TensorView &out = call.outs[0];
    ZRT_CHECK(out.dtype == q.dtype, call.where() << ": the result's dtype is not the query's");
    g.out = headLayout(call, "out", out, outShape, true);
    checkLse(call, call.outs[1], q, g);
    return g;
  }
  const TensorView &out = call.ins[3], &dout = call.ins[5];
  ZRT_CHECK(out.dtype == q.dtype && dout.dtype == q.dtype,
            call.where() << ": the result and its gradient must have the query's dtype");
  g.out = headLayout(call, "out", out, outShape, false);
  g.dout = headLayout(call, "dout", dout, outShape, false);
  checkLse(call, call.ins[4], q, g);
  for (auto [i, of, shape, layout] :
       {std::tuple{0, &q, qs, &g.dquery}, std::tuple{1, &k, ks, &g.dkey},
        std::tuple{2, &v, vs, &g.dvalue}}) {
    const char *name = ::zplan::attention::outputView(true, i);
    ZRT_CHECK(call.outs[i].dtype == of->dtype,
              call.where() << ": the " << name << "'s dtype is not the query's");
    *layout = headLayout(call, name, call.outs[i], shape, false);
  }
  checkGradientsCover(call);
  return g;
}

void zrt::addAttentionKernels(KernelTable &t) {
  t[Kernel::ATTENTION] = bindAttention;
  t[Kernel::ATTENTION_GRAD] = bindAttentionGrad;
}
