//===- Normalization.cpp - Softmax, layer norm, cross-entropy -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Accumulations run in double: these kernels feed losses that are compared with
// PyTorch to 1e-5.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/NormalizationMath.h"

#include <cmath>
#include <limits>

using namespace zrt;
using namespace zrt::cpu;

namespace {

/// y[d] = e^(x[d] - mx) in the tensor's type, as PyTorch computes it. A loop of
/// its own: with the sum of y in the same loop it ran a fifth slower.
template <typename T>
ZRT_VECTORIZED void shiftedExpRun(const T *x, T mx, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = kernels::shiftedExp(x[i], mx);
}
template <typename T> ZRT_VECTORIZED void scaleRun(T *y, T scale, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = y[i] * scale;
}
template <typename T> ZRT_VECTORIZED void shiftRun(const T *x, T shift, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] - shift;
}

/// y = x scale (+ bias: `step` 1 a row of it, 0 one value for the row).
template <typename T>
ZRT_VECTORIZED void softmaxInputRun(const T *x, T scale, const T *bias, int64_t step, T *y,
                                    int64_t n) {
  if (!bias)
    for (int64_t i = 0; i < n; ++i)
      y[i] = kernels::softmaxInput(x[i], scale, (const T *)nullptr);
  else if (step == 0)
    for (int64_t i = 0; i < n; ++i)
      y[i] = kernels::softmaxInput(x[i], scale, bias);
  else
    for (int64_t i = 0; i < n; ++i)
      y[i] = kernels::softmaxInput(x[i], scale, bias + i);
}

/// Log-softmax (or softmax) along the middle extent of [outer, dim, inner]: one
/// exp per element, in the tensor's type as PyTorch does; sums in double. Rows
/// (inner == 1) run vectorized, over the kernel threads. With a prologue (rows
/// only), a row's input is computed into its output first. A 16-bit input TIn
/// with a wider T (the loss's f32 log-probabilities of 16-bit scores) is widened
/// first: the same arithmetic as on an f32 copy of it.
template <typename T, typename TIn = T>
void softmaxRows(const TIn *x, T *y, int64_t outer, int64_t dim, int64_t inner, bool log,
                 const SoftmaxPrologue *prologue = nullptr, const T *bias = nullptr) {
  constexpr bool widened = !std::is_same_v<T, TIn>;
  if (inner == 1) {
    parallelFor(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, dim)),
                [&](int64_t lo, int64_t hi) {
                  std::vector<T> wide(widened ? dim : 0);
                  for (int64_t o = lo; o < hi && dim > 0; ++o) {
                    const T *px;
                    if constexpr (widened) {
                      for (int64_t d = 0; d < dim; ++d)
                        wide[d] = T(x[o * dim + d]);
                      px = wide.data();
                    } else {
                      px = x + o * dim;
                    }
                    T *py = y + o * dim;
                    if (prologue) {
                      softmaxInputRun(px, T(prologue->scale),
                                      bias ? bias + prologue->rowOffsets[o] : nullptr,
                                      prologue->step, py, dim);
                      px = py; // softmax only: log-softmax reads its input again
                    }
                    T mx = maxRun(px, dim);
                    shiftedExpRun(px, mx, py, dim);
                    double sum = sumRun(py, dim);
                    if (log)
                      shiftRun(px, kernels::logSoftmaxShift(mx, sum), py, dim);
                    else
                      scaleRun(py, T(1.0 / sum), dim);
                  }
                });
    return;
  }
  std::vector<T> e(dim), wide(widened ? dim * inner : 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T *px;
      if constexpr (widened) {
        if (i == 0)
          for (int64_t k = 0; k < dim * inner; ++k)
            wide[k] = T(x[o * dim * inner + k]);
        px = wide.data() + i;
      } else {
        px = x + o * dim * inner + i;
      }
      T *py = y + o * dim * inner + i;
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t d = 0; d < dim; ++d)
        mx = std::max(mx, px[d * inner]);
      double sum = 0;
      for (int64_t d = 0; d < dim; ++d) {
        e[d] = kernels::shiftedExp(px[d * inner], mx);
        sum += e[d];
      }
      if (log) {
        T lse = kernels::logSoftmaxShift(mx, sum);
        for (int64_t d = 0; d < dim; ++d)
          py[d * inner] = px[d * inner] - lse;
      } else {
        T scale = (T)(1.0 / sum);
        for (int64_t d = 0; d < dim; ++d)
          py[d * inner] = e[d] * scale;
      }
    }
}

/// A softmax kernel's `axis` attribute, checked against `shape`, as [outer, dim,
/// inner].
struct AxisSplit {
  int64_t outer, dim, inner;
};
AxisSplit softmaxAxis(const KernelCall &call, const Shape &shape) {
  int64_t axis = call.intAttr("axis");
  ZRT_CHECK(axis >= 0 && axis < std::max<int64_t>(1, shape.size()),
            call.where() << ": axis " << axis << " out of range");
  AxisSplit s;
  splitAxis(shape, axis, s.outer, s.dim, s.inner);
  return s;
}

template <bool Log> BoundKernel bindSoftmax(const KernelCall &call) {
  SoftmaxPrologue prologue = softmaxPrologue(call, /*allowed=*/!Log);
  const TensorView x = call.ins[0], out = call.outs[0];
  const TensorView bias = prologue.hasBias ? call.ins[1] : TensorView{};
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  expectShape(call, out, x.shape, "result");
  AxisSplit a = softmaxAxis(call, x.shape);
  return dispatchFloat(x.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      softmaxRows(x.as<T>(), out.as<T>(), a.outer, a.dim, a.inner, Log,
                  prologue.any() ? &prologue : nullptr,
                  prologue.hasBias ? bias.as<T>() : nullptr);
    };
  });
}

/// sum a[i] b[i] in double.
template <typename T> ZRT_VECTORIZED double dotRun(const T *a, const T *b, int64_t n) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += (double)a[i + l] * (double)b[i + l];
  double s = 0;
  for (int l = 0; l < kLanes; ++l)
    s += lane[l];
  for (; i < n; ++i)
    s += (double)a[i] * (double)b[i];
  return s;
}
template <typename T>
ZRT_VECTORIZED void softmaxGradRun(const T *y, const T *g, double dot, T scale, T *dx,
                                   int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dx[i] = kernels::scaledSoftmaxInputGrad(y[i], g[i], dot, scale);
}

/// Softmax's gradient along the middle extent of [outer, dim, inner], from its
/// output y and the output's gradient g: y (g - sum(g y)) scale, the sum in double.
/// Rows (inner == 1) run vectorized, over the kernel threads.
template <typename T>
void softmaxGradRows(const T *y, const T *g, T scale, T *dx, int64_t outer, int64_t dim,
                     int64_t inner) {
  if (inner == 1) {
    parallelFor(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, dim)),
                [&](int64_t lo, int64_t hi) {
                  for (int64_t o = lo; o < hi; ++o)
                    softmaxGradRun(y + o * dim, g + o * dim,
                                   dotRun(y + o * dim, g + o * dim, dim), scale,
                                   dx + o * dim, dim);
                });
    return;
  }
  parallelFor(outer * inner, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, dim)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t r = lo; r < hi; ++r) {
                  int64_t at = (r / inner) * dim * inner + r % inner;
                  double dot = 0;
                  for (int64_t d = 0; d < dim; ++d)
                    dot += (double)y[at + d * inner] * (double)g[at + d * inner];
                  for (int64_t d = 0; d < dim; ++d)
                    dx[at + d * inner] = kernels::scaledSoftmaxInputGrad(
                        y[at + d * inner], g[at + d * inner], dot, scale);
                }
              });
}

BoundKernel bindSoftmaxGrad(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView y = call.ins[0], g = call.ins[1], out = call.outs[0];
  ZRT_CHECK(g.dtype == y.dtype && out.dtype == y.dtype, call.where() << ": dtypes differ");
  expectShape(call, g, y.shape, "grad");
  expectShape(call, out, y.shape, "result");
  AxisSplit a = softmaxAxis(call, y.shape);
  double scale = softmaxScale(call);
  return dispatchFloat(y.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      softmaxGradRows(y.as<T>(), g.as<T>(), T(scale), out.as<T>(), a.outer, a.dim, a.inner);
    };
  });
}

/// sum (x[i] - mu)^2 in double.
template <typename T>
ZRT_VECTORIZED double squaredDeviationRun(const T *x, double mu, int64_t n) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      double d = (double)x[i + l] - mu;
      lane[l] += d * d;
    }
  double s = 0;
  for (int l = 0; l < kLanes; ++l)
    s += lane[l];
  for (; i < n; ++i)
    s += ((double)x[i] - mu) * ((double)x[i] - mu);
  return s;
}

/// y = (x - mu) r scale + bias, in T's compute type.
template <typename T, typename C = kernels::ComputeType<T>>
ZRT_VECTORIZED void normalizeRun(const T *x, C mu, C r, const T *scale, const T *bias, T *y,
                                 int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = kernels::normalized(x[i], mu, r, scale[i], bias[i]);
}

} // namespace

std::vector<int64_t> zrt::cpu::normOffsets(const Shape &of, const Shape &norm) {
  std::vector<int64_t> offsets;
  bool identity = true;
  forEachBroadcast<1>(norm, std::array<Shape, 1>{broadcastStrides(of, norm)},
                      [&](int64_t i, auto off) {
                        offsets.push_back(off[0]);
                        identity = identity && off[0] == i;
                      });
  if (identity)
    offsets.clear();
  return offsets;
}

namespace {

BoundKernel bindLayerNorm(const KernelCall &call) {
  call.expectArity(3, 3);
  const TensorView x = call.ins[0], scale = call.ins[1], bias = call.ins[2];
  const TensorView y = call.outs[0], mean = call.outs[1], rstd = call.outs[2];
  int64_t axis = call.intAttr("axis");
  double eps = call.floatAttr("epsilon");
  int64_t rank = x.shape.size();
  ZRT_CHECK(axis >= 0 && axis < rank, call.where() << ": axis out of range");
  for (const TensorView *t : {&scale, &bias, &y})
    ZRT_CHECK(t->dtype == x.dtype, call.where() << ": dtypes differ");
  ZRT_CHECK(mean.dtype == rstd.dtype, call.where() << ": the mean and inv_std_dev differ in dtype");
  bool wideStats =
      isWidened(call, x.dtype, mean.dtype, "the mean and inv_std_dev must be the input's dtype");
  expectShape(call, y, x.shape, "result");
  Shape stat = x.shape;
  for (int64_t i = axis; i < rank; ++i)
    stat[i] = 1;
  expectShape(call, mean, stat, "mean");
  expectShape(call, rstd, stat, "inv_std_dev");
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = extentProduct(x.shape, 0, axis), inner = extentProduct(norm, 0, norm.size());
  ZRT_CHECK(scale.shape.size() <= norm.size() && bias.shape.size() <= norm.size(),
            call.where() << ": scale or bias has a higher rank than the normalized "
                            "dimensions");
  Shape bshape = broadcastShapes({norm, scale.shape, bias.shape}, call);
  ZRT_CHECK(bshape == norm, call.where() << ": scale or bias does not broadcast to "
                                         << shapeString(norm));
  // Scale and bias broadcast to the normalized shape: their offsets, once.
  std::vector<int64_t> sOff = normOffsets(scale.shape, norm),
                       bOff = normOffsets(bias.shape, norm);
  return dispatchWidened(x.dtype, wideStats, call, [=](auto tag, auto statTag) -> BoundKernel {
    using T = decltype(tag);
    using S = decltype(statTag);
    return [=] {
      const T *px = x.as<T>();
      T *py = y.as<T>();
      S *pm = mean.as<S>(), *pr = rstd.as<S>();
      std::vector<T> sc, bc;
      const T *ps = normParameter(scale.as<T>(), sOff, sc);
      const T *pb = normParameter(bias.as<T>(), bOff, bc);
      parallelFor(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, inner)),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t o = lo; o < hi; ++o) {
                      const T *row = px + o * inner;
                      double mu = sumRun(row, inner) / inner;
                      double var = squaredDeviationRun(row, mu, inner) / inner;
                      double r = kernels::inverseStdDev(var, eps);
                      pm[o] = (S)mu;
                      pr[o] = (S)r;
                      using C = kernels::ComputeType<T>;
                      normalizeRun(row, C(mu), C(r), ps, pb, py + o * inner, inner);
                    }
                  });
    };
  });
}

/// Softmax cross-entropy: scores [N, C, d...], labels [N, d...].
BoundKernel bindSoftmaxCrossEntropy(const KernelCall &call) {
  ZRT_CHECK((call.ins.size() == 2 || call.ins.size() == 3) && call.outs.size() == 2,
            call.where() << ": takes 2 or 3 inputs and 2 outputs");
  const TensorView scores = call.ins[0], labels = call.ins[1];
  const TensorView loss = call.outs[0], logp = call.outs[1];
  bool hasWeights = call.ins.size() == 3;
  TensorView weights = hasWeights ? call.ins[2] : TensorView{};
  CrossEntropyGeometry geo =
      crossEntropyGeometry(call, scores, "scores", labels, hasWeights ? &weights : nullptr);
  expectShape(call, logp, scores.shape, "log_prob");
  expectShape(call, loss, geo.lossShape(), "loss");
  bool wide = isWidened(call, scores.dtype, logp.dtype, "the log_prob must be the scores' dtype");
  ZRT_CHECK(loss.dtype == logp.dtype && (!hasWeights || weights.dtype == logp.dtype),
            call.where() << ": loss and weights must have the log_prob's dtype");
  int64_t n = geo.n, c = geo.c, inner = geo.inner, ignore = geo.ignore;
  bool hasIgnore = geo.hasIgnore, labels64 = geo.labels64;
  Reduction reduction = geo.reduction;
  std::string where = call.where();
  return dispatchWidened(scores.dtype, wide, call, [=](auto inTag, auto tag) -> BoundKernel {
    using T = decltype(tag);
    using TIn = decltype(inTag);
    return [=] {
      const TIn *s = scores.as<TIn>();
      T *lp = logp.as<T>(), *out = loss.as<T>();
      softmaxRows<T, TIn>(s, lp, n, c, inner, /*log=*/true);
      double total = 0, weightSum = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t pos = i * inner + j;
          int64_t label = labels64 ? labels.as<int64_t>()[pos]
                                   : labels.as<int32_t>()[pos];
          double l = 0, w = 0;
          if (!(hasIgnore && label == ignore)) {
            ZRT_CHECK(label >= 0 && label < c, where << ": label " << label
                                                     << " out of range [0, " << c
                                                     << ")");
            w = hasWeights ? (double)weights.as<T>()[label] : 1.0;
            l = -w * (double)lp[(i * c + label) * inner + j];
          }
          if (reduction == Reduction::None)
            out[pos] = (T)l;
          total += l;
          weightSum += w;
        }
      if (reduction == Reduction::Sum)
        out[0] = (T)total;
      else if (reduction == Reduction::Mean)
        out[0] = (T)(total / weightSum);
    };
  });
}

/// The fused classifier: softmax_cross_entropy and its gradient of the scores at
/// once, the gradient written over the scores when the plan gives it their
/// buffer. Each position's row is copied (widened) out first, then computed as
/// the two kernels do: the same log-probabilities (softmaxRows' arithmetic) and
/// the same per-score gradient, so the numbers are theirs.
BoundKernel bindSoftmaxCrossEntropyWithGrad(const KernelCall &call) {
  ZRT_CHECK((call.ins.size() == 3 || call.ins.size() == 4) && call.outs.size() == 2,
            call.where() << ": takes 3 or 4 inputs and 2 outputs");
  const TensorView scores = call.ins[0], labels = call.ins[1], g = call.ins[2];
  const TensorView loss = call.outs[0], ds = call.outs[1];
  bool hasWeights = call.ins.size() == 4;
  TensorView weights = hasWeights ? call.ins[3] : TensorView{};
  CrossEntropyGeometry geo =
      crossEntropyGeometry(call, scores, "scores", labels, hasWeights ? &weights : nullptr);
  expectShape(call, ds, scores.shape, "scores_grad");
  expectShape(call, loss, geo.lossShape(), "loss");
  expectShape(call, g, geo.lossShape(), "grad");
  ZRT_CHECK(ds.dtype == scores.dtype, call.where() << ": scores_grad must have the scores' dtype");
  bool wide = isWidened(call, scores.dtype, loss.dtype, "the loss must be the scores' dtype");
  ZRT_CHECK(g.dtype == loss.dtype && (!hasWeights || weights.dtype == loss.dtype),
            call.where() << ": grad and weights must have the loss's dtype");
  // Written over the scores, or beside them: never partly over them.
  const char *sBegin = (const char *)scores.data, *dBegin = (const char *)ds.data;
  ZRT_CHECK(dBegin == sBegin || dBegin + ds.bytes() <= sBegin ||
                sBegin + scores.bytes() <= dBegin,
            call.where() << ": scores_grad partly overlaps the scores");
  std::string where = call.where();
  return dispatchWidened(scores.dtype, wide, call, [=](auto inTag, auto tag) -> BoundKernel {
    using T = decltype(tag);
    using TIn = decltype(inTag);
    using C = kernels::ComputeType<T>;
    return [=] {
      const TIn *s = scores.as<TIn>();
      TIn *o = ds.as<TIn>();
      const T *pg = g.as<T>();
      T *out = loss.as<T>();
      int64_t c = geo.c, inner = geo.inner, positions = geo.n * inner;
      auto weightOf = [&](int64_t label) {
        return hasWeights ? (double)weights.as<T>()[label] : 1.0;
      };
      // Labels first: the mean's denominator scales every gradient.
      double weightSum = 0;
      for (int64_t pos = 0; pos < positions; ++pos) {
        int64_t label = geo.labelAt(labels, pos);
        if (geo.ignored(label))
          continue;
        ZRT_CHECK(label >= 0 && label < c,
                  where << ": label " << label << " out of range [0, " << c << ")");
        weightSum += weightOf(label);
      }
      std::vector<double> rowLoss(positions);
      parallelFor(positions, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, c)),
                  [&](int64_t lo, int64_t hi) {
                    std::vector<T> x(c), e(c);
                    for (int64_t pos = lo; pos < hi; ++pos) {
                      int64_t i = pos / inner, j = pos % inner, first = i * c * inner + j;
                      for (int64_t k = 0; k < c; ++k)
                        x[k] = T(s[first + k * inner]);
                      // softmaxRows: vectorized rows, scalar loops along a strided axis.
                      T mx;
                      double sum = 0;
                      if (inner == 1) {
                        mx = maxRun(x.data(), c);
                        shiftedExpRun(x.data(), mx, e.data(), c);
                        sum = sumRun(e.data(), c);
                      } else {
                        mx = -std::numeric_limits<T>::infinity();
                        for (int64_t k = 0; k < c; ++k)
                          mx = std::max(mx, x[k]);
                        for (int64_t k = 0; k < c; ++k)
                          sum += kernels::shiftedExp(x[k], mx);
                      }
                      shiftRun(x.data(), kernels::logSoftmaxShift(mx, sum), x.data(), c);
                      int64_t label = geo.labelAt(labels, pos);
                      bool ignored = geo.ignored(label);
                      double w = ignored ? 0 : weightOf(label);
                      rowLoss[pos] = ignored ? 0 : -w * (double)x[label];
                      double gl =
                          geo.reduction == Reduction::None ? (double)pg[pos] : (double)pg[0];
                      C coef = C(w * gl / (geo.reduction == Reduction::Mean ? weightSum : 1.0));
                      for (int64_t k = 0; k < c; ++k)
                        o[first + k * inner] =
                            ignored ? TIn(C(0))
                                    : TIn(kernels::crossEntropyGrad(coef, C(x[k]), k == label));
                    }
                  });
      // In position order, as softmax_cross_entropy sums them.
      double total = 0;
      for (int64_t pos = 0; pos < positions; ++pos) {
        if (geo.reduction == Reduction::None)
          out[pos] = (T)rowLoss[pos];
        total += rowLoss[pos];
      }
      if (geo.reduction == Reduction::Sum)
        out[0] = (T)total;
      else if (geo.reduction == Reduction::Mean)
        out[0] = (T)(total / weightSum);
    };
  });
}

} // namespace

void zrt::addNormalizationKernels(KernelTable &t) {
  t[Kernel::SOFTMAX] = bindSoftmax<false>;
  t[Kernel::LOG_SOFTMAX] = bindSoftmax<true>;
  t[Kernel::SOFTMAX_GRAD] = bindSoftmaxGrad;
  t[Kernel::LAYER_NORM] = bindLayerNorm;
  t[Kernel::SOFTMAX_CROSS_ENTROPY] = bindSoftmaxCrossEntropy;
  t[Kernel::SOFTMAX_CROSS_ENTROPY_WITH_GRAD] = bindSoftmaxCrossEntropyWithGrad;
}
