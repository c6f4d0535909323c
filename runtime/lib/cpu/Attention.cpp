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
#include "zrt/ParallelFor.h"

#include <cblas.h>

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

/// `count` contiguous elements of x in the compute type C: x itself when it is
/// already C, else converted into `buffer` (resized to fit).
template <typename T, typename C>
const C *asCompute(const T *x, int64_t count, std::vector<C> &buffer) {
  if constexpr (std::is_same_v<T, C>) {
    return x;
  } else {
    if ((int64_t)buffer.size() < count)
      buffer.resize(count);
    for (int64_t i = 0; i < count; ++i)
      buffer[i] = (C)x[i];
    return buffer.data();
  }
}

/// The `rows` x `cols` row-major x, transposed into `out` (cols x rows, row
/// stride `ld`) in the compute type: the block products then read keys and values
/// as Kᵀ and Vᵀ with no transposed operand, which OpenBLAS multiplies some 15%
/// faster at these shapes. In tiles of 16 rows: each write fills a cache line.
template <typename T, typename C>
void transposeInto(const T *x, int64_t rows, int64_t cols, C *out, int64_t ld) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = r0; r < r1; ++r)
        out[c * ld + r] = (C)x[r * cols + c];
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
      transposeInto(k + bkv * g.kvLen * g.size, g.kvLen, g.size,
                    keysT.data() + bkv * g.size * g.kvLen, g.kvLen);
  });
  int64_t qBlocks = (g.qLen + kQueryBlock - 1) / kQueryBlock;
  parallelFor(g.batch * g.qHeads * qBlocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qBuf, vBuf, s(kQueryBlock * kKeyBlock), acc(kQueryBlock * g.vSize),
        m(kQueryBlock), l(kQueryBlock);
    for (int64_t task = begin; task < end; ++task) {
      int64_t bh = task / qBlocks, i0 = (task % qBlocks) * kQueryBlock;
      int64_t b = bh / g.qHeads, h = bh % g.qHeads, kvh = h / g.group();
      int64_t rows = std::min(kQueryBlock, g.qLen - i0);
      const C *qb = asCompute(q + (bh * g.qLen + i0) * g.size, rows * g.size, qBuf);
      const C *kth = keysT.data() + (b * g.kvHeads + kvh) * g.size * g.kvLen;
      const T *vh = v + (b * g.kvHeads + kvh) * g.kvLen * g.vSize;
      std::fill(m.begin(), m.end(), lowest);
      std::fill(l.begin(), l.end(), C(0));
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t j0 = 0, jEnd = keyEnd(g, i0, rows); j0 < jEnd; j0 += kKeyBlock) {
        int64_t cols = std::min(kKeyBlock, jEnd - j0);
        const C *vb = asCompute(vh + j0 * g.vSize, cols * g.vSize, vBuf);
        gemm(false, false, rows, cols, g.size, (C)g.scale, qb, g.size, kth + j0, g.kvLen, C(0),
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
        gemm(false, false, rows, g.vSize, cols, C(1), s.data(), cols, vb, g.vSize, C(1),
             acc.data(), g.vSize);
      }
      T *o = out + (bh * g.qLen + i0) * g.vSize;
      C *rowLse = lse + bh * g.qLen + i0;
      for (int64_t r = 0; r < rows; ++r) {
        bool seen = l[r] > 0; // a row that sees no key is zeros
        for (int64_t d = 0; d < g.vSize; ++d)
          o[r * g.vSize + d] = T(seen ? acc[r * g.vSize + d] / l[r] : C(0));
        rowLse[r] = seen ? m[r] + std::log(l[r]) : lowest;
      }
    }
  });
}

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

  void run(int64_t b, int64_t h, const T *q, const T *k, const T *v, const T *out,
           const C *lse, const T *dout, C *dq, C *dk, C *dv) {
    const C *qh = asCompute(q, g.qLen * g.size, qBuf);
    const C *kh = asCompute(k, g.kvLen * g.size, kBuf);
    const C *vh = asCompute(v, g.kvLen * g.vSize, vBuf);
    const C *oh = asCompute(out, g.qLen * g.vSize, oBuf);
    const C *doh = asCompute(dout, g.qLen * g.vSize, doBuf);
    delta.resize(g.qLen);
    for (int64_t r = 0; r < g.qLen; ++r) { // delta = rowsum(dO * O)
      multiplyRows(doh + r * g.vSize, oh + r * g.vSize, dp.data(), g.vSize);
      delta[r] = sumRunInPlace(dp.data(), g.vSize);
    }
    std::fill(dq, dq + g.qLen * g.size, C(0));
    std::fill(dk, dk + g.kvLen * g.size, C(0));
    std::fill(dv, dv + g.kvLen * g.vSize, C(0));
    C scale = (C)g.scale;
    for (int64_t j0 = 0; j0 < g.kvLen; j0 += kBackwardKeyBlock) {
      int64_t cols = std::min(kBackwardKeyBlock, g.kvLen - j0);
      const C *kb = kh + j0 * g.size;
      ktBuf.resize(g.size * cols);
      vtBuf.resize(g.vSize * cols);
      transposeInto(kb, cols, g.size, ktBuf.data(), cols);
      transposeInto(vh + j0 * g.vSize, cols, g.vSize, vtBuf.data(), cols);
      const C *kt = ktBuf.data(), *vt = vtBuf.data();
      // Causal: query rows before j0 see none of these keys.
      for (int64_t i0 = g.causal ? j0 / kBackwardQueryBlock * kBackwardQueryBlock : 0; i0 < g.qLen;
           i0 += kBackwardQueryBlock) {
        int64_t rows = std::min(kBackwardQueryBlock, g.qLen - i0);
        const C *qb = qh + i0 * g.size, *dob = doh + i0 * g.vSize;
        gemm(false, false, rows, cols, g.size, scale, qb, g.size, kt, cols, C(0), s.data(),
             cols);
        maskScores<T>(g, mask, b, h, i0, rows, j0, cols, s.data());
        for (int64_t r = 0; r < rows; ++r) {
          C *row = s.data() + r * cols;
          if (std::isinf(lse[i0 + r])) // a row that sees no key: no probabilities
            std::fill(row, row + cols, C(0));
          else
            (void)expShiftedSum(row, lse[i0 + r], cols); // masked (-inf) scores give 0
        }
        // dV += Pᵀ dO; dP = dO Vᵀ; dS = P (dP - delta) in place of P.
        gemm(true, false, cols, g.vSize, rows, C(1), s.data(), cols, dob, g.vSize, C(1),
             dv + j0 * g.vSize, g.vSize);
        gemm(false, false, rows, cols, g.vSize, C(1), dob, g.vSize, vt, cols, C(0),
             dp.data(), cols);
        for (int64_t r = 0; r < rows; ++r)
          scoreGradRow(s.data() + r * cols, dp.data() + r * cols, delta[i0 + r], cols);
        // dK += scale dSᵀ Q; dQ += scale dS K.
        gemm(true, false, cols, g.size, rows, scale, s.data(), cols, qb, g.size, C(1),
             dk + j0 * g.size, g.size);
        gemm(false, false, rows, g.size, cols, scale, s.data(), cols, kb, g.size, C(1),
             dq + i0 * g.size, g.size);
      }
    }
  }
};

/// dst[i] = T(src[i]) for `count` elements.
template <typename T, typename C> void store(const C *src, int64_t count, T *dst) {
  for (int64_t i = 0; i < count; ++i)
    dst[i] = T(src[i]);
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
  parallelFor(heads, 1, [&](int64_t begin, int64_t end) {
    HeadBackward<T> head(g, mask);
    std::vector<C> dqAcc;
    for (int64_t bh = begin; bh < end; ++bh) {
      int64_t b = bh / g.qHeads, h = bh % g.qHeads;
      int64_t bkv = b * g.kvHeads + h / g.group();
      C *dqh, *dkh, *dvh;
      if constexpr (std::is_same_v<T, C>) {
        dqh = dq + bh * qCount;
      } else {
        dqAcc.resize(qCount);
        dqh = dqAcc.data();
      }
      if (direct) {
        dkh = reinterpret_cast<C *>(dk) + bkv * kCount;
        dvh = reinterpret_cast<C *>(dv) + bkv * vCount;
      } else {
        dkh = dkHeads.data() + bh * kCount;
        dvh = dvHeads.data() + bh * vCount;
      }
      head.run(b, h, q + bh * qCount, k + bkv * kCount, v + bkv * vCount,
               out + bh * g.qLen * g.vSize, lse + bh * g.qLen, dout + bh * g.qLen * g.vSize,
               dqh, dkh, dvh);
      if constexpr (!std::is_same_v<T, C>)
        store(dqh, qCount, dq + bh * qCount);
    }
  });
  if (direct)
    return;
  // Sum each key/value head's gradients over the query heads of its group.
  parallelFor(g.batch * g.kvHeads, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> sum;
    for (int64_t bkv = begin; bkv < end; ++bkv) {
      int64_t first = (bkv / g.kvHeads) * g.qHeads + (bkv % g.kvHeads) * g.group();
      for (auto [heads, count, to] : {std::tuple{&dkHeads, kCount, dk + bkv * kCount},
                                      std::tuple{&dvHeads, vCount, dv + bkv * vCount}}) {
        sum.assign(heads->begin() + first * count, heads->begin() + (first + 1) * count);
        for (int64_t h = 1; h < g.group(); ++h) {
          const C *part = heads->data() + (first + h) * count;
          for (int64_t i = 0; i < count; ++i)
            sum[i] += part[i];
        }
        store(sum.data(), count, to);
      }
    }
  });
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

BoundKernel bindAttention(const KernelCall &call) {
  ZRT_CHECK((call.ins.size() == 3 || call.ins.size() == 4) && call.outs.size() == 2,
            call.where() << ": takes query, key, value and an optional mask, and gives "
                            "the result and the log-sum-exp");
  const TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2];
  const TensorView *mask = call.ins.size() == 4 ? &call.ins[3] : nullptr;
  Geometry g = attentionGeometry(call, q, k, v, mask);
  const TensorView out = call.outs[0], lse = call.outs[1];
  ZRT_CHECK(out.dtype == q.dtype, call.where() << ": the result's dtype is not the query's");
  expectShape(call, out, {g.batch, g.qHeads, g.qLen, g.vSize}, "result");
  checkLse(call, lse, q, g);
  const void *m = mask ? mask->data : nullptr;
  return dispatchFloat(q.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      attentionForward(g, q.as<T>(), k.as<T>(), v.as<T>(), m, out.as<T>(),
                       lse.as<ComputeType<T>>());
    };
  });
}

BoundKernel bindAttentionGrad(const KernelCall &call) {
  ZRT_CHECK((call.ins.size() == 6 || call.ins.size() == 7) && call.outs.size() == 3,
            call.where() << ": takes query, key, value, the forward's result and "
                            "log-sum-exp, the result's gradient and an optional mask, "
                            "and gives the three gradients");
  const TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.ins[3],
                   lse = call.ins[4], dout = call.ins[5];
  const TensorView *mask = call.ins.size() == 7 ? &call.ins[6] : nullptr;
  Geometry g = attentionGeometry(call, q, k, v, mask);
  Shape outShape = {g.batch, g.qHeads, g.qLen, g.vSize};
  ZRT_CHECK(out.dtype == q.dtype && dout.dtype == q.dtype,
            call.where() << ": the result and its gradient must have the query's dtype");
  expectShape(call, out, outShape, "result");
  expectShape(call, dout, outShape, "result's gradient");
  checkLse(call, lse, q, g);
  const TensorView dq = call.outs[0], dk = call.outs[1], dv = call.outs[2];
  for (auto [grad, of, name] : {std::tuple{dq, q, "query"}, std::tuple{dk, k, "key"},
                                std::tuple{dv, v, "value"}}) {
    ZRT_CHECK(grad.dtype == of.dtype, call.where() << ": the " << name
                                                   << " gradient's dtype is not its operand's");
    expectShape(call, grad, of.shape, name);
  }
  const void *m = mask ? mask->data : nullptr;
  return dispatchFloat(q.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      attentionBackward(g, q.as<T>(), k.as<T>(), v.as<T>(), out.as<T>(),
                        lse.as<ComputeType<T>>(),
                        dout.as<T>(), m, dq.as<T>(), dk.as<T>(), dv.as<T>());
    };
  });
}

} // namespace

AttentionGeometry zrt::cpu::attentionGeometry(const KernelCall &call, const TensorView &q,
                                              const TensorView &k, const TensorView &v,
                                              const TensorView *mask) {
  AttentionGeometry g;
  ZRT_CHECK(q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4,
            call.where() << ": query, key and value must be 4-D, got " << q.describe()
                         << ", " << k.describe() << ", " << v.describe());
  ZRT_CHECK(k.dtype == q.dtype && v.dtype == q.dtype,
            call.where() << ": query, key and value differ in dtype");
  g.batch = q.shape[0];
  g.qHeads = q.shape[1];
  g.qLen = q.shape[2];
  g.size = q.shape[3];
  g.kvHeads = k.shape[1];
  g.kvLen = k.shape[2];
  g.vSize = v.shape[3];
  ZRT_CHECK(k.shape[0] == g.batch && v.shape[0] == g.batch && k.shape[3] == g.size &&
                v.shape[1] == g.kvHeads && v.shape[2] == g.kvLen && g.kvHeads > 0 &&
                g.qHeads % g.kvHeads == 0,
            call.where() << ": query " << q.describe() << ", key " << k.describe()
                         << " and value " << v.describe() << " do not fit");
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
  return g;
}

void zrt::addAttentionKernels(KernelTable &t) {
  t[Kernel::ATTENTION] = bindAttention;
  t[Kernel::ATTENTION_GRAD] = bindAttentionGrad;
}
