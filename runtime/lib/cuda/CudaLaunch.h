//===- CudaLaunch.h - Launchers of the CUDA kernels --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Plain types only: this header is shared by nvcc (CudaKernels.cu) and the host
// compiler (CudaBinders.cpp), which does the validation.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_CUDALAUNCH_H
#define ZRT_LIB_CUDA_CUDALAUNCH_H

#include "../kernels/ElementwiseMath.h"
#include "../kernels/HeadLayout.h"
#include "zplan/FusedProgram.h"
#include "zrt/Float16.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace zrt::cuda {

constexpr int kMaxRank = 8;

/// An output shape walked in row-major order, and the element strides of the
/// tensor read (or written) at each output position.
struct Strided {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  bool contiguous = false; // stride is shape's row-major strides: offset == position
  /// Every position and offset fits in 31 bits: kernels divide in 32 bits (a 64-bit
  /// division is several times the instructions on a GPU).
  bool index32 = false;
};

/// Whether `s` walks its tensor in row-major order (offset == position): extents of
/// 1 may carry any stride, the others must be row-major.
inline bool isRowMajor(const Strided &s) {
  int64_t expected = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (s.shape[d] != 1 && s.stride[d] != expected)
      return false;
    expected *= s.shape[d];
  }
  return true;
}

/// Storage types; bool is U8. BF16 and F16 compute in f32 (zrt/Float16.h).
enum class Elem { F32, F64, BF16, F16, I32, I64, I8, U8 };

/// Calls f(T{}) for the float storage type of `t` (the binders, which ran the CPU
/// kernel's checks, pass only float types here).
template <typename F> void dispatchFloat(Elem t, F f) {
  if (t == Elem::F64)
    f(double{});
  else if (t == Elem::BF16)
    f(bf16{});
  else if (t == Elem::F16)
    f(f16{});
  else
    f(float{});
}

using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::ActivationGrad;

/// What kernels that find bad data write to *errorFlag; the next synchronization
/// turns it into an error.
enum DeviceError : int { kIndexOutOfRange = 1, kIntegerDivisionByZero = 2 };

/// Fused attention's geometry (AttentionKernels.cu): query [batch, qHeads, qLen,
/// size], key [batch, kvHeads, kvLen, size], value [..., vSize]; the mask (0 none,
/// 1 boolean, 2 additive) read through broadcast strides over the scores; each
/// operand's rows where its layout puts them (the forward: query to out).
constexpr int kMaxAttentionHead = 256;
struct AttentionShape {
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kvLen = 0, size = 0, vSize = 0;
  double scale = 1;
  bool causal = false;
  int mask = 0;
  int64_t maskStride[4] = {};
  kernels::HeadLayout query, key, value, out, dout, dquery, dkey, dvalue;
};
/// out and the log-sum-exp per query row (f32; f64 for f64 queries).
void attention(cudaStream_t s, Elem t, const AttentionShape &a, const void *q, const void *k,
               const void *v, const void *mask, void *out, void *lse);
/// The three gradients, from the forward's result and log-sum-exp.
void attentionGrad(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                   const void *k, const void *v, const void *out, const void *lse,
                   const void *dout, const void *mask, void *dq, void *dk, void *dv);

/// Whether the tensor-core kernels (TensorCoreAttention.cu) take this attention:
/// bf16 or f16, heads of up to 128; attention and attentionGrad then call them.
bool tensorCoreAttentionFits(Elem t, const AttentionShape &a);
void tensorCoreAttention(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                         const void *k, const void *v, const void *mask, void *out,
                         void *lse);
void tensorCoreAttentionGrad(cudaStream_t s, Elem t, const AttentionShape &a, const void *q,
                             const void *k, const void *v, const void *out, const void *lse,
                             const void *dout, const void *mask, void *dq, void *dk,
                             void *dv);

/// Throws zrt::Error naming `what` unless `rc` is cudaSuccess (defined with the
/// binders: the kernels' file stays free of the runtime's headers).
void checkCuda(cudaError_t rc, const char *what);

void binary(cudaStream_t s, BinaryOp op, Elem t, const void *a, Strided sa, const void *b,
            Strided sb, void *out, int64_t n, int *errorFlag);
void power(cudaStream_t s, Elem base, Elem exponent, const void *a, Strided sa,
           const void *b, Strided sb, void *out, int64_t n);
void unary(cudaStream_t s, UnaryOp op, Elem t, const void *in, void *out, int64_t n);
void where(cudaStream_t s, Elem t, const void *cond, Strided sc, const void *a, Strided sa,
           const void *b, Strided sb, void *out, int64_t n);
void cast(cudaStream_t s, Elem from, Elem to, bool toBool, const void *in, void *out,
          int64_t n);

/// A fused program (zplan/FusedProgram.h) and its tensors, passed by value: a thread
/// evaluates the program for one output element in registers.
struct FusedArgs {
  int inputs = 0, instructions = 0;
  const void *in[fused::kMaxInputs] = {};
  Elem inType[fused::kMaxInputs] = {};
  Strided view[fused::kMaxInputs];
  struct Step {
    fused::Op op;
    fused::Type type;
    int a, b, c;
    float constant;
  } code[fused::kMaxInstructions] = {};
  void *out = nullptr;
  Elem outType = Elem::F32;
};
void fusedElementwise(cudaStream_t s, const FusedArgs &args, int64_t n);
/// out[i] = in[base + offset(i)] (transpose, slice, expand), element size 1-8.
void stridedCopy(cudaStream_t s, int elemSize, const void *in, Strided view, int64_t base,
                 void *out, int64_t n);
/// out[base + offset(i)] = in[i] (slice_grad, concat).
void stridedScatter(cudaStream_t s, int elemSize, const void *in, Strided view,
                    int64_t base, void *out, int64_t n);
void trilu(cudaStream_t s, int elemSize, const void *in, void *out, int64_t mats,
           int64_t rows, int64_t cols, bool upper, int64_t k);
void gather(cudaStream_t s, int elemSize, const void *data, const void *idx, bool idx64,
            void *out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
            int *errorFlag);
/// The gather's gradient, deterministic: each row's positions summed in ascending
/// order in f32 (f64 for f64), no float atomics. scratch: 2 dim + 2 n ints of
/// device memory (gatherGradScratchInts).
void gatherGrad(cudaStream_t s, Elem t, const void *idx, bool idx64, const void *grad,
                void *out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
                int *scratch, int *errorFlag);
inline int64_t gatherGradScratchInts(int64_t n, int64_t dim) { return 2 * dim + 2 * n; }
/// With a prologue (rows only): the softmax of x scale + bias, where row r reads
/// bias + biasRowOffsets[r] (a device array) in steps of biasStep; no bias: null.
void softmax(cudaStream_t s, Elem t, const void *x, void *y, int64_t outer, int64_t dim,
             int64_t inner, bool log, double scale = 1.0, const void *bias = nullptr,
             const int64_t *biasRowOffsets = nullptr, int64_t biasStep = 0);
void softmaxGrad(cudaStream_t s, Elem t, const void *y, const void *g, double scale,
                 void *dx, int64_t outer, int64_t dim, int64_t inner);
/// Calls f(N{}, W{}) for the float storage type N of `t` and W: N's compute type
/// (f32 for a 16-bit N) when `wide`, else N (mixed precision's f32 tensors beside
/// 16-bit ones: layer norm's statistics, the loss's log-probabilities).
template <typename F> void dispatchWidened(Elem t, bool wide, F f) {
  dispatchFloat(t, [&](auto tag) {
    using N = decltype(tag);
    if (wide)
      f(N{}, kernels::ComputeType<N>{});
    else
      f(N{}, N{});
  });
}
/// Device memory a kernel may use within its own launches on the compute stream
/// (the device's one scratch: the stream runs one kernel at a time).
struct Scratch {
  void *data = nullptr;
  size_t bytes = 0;
};

/// sOff/bOff: device arrays of `inner` offsets of scale/bias (they broadcast).
/// wideStats: mean and rstd are f32 for a 16-bit x (else x's type).
void layerNorm(cudaStream_t s, Elem t, bool wideStats, const void *x, const void *scale,
               const void *bias, const int64_t *sOff, const int64_t *bOff, void *y,
               void *mean, void *rstd, int64_t outer, int64_t inner, double eps);
void layerNormGrad(cudaStream_t s, Elem t, bool wideStats, const void *x, const void *scale,
                   const int64_t *sOff, const void *mean, const void *rstd, const void *gy,
                   const void *acc, void *dx, void *dscale, void *dbias, int64_t outer,
                   int64_t inner, Scratch scratch); // acc: added to dx, or null
/// reduction: 0 none, 1 sum, 2 mean. weights may be null; hasIgnore/ignore.
/// t: the scores' type; wide: loss, log_prob and weights f32 beside 16-bit scores.
void crossEntropy(cudaStream_t s, Elem t, bool wide, const void *scores, const void *labels,
                  bool labels64, const void *weights, int reduction, bool hasIgnore,
                  int64_t ignore, void *loss, void *logp, int64_t n, int64_t c,
                  int64_t inner, int *errorFlag);
/// t: the result's type; wide: log_prob, grad and weights f32 beside a 16-bit result.
/// denom: one double of device memory for the mean's denominator (allocated when
/// the kernel is bound: never while a step is being captured).
void crossEntropyGrad(cudaStream_t s, Elem t, bool wide, const void *logp, const void *labels,
                      bool labels64, const void *grad, const void *weights, int reduction,
                      bool hasIgnore, int64_t ignore, void *out, int64_t n, int64_t c,
                      int64_t inner, double *denom, int *errorFlag);
/// A fused product's result set to where its GEMM (beta 1) starts: addend +
/// bias, either may be null; c contiguous, `n` columns, `total` elements.
void matmulStart(cudaStream_t s, Elem t, void *c, const void *bias, const void *addend,
                 int64_t n, int64_t total);
/// The fused classifier: the loss and the scores' gradient (`scoresGrad`, which
/// may be `scores` itself) in one pass over the rows. t: the scores' type; wide:
/// loss, grad and weights f32 beside 16-bit scores. scratch: 1 + n inner doubles.
void crossEntropyWithGrad(cudaStream_t s, Elem t, bool wide, const void *scores,
                          void *scoresGrad, const void *labels, bool labels64,
                          const void *grad, const void *weights, int reduction,
                          bool hasIgnore, int64_t ignore, void *loss, double *scratch,
                          int64_t n, int64_t c, int64_t inner, int *errorFlag);
/// out[j] = sum (or mean over `count`) of in[keep(j) + red(r)], r < count.
/// out[j] = sum (or mean) over r < rows of in[r * n + j]: a row-major tensor's
/// leading axes reduced (bias gradients over the batch), read row by row.
void columnSums(cudaStream_t s, Elem t, bool mean, const void *in, int64_t rows, int64_t n,
                void *out, Scratch scratch);
void reduce(cudaStream_t s, Elem t, bool mean, const void *in, Strided keep, Strided red,
            int64_t count, void *out, int64_t n);
/// relu_grad, gelu_grad or gelu_tanh_grad from the forward input and the output's
/// gradient (`out` may be `g`).
void activationGrad(cudaStream_t s, ActivationGrad op, Elem t, const void *x, const void *g,
                    void *out, int64_t n);
/// One tensor of a multi-tensor optimizer launch: parameter, gradient and states
/// (SGD: m is the momentum buffer, v unused), their new values, the new
/// parameter's 16-bit copy (AdamW, or null), its `n` elements and the first of its
/// blocks (countBlocks each) in the launch.
struct OptimizerSpan {
  const void *p = nullptr, *g = nullptr, *m = nullptr, *v = nullptr;
  void *po = nullptr, *mo = nullptr, *vo = nullptr, *copy = nullptr;
  int64_t n = 0, firstBlock = 0;
};
/// The optimizers, one launch over every span (in device memory, `blocks` blocks in
/// all), on parameters (or f32 master copies) of type `t` with gradients of type
/// `gt`. Optional device scalars (null when absent): `scale` multiplies the
/// gradient, a non-zero `found` skips the step, `lrValue` replaces `lr`. AdamW with
/// `copies` also writes each new f32 parameter's 16-bit copy (of type `ct`).
void adamw(cudaStream_t s, Elem t, Elem gt, Elem ct, bool copies, const OptimizerSpan *spans,
           int count, int64_t blocks, const int64_t *step, const float *scale,
           const float *found, const double *lrValue, double lr, double beta1, double beta2,
           double eps, double weightDecay);
void sgd(cudaStream_t s, Elem t, Elem gt, const OptimizerSpan *spans, int count,
         int64_t blocks, const float *scale, const float *found, const double *lrValue,
         double lr, double momentum, double weightDecay);
/// *out = the sum of squares of x (f64 accumulation).
/// One tensor of a multi-tensor sum of squares: its `n` elements of type `type`, and
/// the first of its blocks (squareBlocks(n) of them) in the launch.
struct SquareSpan {
  const void *data = nullptr;
  int64_t n = 0, firstBlock = 0;
  Elem type = Elem::F32;
};
/// The elements one block of sumSquaresSpans squares.
constexpr int64_t kSquareChunk = 4096;
int64_t squareBlocks(int64_t n);
/// *out = the squares of every element of `spans` (`count` of them, in device
/// memory, `blocks` blocks in all), summed in f64 in a fixed order (each block's
/// chunk, then the blocks' partials: `blocks` doubles of device memory), as one
/// f32: two launches, however many tensors.
void sumSquaresSpans(cudaStream_t s, const SquareSpan *spans, int count, int64_t blocks,
                     double *partials, float *out);
/// Gradient clipping's scale and norm from the summed squares and the scale.
void clipGradScale(cudaStream_t s, const float *sumSq, const float *scale, float *out,
                   float *norm, double maxNorm);
/// *count = the number of inf/NaN elements of x.
/// One tensor of a multi-tensor count: its `n` elements of `bytes` each (2, 4 or
/// 8), `mask` their exponent bits (all set: inf or NaN), and the first of its
/// blocks in the launch.
struct CountSpan {
  const void *data = nullptr;
  int64_t n = 0, firstBlock = 0;
  uint64_t mask = 0;
  int bytes = 0;
};
/// The blocks a span of n elements takes in a multi-tensor launch (nonfiniteCountSpans,
/// adamw, sgd).
int64_t countBlocks(int64_t n);
/// *count = the inf and NaN elements of `spans` (`count` of them, in device
/// memory, their blocks `blocks` in all): one launch over every tensor.
void nonfiniteCountSpans(cudaStream_t s, const CountSpan *spans, int count, int64_t blocks,
                         float *total);

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_CUDALAUNCH_H
