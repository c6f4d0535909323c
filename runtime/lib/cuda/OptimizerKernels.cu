//===- OptimizerKernels.cu - The optimizer step's GPU kernels -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// AdamW and SGD over every span of a rank's flat shards in one launch, the
// global gradient norm's sum of squares (partials, then a fixed-order total), the
// clip coefficient and the non-finite count. Every sum runs in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "KernelCommon.cuh"

namespace zrt::cuda {
namespace {

/// The gradient in the parameter's type T, multiplied by `scale` when there is one
/// (mixed precision's 1 / (loss scale * ranks), clipping's coefficient). False when
/// the step is skipped (an overflow): then every output keeps its input.
template <typename T, typename G>
__device__ bool gradientOf(const G *g, int64_t i, const float *scale, const float *found,
                           T &gi) {
  if (found && *found != 0.0f)
    return false;
  gi = scale ? T(g[i]) * T(*scale) : T(g[i]);
  return true;
}

/// The span of a multi-tensor launch that block blockIdx.x works on: the last
/// whose first block is at most its own (spans in order of firstBlock).
template <typename Span> __device__ const Span &spanOfBlock(const Span *spans, int count) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (spans[mid].firstBlock <= (int64_t)blockIdx.x)
      lo = mid;
    else
      hi = mid - 1;
  }
  return spans[lo];
}

/// torch.optim.AdamW's arithmetic, element by element, in the parameter's type,
/// over every span (tensor) of the launch; with C not void, also the new
/// parameter's 16-bit copy.
template <typename T, typename G, typename C>
__global__ void adamwKernel(const OptimizerSpan *spans, int count, const int64_t *step,
                            const float *scale, const float *found, const double *lrValue,
                            double lr, double b1, double b2, double eps, double wd) {
  const OptimizerSpan &sp = spanOfBlock(spans, count);
  int64_t i = ((int64_t)blockIdx.x - sp.firstBlock) * blockDim.x + threadIdx.x;
  if (i >= sp.n)
    return;
  const G *g = static_cast<const G *>(sp.g);
  T gi, pi = static_cast<const T *>(sp.p)[i], mi = static_cast<const T *>(sp.m)[i],
        vi = static_cast<const T *>(sp.v)[i];
  if (gradientOf(g, i, scale, found, gi)) {
    if (lrValue)
      lr = *lrValue;
    kernels::adamwElement(kernels::adamwStep<T>(lr, b1, b2, eps, wd, *step), gi, pi, mi,
                          vi);
  } // else skipped: every output keeps its input
  static_cast<T *>(sp.po)[i] = pi;
  static_cast<T *>(sp.mo)[i] = mi;
  static_cast<T *>(sp.vo)[i] = vi;
  if constexpr (!std::is_void_v<C>)
    static_cast<C *>(sp.copy)[i] = C(pi);
}

/// SGD with momentum over every span (m: the momentum buffer).
template <typename T, typename G>
__global__ void sgdKernel(const OptimizerSpan *spans, int count, const float *scale,
                          const float *found, const double *lrValue, double lr, double mom,
                          double wd) {
  const OptimizerSpan &sp = spanOfBlock(spans, count);
  int64_t i = ((int64_t)blockIdx.x - sp.firstBlock) * blockDim.x + threadIdx.x;
  if (i >= sp.n)
    return;
  const T *p = static_cast<const T *>(sp.p), *buf = static_cast<const T *>(sp.m);
  T *po = static_cast<T *>(sp.po), *bo = static_cast<T *>(sp.mo);
  T gi;
  if (!gradientOf(static_cast<const G *>(sp.g), i, scale, found, gi)) {
    po[i] = p[i];
    bo[i] = buf[i];
    return;
  }
  if (lrValue)
    lr = *lrValue;
  T pi = p[i], bi = buf[i];
  kernels::sgdElement(kernels::sgdStep<T>(lr, mom, wd), gi, pi, bi);
  po[i] = pi;
  bo[i] = bi;
}

/// Element i of a span, squared, in f64.
__device__ inline double squareAt(const SquareSpan &sp, int64_t i) {
  double v = sp.type == Elem::F64   ? static_cast<const double *>(sp.data)[i]
             : sp.type == Elem::F32 ? (double)static_cast<const float *>(sp.data)[i]
             : sp.type == Elem::BF16
                 ? (double)(float)static_cast<const bf16 *>(sp.data)[i]
                 : (double)(float)static_cast<const f16 *>(sp.data)[i];
  return v * v;
}

/// Each block: the squares (f64) of its chunk of kSquareChunk elements of its span,
/// summed in a fixed order, into partials[block].
__global__ void sumSquaresPartialsKernel(const SquareSpan *spans, int count, double *partials) {
  const SquareSpan &sp = spanOfBlock(spans, count);
  int64_t first = ((int64_t)blockIdx.x - sp.firstBlock) * kSquareChunk;
  int64_t last = first + kSquareChunk < sp.n ? first + kSquareChunk : sp.n;
  double sum = 0;
  for (int64_t i = first + threadIdx.x; i < last; i += kThreads)
    sum += squareAt(sp, i);
  sum = blockReduce(sum, Add{});
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

/// One block: the partials summed in a fixed order, as one f32.
__global__ void sumSquaresTotalKernel(const double *partials, int64_t blocks, float *out) {
  double sum = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += kThreads)
    sum += partials[b];
  sum = blockReduce(sum, Add{});
  if (threadIdx.x == 0)
    *out = (float)sum;
}

/// torch.nn.utils.clip_grad_norm_'s coefficient folded into the gradient scale.
__global__ void clipGradScaleKernel(const float *sumSq, const float *scale, float *out,
                                    float *norm, double maxNorm) {
  kernels::ClippedScale c = kernels::clippedScale(*sumSq, *scale, maxNorm);
  *out = c.scale;
  *norm = c.norm;
}

/// One thread per element of every span: a block finds its span (the last whose
/// first block is at most its own) and tests one element's exponent bits.
__global__ void nonfiniteCountSpansKernel(const CountSpan *spans, int count, float *total) {
  const CountSpan &span = spanOfBlock(spans, count);
  int64_t i = ((int64_t)blockIdx.x - span.firstBlock) * blockDim.x + threadIdx.x;
  if (i >= span.n)
    return;
  uint64_t bits = span.bytes == 2   ? static_cast<const uint16_t *>(span.data)[i]
                  : span.bytes == 4 ? static_cast<const uint32_t *>(span.data)[i]
                                    : static_cast<const uint64_t *>(span.data)[i];
  if ((bits & span.mask) == span.mask)
    atomicAdd(total, 1.0f);
}

} // namespace

int64_t countBlocks(int64_t n) { return (n + kThreads - 1) / kThreads; }

void nonfiniteCountSpans(cudaStream_t s, const CountSpan *spans, int count, int64_t blocks,
                         float *total) {
  checkCuda(cudaMemsetAsync(total, 0, sizeof(float), s), "cudaMemsetAsync");
  launch("nonfiniteCountSpans", nonfiniteCountSpansKernel, blocks, kThreads, s, spans, count,
         total);
}

/// Calls f(T{}, G{}) for an f32/f64 parameter T and a gradient G of any float type.
template <typename F> void dispatchOptimizer(Elem t, Elem gt, F f) {
  auto withGrad = [&](auto pt) {
    dispatchFloat(gt, [&](auto g) {
      if constexpr (!std::is_same_v<decltype(g), double> ||
                    std::is_same_v<decltype(pt), double>)
        f(pt, g);
    });
  };
  if (t == Elem::F64)
    withGrad(double{});
  else
    withGrad(float{});
}

void adamw(cudaStream_t s, Elem t, Elem gt, Elem ct, bool copies, const OptimizerSpan *spans,
           int count, int64_t blocks, const int64_t *step, const float *scale,
           const float *found, const double *lrValue, double lr, double beta1, double beta2,
           double eps, double weightDecay) {
  dispatchOptimizer(t, gt, [&](auto pt, auto g16) {
    using T = decltype(pt);
    using G = decltype(g16);
    auto go = [&](auto *copyTag) {
      using C = std::remove_pointer_t<decltype(copyTag)>;
      launch("adamw", adamwKernel<T, G, C>, blocks, kThreads, s, spans, count, step, scale,
             found, lrValue, lr, beta1, beta2, eps, weightDecay);
    };
    if (!copies)
      go((void *)nullptr);
    else if constexpr (std::is_same_v<T, float>) { // the binder checked: f32 masters only
      if (ct == Elem::BF16)
        go((bf16 *)nullptr);
      else
        go((f16 *)nullptr);
    }
  });
}

void sgd(cudaStream_t s, Elem t, Elem gt, const OptimizerSpan *spans, int count,
         int64_t blocks, const float *scale, const float *found, const double *lrValue,
         double lr, double momentum, double weightDecay) {
  dispatchOptimizer(t, gt, [&](auto pt, auto g16) {
    using T = decltype(pt);
    using G = decltype(g16);
    launch("sgd", sgdKernel<T, G>, blocks, kThreads, s, spans, count, scale, found, lrValue,
           lr, momentum, weightDecay);
  });
}

int64_t squareBlocks(int64_t n) { return (n + kSquareChunk - 1) / kSquareChunk; }

void sumSquaresSpans(cudaStream_t s, const SquareSpan *spans, int count, int64_t blocks,
                     double *partials, float *out) {
  launch<true>("sumSquaresPartials", sumSquaresPartialsKernel, blocks, kThreads, s, spans,
               count, partials);
  launch<true>("sumSquaresTotal", sumSquaresTotalKernel, 1, kThreads, s,
               (const double *)partials, blocks, out);
}

void clipGradScale(cudaStream_t s, const float *sumSq, const float *scale, float *out,
                   float *norm, double maxNorm) {
  launch("clipGradScale", clipGradScaleKernel, 1, 1, s, sumSq, scale, out, norm, maxNorm);
}

} // namespace zrt::cuda
