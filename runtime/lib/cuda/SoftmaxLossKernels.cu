//===- SoftmaxLossKernels.cu - Softmax and cross-entropy on the GPU -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Softmax and log-softmax (rows, or a strided axis) with their gradient, and the
// cross-entropy family built on them: the loss, its gradient, the fused loss and
// gradient of the classifier. A block per row where a row is reduced.
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.cuh"

namespace zrt::cuda {
namespace {

/// Softmax along a strided axis (inner > 1): one thread per (outer, inner) pair,
/// neighbours reading neighbouring addresses.
template <typename T, typename TIn>
__global__ void softmaxKernel(const TIn *x, T *y, int64_t outer, int64_t dim, int64_t inner,
                              bool log) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= outer * inner)
    return;
  int64_t o = r / inner, i = r % inner;
  const TIn *px = x + o * dim * inner + i;
  T *py = y + o * dim * inner + i;
  auto in = [&](int64_t d) { return T(px[d * inner]); }; // widened: as an f32 copy
  double mx = -INFINITY;
  for (int64_t d = 0; d < dim; ++d)
    mx = fmax(mx, (double)in(d));
  T m = (T)mx;
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d)
    sum += (double)kernels::shiftedExp(in(d), m);
  T shift = kernels::logSoftmaxShift(m, sum);
  for (int64_t d = 0; d < dim; ++d)
    py[d * inner] = log ? T(in(d) - shift) : kernels::softmaxOf(in(d), m, sum);
}

/// A softmax's prologue on the device (SoftmaxPrologue): the row's input is x
/// scale + bias, computed again in each pass over the row.
template <typename T> struct DevicePrologue {
  T scale;
  const T *bias;          // null: none
  const int64_t *rowOff;  // per row, with a bias
  int64_t step;
};

/// Softmax along a contiguous axis: one block per row.
template <typename T, typename TIn>
__global__ void softmaxRowsKernel(const TIn *x, T *y, int64_t dim, bool log,
                                  DevicePrologue<T> pro) {
  const TIn *px = x + (int64_t)blockIdx.x * dim;
  T *py = y + (int64_t)blockIdx.x * dim;
  const T *bias = pro.bias ? pro.bias + pro.rowOff[blockIdx.x] : nullptr;
  auto in = [&](int64_t d) { // widened: as an f32 copy of a 16-bit input
    return kernels::softmaxInput(T(px[d]), pro.scale, bias ? bias + d * pro.step : nullptr);
  };
  double mx = -INFINITY;
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    mx = fmax(mx, (double)in(d));
  mx = blockReduce(mx, Max{});
  T m = (T)mx;
  double sum = 0;
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    sum += (double)kernels::shiftedExp(in(d), m);
  sum = blockReduce(sum, Add{});
  T shift = kernels::logSoftmaxShift(m, sum);
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    py[d] = log ? T(in(d) - shift) : kernels::softmaxOf(in(d), m, sum);
}

/// Softmax's gradient along a strided axis (inner > 1): one thread per (outer,
/// inner) pair.
template <typename T>
__global__ void softmaxGradKernel(const T *y, const T *g, T scale, T *dx, int64_t outer,
                                  int64_t dim, int64_t inner) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= outer * inner)
    return;
  int64_t at = (r / inner) * dim * inner + r % inner;
  double dot = 0;
  for (int64_t d = 0; d < dim; ++d)
    dot += (double)y[at + d * inner] * (double)g[at + d * inner];
  for (int64_t d = 0; d < dim; ++d)
    dx[at + d * inner] =
        kernels::scaledSoftmaxInputGrad(y[at + d * inner], g[at + d * inner], dot, scale);
}

/// Softmax's gradient along a contiguous axis: one block per row.
template <typename T>
__global__ void softmaxGradRowsKernel(const T *y, const T *g, T scale, T *dx, int64_t dim) {
  int64_t at = (int64_t)blockIdx.x * dim;
  double dot = 0;
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    dot += (double)y[at + d] * (double)g[at + d];
  dot = blockReduce(dot, Add{});
  for (int64_t d = threadIdx.x; d < dim; d += kThreads)
    dx[at + d] = kernels::scaledSoftmaxInputGrad(y[at + d], g[at + d], dot, scale);
}

/// One block: the mean needs the summed weights of every counted position.
template <typename T>
__global__ void crossEntropyKernel(const T *logp, const void *labels, bool labels64,
                                   const T *weights, int reduction, bool hasIgnore,
                                   int64_t ignore, T *loss, int64_t n, int64_t c,
                                   int64_t inner, int *error) {
  double total = 0, weightSum = 0;
  for (int64_t pos = threadIdx.x; pos < n * inner; pos += kThreads) {
    int64_t i = pos / inner, j = pos % inner, label = indexAt(labels, labels64, pos);
    double l = 0, w = 0;
    if (!(hasIgnore && label == ignore)) {
      if (label < 0 || label >= c) {
        *error = kIndexOutOfRange;
        continue;
      }
      w = weights ? (double)weights[label] : 1.0;
      l = -w * (double)logp[(i * c + label) * inner + j];
    }
    if (reduction == 0)
      loss[pos] = (T)l;
    total += l;
    weightSum += w;
  }
  total = blockReduce(total, Add{});
  weightSum = blockReduce(weightSum, Add{});
  if (threadIdx.x == 0 && reduction == 1)
    loss[0] = (T)total;
  else if (threadIdx.x == 0 && reduction == 2)
    loss[0] = (T)(total / weightSum);
}

/// The mean's denominator: one block.
template <typename T>
__global__ void weightSumKernel(const void *labels, bool labels64, const T *weights,
                                bool hasIgnore, int64_t ignore, int64_t positions,
                                int64_t c, double *sum) {
  double s = 0;
  for (int64_t pos = threadIdx.x; pos < positions; pos += kThreads) {
    int64_t label = indexAt(labels, labels64, pos);
    if (!(hasIgnore && label == ignore) && label >= 0 && label < c)
      s += weights ? (double)weights[label] : 1.0;
  }
  s = blockReduce(s, Add{});
  if (threadIdx.x == 0)
    *sum = s;
}

template <typename T, typename TOut>
__global__ void crossEntropyGradKernel(const T *logp, const void *labels, bool labels64,
                                       const T *g, const T *weights, int reduction,
                                       bool hasIgnore, int64_t ignore, const double *denom,
                                       TOut *out, int64_t n, int64_t c, int64_t inner,
                                       int *error) {
  int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (e >= n * c * inner)
    return;
  int64_t j = e % inner, k = (e / inner) % c, i = e / (inner * c);
  int64_t pos = i * inner + j, label = indexAt(labels, labels64, pos);
  using C = kernels::ComputeType<T>;
  if (hasIgnore && label == ignore) {
    out[e] = TOut(C(0));
    return;
  }
  if (label < 0 || label >= c) {
    *error = kIndexOutOfRange;
    out[e] = TOut(C(0));
    return;
  }
  double gl = reduction == 0 ? (double)g[pos] : (double)g[0];
  double w = weights ? (double)weights[label] : 1.0;
  double coef = w * gl / (reduction == 2 ? *denom : 1.0);
  out[e] = TOut(kernels::crossEntropyGrad(C(coef), C(logp[e]), k == label));
}

/// The fused classifier, one block per position: the row's maximum and sum of
/// exponentials, then each score's gradient written (possibly over the score).
/// Every read of the row, the label's score included, comes before the block
/// reduction's last barrier, and every write after it. The position's loss goes
/// to `rowLoss` (double), or to `loss` itself for reduction none.
template <typename T, typename TIn>
__global__ void crossEntropyWithGradKernel(const TIn *scores, TIn *ds, const void *labels,
                                           bool labels64, const T *g, const T *weights,
                                           int reduction, bool hasIgnore, int64_t ignore,
                                           const double *denom, double *rowLoss, T *loss,
                                           int64_t c, int64_t inner, int *error) {
  int64_t pos = blockIdx.x, first = (pos / inner) * c * inner + pos % inner;
  auto in = [&](int64_t k) { return T(scores[first + k * inner]); };
  double mx = -INFINITY;
  for (int64_t k = threadIdx.x; k < c; k += kThreads)
    mx = fmax(mx, (double)in(k));
  mx = blockReduce(mx, Max{});
  T m = (T)mx;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < c; k += kThreads)
    sum += (double)kernels::shiftedExp(in(k), m);
  int64_t label = indexAt(labels, labels64, pos);
  bool ignored = hasIgnore && label == ignore;
  bool counted = !ignored && label >= 0 && label < c;
  T atLabel = counted ? in(label) : T(0);
  sum = blockReduce(sum, Add{});
  T shift = kernels::logSoftmaxShift(m, sum);
  double w = counted ? (weights ? (double)weights[label] : 1.0) : 0.0;
  if (threadIdx.x == 0) {
    if (!ignored && !counted)
      *error = kIndexOutOfRange;
    double l = counted ? -w * (double)T(atLabel - shift) : 0.0;
    rowLoss[pos] = l;
    if (reduction == 0)
      loss[pos] = (T)l;
  }
  using C = kernels::ComputeType<T>;
  double gl = reduction == 0 ? (double)g[pos] : (double)g[0];
  C coef = C(w * gl / (reduction == 2 ? *denom : 1.0));
  for (int64_t k = threadIdx.x; k < c; k += kThreads)
    ds[first + k * inner] =
        counted ? TIn(kernels::crossEntropyGrad(coef, C(T(in(k) - shift)), k == label))
                : TIn(C(0));
}

/// The fused classifier's summed (or mean) loss: one block, in the order
/// crossEntropyKernel sums.
template <typename T>
__global__ void crossEntropyTotalKernel(const double *rowLoss, int64_t positions,
                                        const double *denom, int reduction, T *loss) {
  double total = 0;
  for (int64_t pos = threadIdx.x; pos < positions; pos += kThreads)
    total += rowLoss[pos];
  total = blockReduce(total, Add{});
  if (threadIdx.x == 0)
    loss[0] = (T)(reduction == 2 ? total / *denom : total);
}

} // namespace

namespace {
template <typename T, typename TIn>
void launchSoftmax(cudaStream_t s, const TIn *x, T *y, int64_t outer, int64_t dim,
                   int64_t inner, bool log, DevicePrologue<T> pro = {T(1), nullptr, nullptr, 0}) {
  if (inner == 1)
    launchRows("softmaxRows", softmaxRowsKernel<T, TIn>, outer, s, x, y, dim, log, pro);
  else // a prologue needs rows (the binder checks)
    launchN("softmax", softmaxKernel<T, TIn>, outer * inner, s, x, y, outer, dim, inner, log);
}
} // namespace

void softmax(cudaStream_t s, Elem t, const void *x, void *y, int64_t outer, int64_t dim,
             int64_t inner, bool log, double scale, const void *bias,
             const int64_t *biasRowOffsets, int64_t biasStep) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    launchSoftmax(s, (const T *)x, (T *)y, outer, dim, inner, log,
                  DevicePrologue<T>{T(scale), (const T *)bias, biasRowOffsets, biasStep});
  });
}

void softmaxGrad(cudaStream_t s, Elem t, const void *y, const void *g, double scale,
                 void *dx, int64_t outer, int64_t dim, int64_t inner) {
  dispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1)
      launchRows("softmaxGradRows", softmaxGradRowsKernel<T>, outer, s, (const T *)y,
                 (const T *)g, T(scale), (T *)dx, dim);
    else
      launchN("softmaxGrad", softmaxGradKernel<T>, outer * inner, s, (const T *)y,
              (const T *)g, T(scale), (T *)dx, outer, dim, inner);
  });
}

void crossEntropy(cudaStream_t s, Elem t, bool wide, const void *scores, const void *labels,
                  bool labels64, const void *weights, int reduction, bool hasIgnore,
                  int64_t ignore, void *loss, void *logp, int64_t n, int64_t c,
                  int64_t inner, int *errorFlag) {
  dispatchWidened(t, wide, [&](auto inTag, auto tag) {
    using T = decltype(tag);
    using TIn = decltype(inTag);
    launchSoftmax(s, (const TIn *)scores, (T *)logp, n, c, inner, true);
    launchRows("crossEntropy", crossEntropyKernel<T>, 1, s, (const T *)logp, labels,
               labels64, (const T *)weights, reduction, hasIgnore, ignore, (T *)loss, n, c,
               inner, errorFlag);
  });
}

void crossEntropyGrad(cudaStream_t s, Elem t, bool wide, const void *logp, const void *labels,
                      bool labels64, const void *grad, const void *weights, int reduction,
                      bool hasIgnore, int64_t ignore, void *out, int64_t n, int64_t c,
                      int64_t inner, double *denom, int *errorFlag) {
  dispatchWidened(t, wide, [&](auto outTag, auto tag) {
    using T = decltype(tag);
    using TOut = decltype(outTag);
    // The mean's denominator, on the device, in the stream's order.
    launchRows("weightSum", weightSumKernel<T>, 1, s, labels, labels64, (const T *)weights,
               hasIgnore, ignore, n * inner, c, denom);
    launchN("crossEntropyGrad", crossEntropyGradKernel<T, TOut>, n * c * inner, s,
            (const T *)logp, labels, labels64, (const T *)grad, (const T *)weights,
            reduction, hasIgnore, ignore, denom, (TOut *)out, n, c, inner, errorFlag);
  });
}

void crossEntropyWithGrad(cudaStream_t s, Elem t, bool wide, const void *scores,
                          void *scoresGrad, const void *labels, bool labels64,
                          const void *grad, const void *weights, int reduction,
                          bool hasIgnore, int64_t ignore, void *loss, double *scratch,
                          int64_t n, int64_t c, int64_t inner, int *errorFlag) {
  dispatchWidened(t, wide, [&](auto inTag, auto tag) {
    using T = decltype(tag);
    using TIn = decltype(inTag);
    int64_t positions = n * inner;
    double *denom = scratch, *rowLoss = scratch + 1;
    launchRows("weightSum", weightSumKernel<T>, 1, s, labels, labels64, (const T *)weights,
               hasIgnore, ignore, positions, c, denom);
    launchRows("crossEntropyWithGrad", crossEntropyWithGradKernel<T, TIn>, positions, s,
               (const TIn *)scores, (TIn *)scoresGrad, labels, labels64, (const T *)grad,
               (const T *)weights, reduction, hasIgnore, ignore, (const double *)denom, rowLoss,
               (T *)loss, c, inner, errorFlag);
    if (reduction != 0)
      launchRows("crossEntropyTotal", crossEntropyTotalKernel<T>, 1, s,
                 (const double *)rowLoss, positions, (const double *)denom, reduction,
                 (T *)loss);
  });
}

} // namespace zrt::cuda
