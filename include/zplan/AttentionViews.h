//===- AttentionViews.h - Attention operands a plan gives as views -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A fused attention kernel reads its query, key and value (and in the gradient,
// the forward's result and its gradient) where the projections wrote them, and
// writes its results where their readers want them: a head split or merge is a
// view, not a transpose kernel. An operand given as a view carries NAME_shape,
// NAME_strides and NAME_offset (element (i...) of the operand is element offset +
// sum(i_d strides_d) of its buffer), the matmul's encoding. These are the names,
// by position; the compiler writes them and the runtime reads them.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_ATTENTIONVIEWS_H
#define ZPLAN_ATTENTIONVIEWS_H

#include <cstddef>

namespace zplan::attention {

/// The view name of input `i` of attention (`grad`: attention_grad), or nullptr
/// for one always read as it lies (a mask, the log-sum-exp).
inline const char *inputView(bool grad, size_t i) {
  static const char *const forward[] = {"query", "key", "value"};
  static const char *const backward[] = {"query", "key", "value", "out", nullptr, "dout"};
  if (grad)
    return i < 6 ? backward[i] : nullptr;
  return i < 3 ? forward[i] : nullptr;
}

/// The view name of output `i` (the forward's log-sum-exp: nullptr).
inline const char *outputView(bool grad, size_t i) {
  static const char *const backward[] = {"dquery", "dkey", "dvalue"};
  if (grad)
    return i < 3 ? backward[i] : nullptr;
  return i == 0 ? "out" : nullptr;
}

} // namespace zplan::attention

#endif // ZPLAN_ATTENTIONVIEWS_H
