//===- Training.cpp - Backward and optimizer CPU kernels ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The optimizer kernels follow torch.optim's float arithmetic step by step (scalar
// coefficients rounded to the parameter's type first), so that parity with PyTorch
// holds to float rounding. They read each element before writing it, so the plan
// may update parameters and state in place.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/ElementwiseMath.h"
#include "../kernels/NormalizationMath.h"
#include "../kernels/OptimizerMath.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <cmath>
#include <cstring>
#include <type_traits>

using namespace zrt;
using namespace zrt::cpu;

namespace {

template <kernels::ActivationGrad K, typename T>
ZRT_VECTORIZED void activationGradRun(const T *x, const T *g, T *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    o[i] = kernels::activationGrad<K>(x[i], g[i]);
}

/// relu_grad and gelu_grad: the forward input and the output's gradient, alike.
template <kernels::ActivationGrad K> BoundKernel bindActivationGrad(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView x = call.ins[0], g = call.ins[1], out = call.outs[0];
  ZRT_CHECK(x.dtype == g.dtype && x.dtype == out.dtype && x.shape == g.shape,
            call.where() << ": input, grad and result must match");
  expectShape(call, out, x.shape, "result");
  return dispatchFloat(x.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const T *px = x.as<T>(), *pg = g.as<T>();
      T *o = out.as<T>();
      parallelFor(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
        activationGradRun<K>(px + lo, pg + lo, o + lo, hi - lo);
      });
    };
  });
}

/// One row of layer norm's input gradient, in T's compute type C. The row sums
/// run in one register's worth of C lanes (an explicit vector: written as an array
/// of lanes, GCC vectorized the loop around them as well and shuffled every
/// element into place, 7 times slower), combined in double.
template <typename T>
ZRT_VECTORIZED void layerNormGradRow(const T *x, const T *g, const T *scale,
                                     kernels::ComputeType<T> mu, kernels::ComputeType<T> r,
                                     const T *acc, T *dx, int64_t n) {
  using C = kernels::ComputeType<T>;
  constexpr int kWidth = 32 / sizeof(C);
  typedef C Lanes __attribute__((vector_size(32)));
  Lanes sumG = {}, sumGX = {};
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    Lanes xv, gv, sv;
    for (int l = 0; l < kWidth; ++l) {
      xv[l] = C(x[i + l]);
      gv[l] = C(g[i + l]);
      sv[l] = C(scale[i + l]);
    }
    Lanes xhat = (xv - mu) * r, gx = gv * sv;
    sumG += gx;
    sumGX += gx * xhat;
  }
  double sg = 0, sgx = 0;
  for (int l = 0; l < kWidth; ++l) {
    sg += (double)sumG[l];
    sgx += (double)sumGX[l];
  }
  for (; i < n; ++i) {
    C xhat = kernels::layerNormXhat(C(x[i]), mu, r), gx = C(g[i]) * C(scale[i]);
    sg += (double)gx;
    sgx += (double)(gx * xhat);
  }
  C meanG = C(sg / n), meanGX = C(sgx / n);
  for (int64_t j = 0; j < n; ++j) {
    C xhat = kernels::layerNormXhat(C(x[j]), mu, r), gx = C(g[j]) * C(scale[j]);
    dx[j] = kernels::layerNormStored(kernels::layerNormInputGrad(r, xhat, gx, meanG, meanGX),
                                     acc ? acc + j : nullptr);
  }
}

template <typename T>
ZRT_VECTORIZED void layerNormParamGradRun(const T *x, const T *g, kernels::ComputeType<T> mu,
                                          kernels::ComputeType<T> r, double *ds, double *db,
                                          int64_t n) {
  using C = kernels::ComputeType<T>;
  for (int64_t i = 0; i < n; ++i) {
    ds[i] += (double)(C(g[i]) * kernels::layerNormXhat(C(x[i]), mu, r));
    db[i] += (double)g[i];
  }
}

BoundKernel bindLayerNormGrad(const KernelCall &call) {
  ZRT_CHECK((call.ins.size() == 5 || call.ins.size() == 6) && call.outs.size() == 3,
            call.where() << ": takes 5 or 6 inputs (the last: a tensor to accumulate) and "
                         << "3 outputs");
  const TensorView x = call.ins[0], scale = call.ins[1], mean = call.ins[2],
                   rstd = call.ins[3], gy = call.ins[4];
  bool accumulates = call.ins.size() == 6;
  const TensorView acc = accumulates ? call.ins[5] : TensorView{};
  const TensorView dx = call.outs[0], dscale = call.outs[1], dbias = call.outs[2];
  int64_t axis = call.intAttr("axis");
  int64_t rank = x.shape.size();
  ZRT_CHECK(axis >= 0 && axis < rank, call.where() << ": axis out of range");
  for (const TensorView *t : {&scale, &gy, &dx, &dscale, &dbias})
    ZRT_CHECK(t->dtype == x.dtype, call.where() << ": dtypes differ");
  ZRT_CHECK(mean.dtype == rstd.dtype, call.where() << ": the mean and inv_std_dev differ in dtype");
  bool wideStats =
      isWidened(call, x.dtype, mean.dtype, "the mean and inv_std_dev must be the input's dtype");
  expectShape(call, gy, x.shape, "grad");
  expectShape(call, dx, x.shape, "input_grad");
  if (accumulates) {
    ZRT_CHECK(acc.dtype == x.dtype, call.where() << ": dtypes differ");
    expectShape(call, acc, x.shape, "accumulate");
  }
  Shape stat = x.shape, norm(x.shape.begin() + axis, x.shape.end());
  for (int64_t i = axis; i < rank; ++i)
    stat[i] = 1;
  expectShape(call, mean, stat, "mean");
  expectShape(call, rstd, stat, "inv_std_dev");
  expectShape(call, dscale, norm, "scale_grad");
  expectShape(call, dbias, norm, "bias_grad");
  ZRT_CHECK(scale.shape.size() <= norm.size() &&
                broadcastShapes({norm, scale.shape}, call) == norm,
            call.where() << ": scale does not broadcast to " << shapeString(norm));
  int64_t outer = extentProduct(x.shape, 0, axis), inner = extentProduct(norm, 0, norm.size());
  std::vector<int64_t> sOff = normOffsets(scale.shape, norm);
  return dispatchWidened(x.dtype, wideStats, call, [=](auto tag, auto statTag) -> BoundKernel {
    using T = decltype(tag);
    using S = decltype(statTag);
    using C = kernels::ComputeType<T>;
    return [=] {
      const T *px = x.as<T>(), *pg = gy.as<T>();
      const S *pm = mean.as<S>(), *pr = rstd.as<S>();
      T *pdx = dx.as<T>(), *pds = dscale.as<T>(), *pdb = dbias.as<T>();
      const T *pacc = accumulates ? acc.as<T>() : nullptr;
      std::vector<T> sc;
      const T *ps = normParameter(scale.as<T>(), sOff, sc);
      // With xhat = (x - mu) r and gx = gy * scale:
      //   dx = r * (gx - mean(gx) - xhat * mean(gx * xhat)) (+ accumulate), row by row;
      parallelFor(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, inner)),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t o = lo; o < hi; ++o)
                      layerNormGradRow(px + o * inner, pg + o * inner, ps, C(pm[o]), C(pr[o]),
                                       pacc ? pacc + o * inner : nullptr, pdx + o * inner,
                                       inner);
                  });
      // dscale = sum over rows of gy * xhat, dbias = sum of gy: column by column.
      parallelFor(inner, std::max<int64_t>(64, kParallelGrain / std::max<int64_t>(1, outer)),
                  [&](int64_t lo, int64_t hi) {
                    std::vector<double> ds(hi - lo, 0.0), db(hi - lo, 0.0);
                    for (int64_t o = 0; o < outer; ++o)
                      layerNormParamGradRun(px + o * inner + lo, pg + o * inner + lo, C(pm[o]),
                                            C(pr[o]), ds.data(), db.data(), hi - lo);
                    for (int64_t i = lo; i < hi; ++i) {
                      pds[i] = (T)ds[i - lo];
                      pdb[i] = (T)db[i - lo];
                    }
                  });
    };
  });
}

/// One position's c scores' gradients, `stride` apart (label -1: an ignored
/// position, all 0).
template <typename T, typename TOut, typename C = kernels::ComputeType<T>>
ZRT_VECTORIZED void crossEntropyGradRun(const T *lp, C coef, int64_t label, TOut *o,
                                        int64_t c, int64_t stride) {
  for (int64_t k = 0; k < c; ++k)
    o[k * stride] = label < 0 ? TOut(C(0))
                              : TOut(kernels::crossEntropyGrad(coef, C(lp[k * stride]),
                                                               k == label));
}

BoundKernel bindSoftmaxCrossEntropyGrad(const KernelCall &call) {
  ZRT_CHECK((call.ins.size() == 3 || call.ins.size() == 4) && call.outs.size() == 1,
            call.where() << ": takes 3 or 4 inputs and 1 output");
  const TensorView logp = call.ins[0], labels = call.ins[1], g = call.ins[2];
  const TensorView out = call.outs[0];
  bool hasWeights = call.ins.size() == 4;
  TensorView weights = hasWeights ? call.ins[3] : TensorView{};
  CrossEntropyGeometry geo =
      crossEntropyGeometry(call, logp, "log_prob", labels, hasWeights ? &weights : nullptr);
  expectShape(call, out, logp.shape, "result");
  expectShape(call, g, geo.lossShape(), "grad");
  bool wide = isWidened(call, out.dtype, logp.dtype, "the log_prob must be the result's dtype");
  ZRT_CHECK(g.dtype == logp.dtype && (!hasWeights || weights.dtype == logp.dtype),
            call.where() << ": dtypes differ");
  int64_t n = geo.n, c = geo.c, inner = geo.inner, ignore = geo.ignore;
  bool hasIgnore = geo.hasIgnore;
  Reduction reduction = geo.reduction;
  std::string where = call.where();
  return dispatchWidened(out.dtype, wide, call, [=](auto outTag, auto tag) -> BoundKernel {
    using T = decltype(tag);
    using TOut = decltype(outTag);
    using C = kernels::ComputeType<T>;
    return [=] {
      const T *lp = logp.as<T>(), *pg = g.as<T>();
      TOut *o = out.as<TOut>();
      auto labelAt = [&](int64_t pos) { return geo.labelAt(labels, pos); };
      auto weightOf = [&](int64_t label) {
        return hasWeights ? (double)weights.as<T>()[label] : 1.0;
      };
      // The mean divides by the summed weight of the counted positions.
      double denom = 0;
      for (int64_t pos = 0; pos < n * inner; ++pos) {
        int64_t label = labelAt(pos);
        if (!(hasIgnore && label == ignore)) {
          ZRT_CHECK(label >= 0 && label < c,
                    where << ": label " << label << " out of range [0, " << c << ")");
          denom += weightOf(label);
        }
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t pos = i * inner + j;
          int64_t label = labelAt(pos);
          bool ignored = hasIgnore && label == ignore;
          double coef = 0;
          if (!ignored) {
            double gl = reduction == Reduction::None ? (double)pg[pos] : (double)pg[0];
            coef = weightOf(label) * gl / (reduction == Reduction::Mean ? denom : 1.0);
          }
          int64_t first = i * c * inner + j;
          crossEntropyGradRun(lp + first, C(coef), ignored ? -1 : label, o + first, c, inner);
        }
    };
  });
}

BoundKernel bindGatherGrad(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView idx = call.ins[0], g = call.ins[1], out = call.outs[0];
  int64_t axis = call.intAttr("axis");
  expectShape(call, g, gatheredShape(call, out.shape, axis, idx), "grad");
  ZRT_CHECK(g.dtype == out.dtype, call.where() << ": dtypes differ");
  int64_t outer, dim, inner;
  splitAxis(out.shape, axis, outer, dim, inner);
  bool idx64 = idx.dtype == zero::zplan::I64;
  std::string where = call.where();
  return dispatchFloat(out.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    // Each row's positions summed in ascending order in ComputeType (f32 for
    // 16-bit), rounded once: what the GPU's kernel computes (CudaKernels.cu).
    return [=] {
      T *o = out.as<T>();
      const T *pg = g.as<T>();
      int64_t n = idx.numel();
      // Counting sort of the positions by row, stable: order[start[k] ..] are row k's.
      std::vector<int64_t> rows(n), start(dim + 1, 0), order(n);
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = idx64 ? idx.as<int64_t>()[j] : idx.as<int32_t>()[j];
        rows[j] = at < 0 ? at + dim : at;
        ZRT_CHECK(rows[j] >= 0 && rows[j] < dim, where << ": index " << at << " out of range");
        ++start[rows[j] + 1];
      }
      for (int64_t k = 0; k < dim; ++k)
        start[k + 1] += start[k];
      std::vector<int64_t> next(start.begin(), start.end() - 1);
      for (int64_t j = 0; j < n; ++j)
        order[next[rows[j]]++] = j;
      std::vector<ComputeType<T>> sum(inner);
      for (int64_t i = 0; i < outer; ++i)
        for (int64_t k = 0; k < dim; ++k) {
          std::fill(sum.begin(), sum.end(), ComputeType<T>(0));
          for (int64_t p = start[k]; p < start[k + 1]; ++p) {
            const T *src = pg + (i * n + order[p]) * inner;
            for (int64_t e = 0; e < inner; ++e)
              sum[e] = sum[e] + (ComputeType<T>)src[e];
          }
          T *dst = o + (i * dim + k) * inner;
          for (int64_t e = 0; e < inner; ++e)
            dst[e] = (T)sum[e];
        }
    };
  });
}

BoundKernel bindSliceGrad(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView g = call.ins[0], out = call.outs[0];
  ZRT_CHECK(g.dtype == out.dtype, call.where() << ": dtypes differ");
  SliceWindow w = sliceWindow(call, out.shape, g.shape, "grad", "result", "writes");
  // The window is walked as the step runs: a table of its offsets, made here,
  // would be memory outside the plan (8 bytes per element of every slice_grad).
  return dispatchBySize(dtypeSize(g.dtype), [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      std::memset(out.data, 0, out.bytes());
      const T *src = g.as<T>();
      T *dst = out.as<T>() + w.base;
      forEachBroadcast<1>(g.shape, std::array<Shape, 1>{w.strides},
                          [&](int64_t i, auto off) { dst[off[0]] = src[i]; });
    };
  });
}

/// Checks that every listed view has `p`'s dtype and shape (the gradient is
/// checked by optimizerRuntime: in mixed precision it is 16-bit).
void expectLike(const KernelCall &call, const TensorView &p,
                std::initializer_list<const TensorView *> views) {
  for (const TensorView *v : views) {
    ZRT_CHECK(v->dtype == p.dtype, call.where() << ": dtypes differ");
    expectShape(call, *v, p.shape, "operand");
  }
}

/// An optimizer's optional runtime operands, after its `own` inputs, as the plan's
/// `operand_segments` lists them: `scale` (one f32 the gradient is multiplied by:
/// mixed precision's 1 / (loss scale * ranks), clipping's coefficient), `found`
/// (one f32: when not zero the step is skipped and every output keeps its input)
/// and `lr` (one f64: this step's learning rate, in place of the attribute).
struct OptimizerRuntime {
  TensorView scale, found, lr;
  bool hasScale = false, hasFound = false, hasLr = false;
};
OptimizerRuntime optimizerRuntime(const KernelCall &call, size_t own, const TensorView &p,
                                  const TensorView &g) {
  std::vector<int64_t> seg(own, 1);
  seg.resize(own + 3, 0);
  if (call.hasAttr("operand_segments"))
    seg = call.intsAttr("operand_segments");
  size_t present = 0;
  bool wellFormed = seg.size() == own + 3;
  for (size_t i = 0; wellFormed && i < seg.size(); ++i) {
    wellFormed = seg[i] == 1 || (i >= own && seg[i] == 0);
    present += seg[i];
  }
  ZRT_CHECK(wellFormed && present == call.ins.size(),
            call.where() << ": its operand_segments do not describe its "
                         << call.ins.size() << " inputs");
  ZRT_CHECK(p.dtype == zero::zplan::F32 || p.dtype == zero::zplan::F64,
            call.where() << ": the parameter it updates must be f32 or f64, got "
                         << dtypeName(p.dtype));
  expectShape(call, g, p.shape, "grad");
  OptimizerRuntime r;
  size_t next = own;
  auto take = [&](int64_t flag, TensorView &v, bool &has, DType dt, const char *what) {
    if (!flag)
      return;
    v = call.ins[next++];
    has = true;
    ZRT_CHECK(v.dtype == dt && v.numel() == 1,
              call.where() << ": " << what << " must be one " << dtypeName(dt));
  };
  take(seg[own], r.scale, r.hasScale, zero::zplan::F32, "the gradient scale");
  take(seg[own + 1], r.found, r.hasFound, zero::zplan::F32, "the overflow count");
  take(seg[own + 2], r.lr, r.hasLr, zero::zplan::F64, "the learning rate");
  // A gradient of another dtype (16-bit, for an f32 master copy) comes with its scale.
  ZRT_CHECK(g.dtype == p.dtype || r.hasScale, call.where() << ": dtypes differ");
  return r;
}

/// A skipped step leaves every output as its input was (outputs written in place
/// are untouched; others get a copy).
void keepInputs(const std::vector<std::pair<TensorView, TensorView>> &pairs) {
  for (const auto &[in, out] : pairs)
    if (in.data != out.data)
      std::memcpy(out.data, in.data, in.bytes());
}

/// Calls fn(T{}, G{}) for the master dtype T (f32, f64) and the gradient dtype G.
template <typename Fn>
BoundKernel dispatchOptimizer(const KernelCall &call, const TensorView &p,
                              const TensorView &g, Fn &&fn) {
  auto withGrad = [&](auto pTag) -> BoundKernel {
    return dispatchFloat(g.dtype, call, [&](auto gTag) -> BoundKernel {
      if constexpr (std::is_same_v<decltype(gTag), double> &&
                    !std::is_same_v<decltype(pTag), double>)
        ZRT_FAIL(call.where() << ": an f64 gradient for an f32 parameter");
      else
        return fn(pTag, gTag);
    });
  };
  if (p.dtype == zero::zplan::F64)
    return withGrad(double{});
  return withGrad(float{});
}

/// The optimizers over a range: the gradient times `mult` (1 when unscaled: exact).
/// The step's scalars come by value (through a reference, every store could change
/// them), and ivdep: an output may be its input (an update in place), element i
/// of one only ever meets element i of the other, so no iteration depends on
/// another; too many pointers for the compiler to check that at run time.
/// AdamW also writes the new parameter's 16-bit copy `co` unless C is void.
template <typename T, typename G, typename C>
ZRT_VECTORIZED void adamwRun(const kernels::AdamWStep<T> c, T mult, const G *g, const T *p,
                             const T *m, const T *v, T *po, T *mo, T *vo, C *co,
                             int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T pi = p[i], mi = m[i], vi = v[i];
    kernels::adamwElement(c, T(g[i]) * mult, pi, mi, vi);
    po[i] = pi;
    mo[i] = mi;
    vo[i] = vi;
    if constexpr (!std::is_void_v<C>)
      co[i] = C(pi);
  }
}
template <typename T, typename G>
ZRT_VECTORIZED void sgdRun(const kernels::SgdStep<T> c, T mult, const G *g, const T *p,
                           const T *b, T *po, T *bo, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T pi = p[i], bi = b[i];
    kernels::sgdElement(c, T(g[i]) * mult, pi, bi);
    po[i] = pi;
    bo[i] = bi;
  }
}

/// AdamW on one tensor (its operand_segments [1, 1, 1, 1, scalars...]).
BoundKernel bindAdamWTensor(const KernelCall &call) {
  ZRT_CHECK((call.outs.size() == 3 || call.outs.size() == 4) && call.ins.size() >= 5,
            call.where() << ": takes 5 to 8 inputs and 3 outputs (4 with the new "
                            "parameter's 16-bit copy)");
  const TensorView p = call.ins[0], g = call.ins[1], m = call.ins[2], v = call.ins[3],
                   step = call.ins[4];
  const TensorView po = call.outs[0], mo = call.outs[1], vo = call.outs[2];
  OptimizerRuntime rt = optimizerRuntime(call, 5, p, g);
  expectLike(call, p, {&m, &v, &po, &mo, &vo});
  ZRT_CHECK(step.dtype == zero::zplan::I64 && step.shape.empty(),
            call.where() << ": step must be a scalar i64");
  double lrAttr = call.floatAttr("lr"), b1 = call.floatAttr("beta1"),
         b2 = call.floatAttr("beta2"), eps = call.floatAttr("eps"),
         wd = call.floatAttr("weight_decay");
  std::optional<TensorView> copy;
  if (call.outs.size() == 4) {
    copy = call.outs[3];
    ZRT_CHECK(p.dtype == zero::zplan::F32 &&
                  (copy->dtype == zero::zplan::BF16 || copy->dtype == zero::zplan::F16),
              call.where() << ": the parameter's copy is a bf16 or f16 copy of an f32 one");
    expectShape(call, *copy, p.shape, "the parameter's copy");
  }
  return dispatchOptimizer(call, p, g, [=](auto pTag, auto gTag) -> BoundKernel {
    using T = decltype(pTag);
    using G = decltype(gTag);
    // Calls run(C{}) with the copy's element type, or with void when there is none.
    auto withCopy = [=](auto run) {
      if (!copy)
        return run((void *)nullptr);
      if (copy->dtype == zero::zplan::BF16)
        return run(copy->as<bf16>());
      return run(copy->as<f16>());
    };
    return [=] {
      const T *pp = p.as<T>(), *pm = m.as<T>(), *pv = v.as<T>();
      if (rt.hasFound && rt.found.as<float>()[0] != 0.0f) { // skipped: as they were
        keepInputs({{p, po}, {m, mo}, {v, vo}});
        withCopy([&](auto *co) {
          using C = std::remove_pointer_t<decltype(co)>;
          if constexpr (!std::is_void_v<C>)
            for (int64_t i = 0; i < p.numel(); ++i)
              co[i] = C(pp[i]);
        });
        return;
      }
      T mult = rt.hasScale ? T(rt.scale.as<float>()[0]) : T(1);
      double lr = rt.hasLr ? rt.lr.as<double>()[0] : lrAttr;
      auto coefficients =
          kernels::adamwStep<T>(lr, b1, b2, eps, wd, step.as<int64_t>()[0]);
      const G *pg = g.as<G>();
      T *opp = po.as<T>(), *opm = mo.as<T>(), *opv = vo.as<T>();
      withCopy([&](auto *co) {
        using C = std::remove_pointer_t<decltype(co)>;
        parallelFor(p.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
          C *at = co;
          if constexpr (!std::is_void_v<C>)
            at += lo;
          adamwRun<T, G, C>(coefficients, mult, pg + lo, pp + lo, pm + lo, pv + lo, opp + lo,
                            opm + lo, opv + lo, at, hi - lo);
        });
      });
    };
  });
}

/// An optimizer over N tensors (one kernel of the plan: the step's updates joined)
/// as its one-tensor updates in turn.
BoundKernel bindOptimizerGroup(const KernelCall &call, size_t own,
                               BoundKernel (*bindTensor)(const KernelCall &)) {
  std::shared_ptr<OptimizerMembers> members = optimizerMembers(call, own);
  if (members->calls.size() == 1)
    return bindTensor(call);
  std::vector<BoundKernel> each;
  for (const KernelCall &c : members->calls)
    each.push_back(bindTensor(c));
  return [members, each] {
    for (const BoundKernel &k : each)
      k();
  };
}

BoundKernel bindAdamW(const KernelCall &call) { return bindOptimizerGroup(call, 4, bindAdamWTensor); }

/// SGD on one tensor (its operand_segments [1, 1, 1, scalars...]).
BoundKernel bindSgdTensor(const KernelCall &call) {
  ZRT_CHECK(call.outs.size() == 2 && call.ins.size() >= 3,
            call.where() << ": takes 3 to 6 inputs and 2 outputs");
  const TensorView p = call.ins[0], g = call.ins[1], buf = call.ins[2];
  const TensorView po = call.outs[0], bo = call.outs[1];
  OptimizerRuntime rt = optimizerRuntime(call, 3, p, g);
  expectLike(call, p, {&buf, &po, &bo});
  double lrAttr = call.floatAttr("lr"), mom = call.floatAttr("momentum"),
         wd = call.floatAttr("weight_decay");
  return dispatchOptimizer(call, p, g, [=](auto pTag, auto gTag) -> BoundKernel {
    using T = decltype(pTag);
    using G = decltype(gTag);
    return [=] {
      if (rt.hasFound && rt.found.as<float>()[0] != 0.0f)
        return keepInputs({{p, po}, {buf, bo}});
      T mult = rt.hasScale ? T(rt.scale.as<float>()[0]) : T(1);
      double lr = rt.hasLr ? rt.lr.as<double>()[0] : lrAttr;
      auto coefficients = kernels::sgdStep<T>(lr, mom, wd);
      const G *pg = g.as<G>();
      const T *pp = p.as<T>(), *pb = buf.as<T>();
      T *opp = po.as<T>(), *opb = bo.as<T>();
      parallelFor(p.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
        sgdRun(coefficients, mult, pg + lo, pp + lo, pb + lo, opp + lo, opb + lo, hi - lo);
      });
    };
  });
}

BoundKernel bindSgd(const KernelCall &call) { return bindOptimizerGroup(call, 3, bindSgdTensor); }

/// Gradient clipping: the sum of squares of every element of the inputs (a rank's
/// gradients), in f64 in input order, as one f32.
BoundKernel bindSumSquares(const KernelCall &call) {
  ZRT_CHECK(!call.ins.empty() && call.outs.size() == 1,
            call.where() << ": sum_squares takes one or more tensors and gives one");
  const TensorView out = call.outs[0];
  ZRT_CHECK(out.dtype == zero::zplan::F32 && out.numel() == 1,
            call.where() << ": the result must be one f32");
  std::vector<std::function<double()>> sums;
  for (const TensorView &x : call.ins)
    sums.push_back(dispatchFloat(x.dtype, call, [=](auto tag) -> std::function<double()> {
      using T = decltype(tag);
      return [=] {
        const T *px = x.as<T>();
        double sum = 0;
        for (int64_t i = 0, n = x.numel(); i < n; ++i)
          sum += (double)px[i] * (double)px[i];
        return sum;
      };
    }));
  return [=] {
    double total = 0;
    for (const auto &sum : sums)
      total += sum();
    out.as<float>()[0] = (float)total;
  };
}

/// torch.nn.utils.clip_grad_norm_'s coefficient, folded into the optimizer's
/// gradient scale: norm = sqrt(sum of squares) * scale.
BoundKernel bindClipGradScale(const KernelCall &call) {
  call.expectArity(2, 2);
  for (const TensorView *v : {&call.ins[0], &call.ins[1], &call.outs[0], &call.outs[1]})
    ZRT_CHECK(v->dtype == zero::zplan::F32 && v->numel() == 1,
              call.where() << ": operands and results must be one f32 each");
  double maxNorm = call.floatAttr("max_norm");
  ZRT_CHECK(maxNorm > 0, call.where() << ": max_norm must be positive");
  const TensorView sumSq = call.ins[0], scale = call.ins[1], out = call.outs[0],
                   norm = call.outs[1];
  return [=] {
    kernels::ClippedScale c =
        kernels::clippedScale(sumSq.as<float>()[0], scale.as<float>()[0], maxNorm);
    out.as<float>()[0] = c.scale;
    norm.as<float>()[0] = c.norm;
  };
}

/// How many of `n` values are inf or NaN, from their bits: in every float format
/// those are the values with every exponent bit (`mask`) set.
template <typename U>
ZRT_VECTORIZED int64_t nonfiniteRun(const U *bits, int64_t n, U mask) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += (bits[i] & mask) == mask;
  return count;
}

/// The number of elements of the inputs that are inf or NaN, as one f32: the
/// overflow check of mixed-precision training (every gradient of a rank, of any
/// float dtypes, in one kernel) and zero-run's check of the weights after each
/// update.
BoundKernel bindNonfiniteCount(const KernelCall &call) {
  ZRT_CHECK(!call.ins.empty() && call.outs.size() == 1,
            call.where() << ": takes one or more tensors and gives one count");
  const TensorView out = call.outs[0];
  ZRT_CHECK(out.dtype == zero::zplan::F32 && out.numel() == 1,
            call.where() << ": the result must be one f32");
  // Each input's count, from its bits: every exponent bit set.
  std::vector<std::function<int64_t()>> counts;
  for (const TensorView &x : call.ins)
    counts.push_back(dispatchFloat(x.dtype, call, [=](auto tag) -> std::function<int64_t()> {
      using T = decltype(tag);
      using U = std::conditional_t<sizeof(T) == 8, uint64_t,
                                   std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
      U mask = std::is_same_v<T, double>  ? U(0x7ff0000000000000ull)
               : std::is_same_v<T, float> ? U(0x7f800000u)
               : std::is_same_v<T, f16>   ? U(0x7c00u)
                                          : U(0x7f80u); // bf16
      return [=] {
        std::atomic<int64_t> count{0};
        parallelFor(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
          count += nonfiniteRun(x.as<U>() + lo, hi - lo, mask);
        });
        return count.load();
      };
    }));
  return [=] {
    int64_t total = 0;
    for (const auto &count : counts)
      total += count();
    out.as<float>()[0] = (float)total;
  };
}

} // namespace

void zrt::addTrainingKernels(KernelTable &t) {
  t[Kernel::RELU_GRAD] = bindActivationGrad<kernels::ActivationGrad::Relu>;
  t[Kernel::GELU_GRAD] = bindActivationGrad<kernels::ActivationGrad::Gelu>;
  t[Kernel::GELU_TANH_GRAD] = bindActivationGrad<kernels::ActivationGrad::GeluTanh>;
  t[Kernel::LAYER_NORM_GRAD] = bindLayerNormGrad;
  t[Kernel::SOFTMAX_CROSS_ENTROPY_GRAD] = bindSoftmaxCrossEntropyGrad;
  t[Kernel::GATHER_GRAD] = bindGatherGrad;
  t[Kernel::SLICE_GRAD] = bindSliceGrad;
  t[Kernel::ADAMW] = bindAdamW;
  t[Kernel::SGD] = bindSgd;
  t[Kernel::NONFINITE_COUNT] = bindNonfiniteCount;
  t[Kernel::SUM_SQUARES] = bindSumSquares;
  t[Kernel::CLIP_GRAD_SCALE] = bindClipGradScale;
}
