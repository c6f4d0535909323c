//===- Attention.cpp - Fused scaled dot-product attention on the CPU ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// compute.attention and its gradient, tiled as FlashAttention-2 is: a block of
// query rows meets the keys block by block with an online softmax (running
// maximum and sum), so no Tq x Tk matrix exists; the forward keeps the output and
// each row's log-sum-exp. The backward recomputes a block's probabilities from
// the log-sum-exp: one pass per block of keys accumulates their key and value
// gradients over every query of the heads that share them, a second per block of
// queries their query gradient, so no two threads write one element. Block
// products are OpenBLAS GEMMs in the compute type (f32 for 16-bit inputs, f64
// for f64), on each thread's own blocks.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/ElementwiseMath.h"
#include "zrt/ParallelFor.h"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace zrt;
using namespace zrt::cpu;

namespace {

constexpr int64_t kBlock = 128; // query rows and keys per block: fewer, larger GEMMs

/// C (m x n) = op(A) op(B), row-major, overwriting C.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
          const float *b, int64_t ldb, float *c, int64_t ldc, float beta = 0) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
          const double *b, int64_t ldb, double *c, int64_t ldc, double beta = 0) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

using Geometry = AttentionGeometry;

/// The row's e^(x - shift), in place, and their sum (the polynomial exp of the
/// elementwise kernels in f32: vectorized; -inf gives 0).
template <typename C> ZRT_VECTORIZED C expShiftedSum(C *row, C shift, int64_t n) {
  C sum = 0;
  for (int64_t c = 0; c < n; ++c) {
    row[c] = kernels::expOf(row[c] - shift);
    sum += row[c];
  }
  return sum;
}

/// The row's maximum, at least `start` (-inf for a fully masked row).
template <typename C> ZRT_VECTORIZED C rowMax(const C *row, C start, int64_t n) {
  C mx = start;
  for (int64_t c = 0; c < n; ++c)
    mx = row[c] > mx ? row[c] : mx;
  return mx;
}

/// dS = P (dP - delta), in place of P.
template <typename C> ZRT_VECTORIZED void scoreGradRow(C *p, const C *dp, C delta, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    p[c] *= dp[c] - delta;
}

/// `rows` x `cols` elements of x (row stride `stride`) in compute type C.
template <typename T, typename C>
void load(const T *x, int64_t stride, int64_t rows, int64_t cols, C *out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = (C)x[r * stride + c];
}

/// Scales a block of scores and applies the causal and explicit masks: the
/// scores of query rows i0.. against keys j0.., -inf where masked.
template <typename T, typename C>
void maskScores(const Geometry &g, const void *mask, int64_t b, int64_t h, int64_t i0,
                int64_t rows, int64_t j0, int64_t cols, C *s) {
  const C lowest = -std::numeric_limits<C>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    C *row = s + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      row[c] *= (C)g.scale;
    if (g.mask != Geometry::Mask::None) {
      const Shape &st = g.maskStrides;
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
    if (g.causal)
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < cols; ++c)
        row[c] = lowest;
  }
}

/// The key blocks query rows [i0, i0 + rows) meet: all, or up to the diagonal.
int64_t keyEnd(const Geometry &g, int64_t i0, int64_t rows) {
  return g.causal ? std::min(g.kvLen, i0 + rows) : g.kvLen;
}

template <typename T>
void attentionForward(const Geometry &g, const T *q, const T *k, const T *v,
                      const void *mask, T *out, ComputeType<T> *lse) {
  using C = ComputeType<T>;
  int64_t qBlocks = (g.qLen + kBlock - 1) / kBlock;
  parallelFor(g.batch * g.qHeads * qBlocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qb(kBlock * g.size), kb(kBlock * g.size), vb(kBlock * g.vSize),
        s(kBlock * kBlock), acc(kBlock * g.vSize), m(kBlock), l(kBlock);
    for (int64_t task = begin; task < end; ++task) {
      int64_t bh = task / qBlocks, i0 = (task % qBlocks) * kBlock;
      int64_t b = bh / g.qHeads, h = bh % g.qHeads, kvh = h / g.group();
      int64_t rows = std::min(kBlock, g.qLen - i0);
      load(q + (bh * g.qLen + i0) * g.size, g.size, rows, g.size, qb.data());
      const T *kh = k + (b * g.kvHeads + kvh) * g.kvLen * g.size;
      const T *vh = v + (b * g.kvHeads + kvh) * g.kvLen * g.vSize;
      std::fill(m.begin(), m.end(), -std::numeric_limits<C>::infinity());
      std::fill(l.begin(), l.end(), C(0));
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t j0 = 0, jEnd = keyEnd(g, i0, rows); j0 < jEnd; j0 += kBlock) {
        int64_t cols = std::min(kBlock, g.kvLen - j0);
        load(kh + j0 * g.size, g.size, cols, g.size, kb.data());
        load(vh + j0 * g.vSize, g.vSize, cols, g.vSize, vb.data());
        gemm(false, true, rows, cols, g.size, qb.data(), g.size, kb.data(), g.size, s.data(),
             cols);
        maskScores<T>(g, mask, b, h, i0, rows, j0, cols, s.data());
        // Online softmax: rescale what the row has summed to the new maximum.
        for (int64_t r = 0; r < rows; ++r) {
          C *row = s.data() + r * cols;
          C mx = rowMax(row, m[r], cols);
          if (mx == -std::numeric_limits<C>::infinity()) {
            std::fill(row, row + cols, C(0)); // nothing seen yet: adds nothing
            continue;
          }
          C alpha = m[r] == -std::numeric_limits<C>::infinity() ? C(0) : std::exp(m[r] - mx);
          C sum = expShiftedSum(row, mx, cols);
          l[r] = l[r] * alpha + sum;
          for (int64_t d = 0; d < g.vSize; ++d)
            acc[r * g.vSize + d] *= alpha;
          m[r] = mx;
        }
        gemm(false, false, rows, g.vSize, cols, s.data(), cols, vb.data(), g.vSize,
             acc.data(), g.vSize, C(1));
      }
      T *o = out + (bh * g.qLen + i0) * g.vSize;
      C *rowLse = lse + bh * g.qLen + i0;
      for (int64_t r = 0; r < rows; ++r) {
        bool seen = l[r] > 0; // a row that sees no key is zeros
        for (int64_t d = 0; d < g.vSize; ++d)
          o[r * g.vSize + d] = T(seen ? acc[r * g.vSize + d] / l[r] : C(0));
        rowLse[r] = seen ? m[r] + std::log(l[r]) : -std::numeric_limits<C>::infinity();
      }
    }
  });
}

/// One block's recomputed probabilities P = exp(S - lse) and the score gradient
/// dS = P (dP - delta), dP = dO Vᵀ, for query rows [i0, +rows) of head h and keys
/// [j0, +cols): `s` ends holding dS.
template <typename T, typename C>
void scoreGradient(const Geometry &g, const void *mask, int64_t b, int64_t h, int64_t i0,
                   int64_t rows, int64_t j0, int64_t cols, const C *qb, const C *kb,
                   const C *vb, const C *dob, const C *lse, C *s, C *dp) {
  gemm(false, true, rows, cols, g.size, qb, g.size, kb, g.size, s, cols);
  maskScores<T>(g, mask, b, h, i0, rows, j0, cols, s);
  for (int64_t r = 0; r < rows; ++r) {
    C *row = s + r * cols;
    if (std::isinf(lse[r])) // a row that sees no key: no probabilities
      std::fill(row, row + cols, C(0));
    else
      (void)expShiftedSum(row, lse[r], cols); // masked (-inf) scores give 0
  }
  gemm(false, true, rows, cols, g.vSize, dob, g.vSize, vb, g.vSize, dp, cols);
}

template <typename T>
void attentionBackward(const Geometry &g, const T *q, const T *k, const T *v, const T *out,
                       const ComputeType<T> *lse, const T *dout, const void *mask, T *dq,
                       T *dk,
                       T *dv) {
  using C = ComputeType<T>;
  // delta = rowsum(dO * O), per query row.
  std::vector<C> delta(g.batch * g.qHeads * g.qLen);
  parallelFor((int64_t)delta.size(), 256, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      C sum = 0;
      for (int64_t d = 0; d < g.vSize; ++d)
        sum += (C)dout[row * g.vSize + d] * (C)out[row * g.vSize + d];
      delta[row] = sum;
    }
  });
  int64_t qBlocks = (g.qLen + kBlock - 1) / kBlock, kBlocks = (g.kvLen + kBlock - 1) / kBlock;
  auto loadQueryBlock = [&](int64_t bh, int64_t i0, int64_t rows, C *qb, C *dob) {
    load(q + (bh * g.qLen + i0) * g.size, g.size, rows, g.size, qb);
    load(dout + (bh * g.qLen + i0) * g.vSize, g.vSize, rows, g.vSize, dob);
  };
  // Key and value gradients, a block of keys of one key/value head per task.
  parallelFor(g.batch * g.kvHeads * kBlocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qb(kBlock * g.size), kb(kBlock * g.size), vb(kBlock * g.vSize),
        dob(kBlock * g.vSize), s(kBlock * kBlock), dp(kBlock * kBlock),
        dkAcc(kBlock * g.size), dvAcc(kBlock * g.vSize);
    for (int64_t task = begin; task < end; ++task) {
      int64_t bkv = task / kBlocks, j0 = (task % kBlocks) * kBlock;
      int64_t b = bkv / g.kvHeads, kvh = bkv % g.kvHeads;
      int64_t cols = std::min(kBlock, g.kvLen - j0);
      load(k + (bkv * g.kvLen + j0) * g.size, g.size, cols, g.size, kb.data());
      load(v + (bkv * g.kvLen + j0) * g.vSize, g.vSize, cols, g.vSize, vb.data());
      std::fill(dkAcc.begin(), dkAcc.end(), C(0));
      std::fill(dvAcc.begin(), dvAcc.end(), C(0));
      for (int64_t h = kvh * g.group(); h < (kvh + 1) * g.group(); ++h) {
        int64_t bh = b * g.qHeads + h;
        // Causal: query rows before j0 see none of these keys.
        for (int64_t i0 = g.causal ? j0 / kBlock * kBlock : 0; i0 < g.qLen; i0 += kBlock) {
          int64_t rows = std::min(kBlock, g.qLen - i0);
          loadQueryBlock(bh, i0, rows, qb.data(), dob.data());
          scoreGradient<T>(g, mask, b, h, i0, rows, j0, cols, qb.data(), kb.data(), vb.data(),
                           dob.data(), lse + bh * g.qLen + i0, s.data(), dp.data());
          // dV += Pᵀ dO, then dS = P (dP - delta) in place of P.
          gemm(true, false, cols, g.vSize, rows, s.data(), cols, dob.data(), g.vSize,
               dvAcc.data(), g.vSize, C(1));
          const C *rowDelta = delta.data() + bh * g.qLen + i0;
          for (int64_t r = 0; r < rows; ++r)
            scoreGradRow(s.data() + r * cols, dp.data() + r * cols, rowDelta[r], cols);
          gemm(true, false, cols, g.size, rows, s.data(), cols, qb.data(), g.size,
               dkAcc.data(), g.size, C(1));
        }
      }
      T *dkOut = dk + (bkv * g.kvLen + j0) * g.size;
      T *dvOut = dv + (bkv * g.kvLen + j0) * g.vSize;
      for (int64_t i = 0; i < cols * g.size; ++i)
        dkOut[i] = T(dkAcc[i] * (C)g.scale);
      for (int64_t i = 0; i < cols * g.vSize; ++i)
        dvOut[i] = T(dvAcc[i]);
    }
  });
  // Query gradients, a block of query rows of one head per task.
  parallelFor(g.batch * g.qHeads * qBlocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qb(kBlock * g.size), kb(kBlock * g.size), vb(kBlock * g.vSize),
        dob(kBlock * g.vSize), s(kBlock * kBlock), dp(kBlock * kBlock),
        dqAcc(kBlock * g.size);
    for (int64_t task = begin; task < end; ++task) {
      int64_t bh = task / qBlocks, i0 = (task % qBlocks) * kBlock;
      int64_t b = bh / g.qHeads, h = bh % g.qHeads, kvh = h / g.group();
      int64_t rows = std::min(kBlock, g.qLen - i0);
      loadQueryBlock(bh, i0, rows, qb.data(), dob.data());
      std::fill(dqAcc.begin(), dqAcc.end(), C(0));
      const T *kh = k + (b * g.kvHeads + kvh) * g.kvLen * g.size;
      const T *vh = v + (b * g.kvHeads + kvh) * g.kvLen * g.vSize;
      const C *rowDelta = delta.data() + bh * g.qLen + i0;
      for (int64_t j0 = 0, jEnd = keyEnd(g, i0, rows); j0 < jEnd; j0 += kBlock) {
        int64_t cols = std::min(kBlock, g.kvLen - j0);
        load(kh + j0 * g.size, g.size, cols, g.size, kb.data());
        load(vh + j0 * g.vSize, g.vSize, cols, g.vSize, vb.data());
        scoreGradient<T>(g, mask, b, h, i0, rows, j0, cols, qb.data(), kb.data(), vb.data(),
                         dob.data(), lse + bh * g.qLen + i0, s.data(), dp.data());
        for (int64_t r = 0; r < rows; ++r)
          scoreGradRow(s.data() + r * cols, dp.data() + r * cols, rowDelta[r], cols);
        gemm(false, false, rows, g.size, cols, s.data(), cols, kb.data(), g.size,
             dqAcc.data(), g.size, C(1));
      }
      T *dqOut = dq + (bh * g.qLen + i0) * g.size;
      for (int64_t i = 0; i < rows * g.size; ++i)
        dqOut[i] = T(dqAcc[i] * (C)g.scale);
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
