//===- KernelUtil.h - Helpers shared by the CPU kernels --------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CPU_KERNELUTIL_H
#define ZRT_LIB_CPU_KERNELUTIL_H

#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/Kernels.h"
#include "../kernels/ElementwiseMath.h"
#include "../kernels/HeadLayout.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zrt::cpu {

using Shape = std::vector<int64_t>;

std::string shapeString(const Shape &s);

/// Calls fn(T{}) with T the C++ type of dtype `t` (bool is uint8_t).
template <typename Fn> auto dispatchAny(DType t, const KernelCall &call, Fn &&fn) {
  switch (t) {
  case zero::zplan::F32:
    return fn(float{});
  case zero::zplan::F64:
    return fn(double{});
  case zero::zplan::BF16:
    return fn(bf16{});
  case zero::zplan::F16:
    return fn(f16{});
  case zero::zplan::I32:
    return fn(int32_t{});
  case zero::zplan::I64:
    return fn(int64_t{});
  case zero::zplan::I8:
    return fn(int8_t{});
  case zero::zplan::U8:
  case zero::zplan::BOOL:
    return fn(uint8_t{});
  default:
    ZRT_FAIL(call.where() << ": unsupported dtype " << dtypeName(t));
  }
}

/// Calls fn(T{}) with an unsigned integer type of `size` bytes: data movement
/// copies elements without looking at their values.
template <typename Fn> auto dispatchBySize(int64_t size, Fn &&fn) {
  switch (size) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  default:
    return fn(uint64_t{});
  }
}

/// Calls fn(T{}) for the floating-point dtypes (16-bit ones compute in f32); other
/// dtypes are an error.
template <typename Fn> auto dispatchFloat(DType t, const KernelCall &call, Fn &&fn) {
  switch (t) {
  case zero::zplan::F32:
    return fn(float{});
  case zero::zplan::F64:
    return fn(double{});
  case zero::zplan::BF16:
    return fn(bf16{});
  case zero::zplan::F16:
    return fn(f16{});
  default:
    ZRT_FAIL(call.where() << ": needs a float dtype, got " << dtypeName(t));
  }
}

/// Mixed precision keeps some tensors of a 16-bit kernel in f32 (layer norm's
/// mean and 1/std, the loss's log-probabilities): whether `wide` is f32 beside a
/// 16-bit `narrow`; an error unless it is that or `narrow` itself. `what` starts
/// the message ("the log_prob must be the scores' dtype").
bool isWidened(const KernelCall &call, DType narrow, DType wide, const char *what);

/// Calls fn(N{}, W{}) with N the dtype `t` and W: N's compute type (f32 for a
/// 16-bit N) when `wide`, else N.
template <typename Fn> auto dispatchWidened(DType t, bool wide, const KernelCall &call, Fn &&fn) {
  return dispatchFloat(t, call, [&](auto tag) {
    using N = decltype(tag);
    using W = kernels::ComputeType<N>;
    return wide ? fn(N{}, W{}) : fn(N{}, N{});
  });
}

/// Numpy broadcast of shapes, or an error naming the call.
Shape broadcastShapes(const std::vector<Shape> &shapes, const KernelCall &call);

/// Per-dimension strides of `in` seen through the broadcast to `out` (0 where `in`
/// is stretched), aligned to out's rank.
Shape broadcastStrides(const Shape &in, const Shape &out);

/// Row-major strides.
Shape stridesOf(const Shape &s);

/// The product of extents [begin, end) of `s` (1 when empty).
int64_t extentProduct(const Shape &s, size_t begin, size_t end);

/// Splits `shape` around `axis` into (outer, dim, inner) extents.
void splitAxis(const Shape &shape, int64_t axis, int64_t &outer, int64_t &dim,
               int64_t &inner);

/// The shape of a gather of `idx` along `axis` of `data` (and of its gradient),
/// after checking the axis and the index type.
Shape gatheredShape(const KernelCall &call, const Shape &data, int64_t axis,
                    const TensorView &idx);

/// Where a slice's elements sit in the full tensor: element i of the part is at
/// base + its offset under `strides`.
struct SliceWindow {
  int64_t base = 0;
  Shape strides;
};
/// The window of `part` in `full` from the call's starts and steps, checked to lie
/// inside `full`: a slice reads it (`partName` "result", `fullName` "input", `verb`
/// "reads"), a slice gradient writes it.
SliceWindow sliceWindow(const KernelCall &call, const Shape &full, const Shape &part,
                        const char *partName, const char *fullName, const char *verb);

/// A softmax's or softmax gradient's `scale` (1 when absent: the compiler folds a
/// multiply by a constant before or after it into it), checked finite.
double softmaxScale(const KernelCall &call);

/// A softmax kernel's prologue: the softmax of x scale + bias (compute.softmax's
/// folded attention scale and mask), checked: `scale` (1 when absent), and with a
/// bias (input 1, of x's dtype, broadcast to x), where each row of x (along the
/// last axis, the only one a prologue allows) reads its bias row and the bias's
/// step along the row (0: one value per row). `allowed`: whether the kind takes one.
struct SoftmaxPrologue {
  double scale = 1.0;
  bool hasBias = false;
  std::vector<int64_t> rowOffsets; // per row of x, with a bias
  int64_t step = 0;
  bool any() const { return hasBias || scale != 1.0; }
};
SoftmaxPrologue softmaxPrologue(const KernelCall &call, bool allowed);

/// What softmax cross-entropy and its gradient share: scores (or log-probabilities)
/// [N, C, d...] as (n, c, inner), labels [N, d...] checked, and the attributes.
/// The values are what the CUDA cross-entropy kernels take.
enum class Reduction : int { None = 0, Sum = 1, Mean = 2 };
struct CrossEntropyGeometry {
  int64_t n = 0, c = 0, inner = 1;
  Shape labelShape;
  Reduction reduction = Reduction::Mean;
  /// The loss's (forward) or its gradient's (backward) shape under `reduction`.
  Shape lossShape() const { return reduction == Reduction::None ? labelShape : Shape{}; }
  bool hasIgnore = false, labels64 = false;
  int64_t ignore = 0;
  /// Position `pos`'s label, and whether it is ignored.
  int64_t labelAt(const TensorView &labels, int64_t pos) const {
    return labels64 ? labels.as<int64_t>()[pos] : (int64_t)labels.as<int32_t>()[pos];
  }
  bool ignored(int64_t label) const { return hasIgnore && label == ignore; }
};
/// Checks `scores` (named `scoresName`), `labels` and `weights` (when given) and
/// reads the attributes.
CrossEntropyGeometry crossEntropyGeometry(const KernelCall &call, const TensorView &scores,
                                          const char *scoresName, const TensorView &labels,
                                          const TensorView *weights);

/// Fused attention's operands, checked (Attention.cpp): query [batch, qHeads,
/// qLen, size], key [batch, kvHeads, kvLen, size], value [..., vSize], Hkv
/// dividing Hq; the mask (none, boolean: kept where true, or additive) read
/// through broadcast strides over the scores [batch, qHeads, qLen, kvLen]. Each
/// operand as it lies or as a view of its buffer (zplan/AttentionViews.h): the
/// layouts say where its rows are.
struct AttentionGeometry {
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kvLen = 0, size = 0, vSize = 0;
  double scale = 1;
  bool causal = false;
  enum class Mask { None, Bool, Add } mask = Mask::None;
  Shape maskStrides;
  /// The forward sets query, key, value and out; the gradient all of them.
  kernels::HeadLayout query, key, value, out, dout, dquery, dkey, dvalue;
  int64_t group() const { return qHeads / kvHeads; }
};
/// The geometry of attention (`grad`: attention_grad) call `call`, every operand
/// and result checked.
AttentionGeometry attentionGeometry(const KernelCall &call, bool grad);

/// An optimizer kernel (adamw: `own` 4 tensor operands, param, grad and two
/// moments; sgd: 3) over N tensors, its operand_segments [N, .., N, scalars...],
/// its outputs N per result, as N calls of one tensor each (segments [1, .., 1,
/// scalars...]) that share its scalars and other attributes. The calls point at
/// `attrs`, so they live as long as this.
struct OptimizerMembers {
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  std::vector<KernelCall> calls;
};
/// Throws zrt::Error naming the call when its segments and operands disagree.
std::shared_ptr<OptimizerMembers> optimizerMembers(const KernelCall &call, size_t own);

/// Iterates the output of a broadcast of N inputs, calling f(outIndex, offsets)
/// with each input's element offset. The innermost dimension is a tight loop.
template <size_t N, typename F>
void forEachBroadcast(const Shape &out, const std::array<Shape, N> &inStrides, F &&f) {
  int64_t total = 1;
  for (int64_t d : out)
    total *= d;
  if (total == 0)
    return;
  size_t rank = out.size();
  if (rank == 0) {
    std::array<int64_t, N> off{};
    f(0, off);
    return;
  }
  int64_t inner = out[rank - 1];
  std::array<int64_t, N> innerStride;
  for (size_t k = 0; k < N; ++k)
    innerStride[k] = inStrides[k][rank - 1];
  Shape idx(rank, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    std::array<int64_t, N> off = base;
    for (int64_t i = 0; i < inner; ++i) {
      f(o + i, off);
      for (size_t k = 0; k < N; ++k)
        off[k] += innerStride[k];
    }
    // Advance the outer dimensions.
    for (int d = (int)rank - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k)
        base[k] += inStrides[k][d];
      if (idx[d] < out[d])
        break;
      for (size_t k = 0; k < N; ++k)
        base[k] -= inStrides[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}

/// Where each element of `norm` reads a layer norm's scale (or bias) of shape `of`
/// broadcast to it; empty when it has the shape itself (offsets 0, 1, 2...).
std::vector<int64_t> normOffsets(const Shape &of, const Shape &norm);

/// That parameter as one value per normalized element: `p` itself when `offsets`
/// is empty, else gathered into `copy`.
template <typename T>
const T *normParameter(const T *p, const std::vector<int64_t> &offsets, std::vector<T> &copy) {
  if (offsets.empty())
    return p;
  copy.resize(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i)
    copy[i] = p[offsets[i]];
  return copy.data();
}

/// Throws unless `v` has exactly shape `s`.
void expectShape(const KernelCall &call, const TensorView &v, const Shape &s,
                 const char *what);

} // namespace zrt::cpu

#endif // ZRT_LIB_CPU_KERNELUTIL_H
