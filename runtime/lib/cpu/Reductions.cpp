//===- Reductions.cpp - Sum and mean over axes ----------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"

#include <type_traits>

using namespace zrt;
using namespace zrt::cpu;

namespace {

template <bool Mean> BoundKernel bindReduce(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  std::vector<int64_t> axes = call.intsAttr("axes");
  bool keep = call.intAttr("keepdims") != 0;
  int64_t rank = x.shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    ZRT_CHECK(a >= 0 && a < rank && !reduced[a],
              call.where() << ": bad axis " << a);
    reduced[a] = true;
  }
  Shape expected, kept(rank);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    kept[d] = reduced[d] ? 1 : x.shape[d];
    if (reduced[d])
      count *= x.shape[d];
    if (!reduced[d])
      expected.push_back(x.shape[d]);
    else if (keep)
      expected.push_back(1);
  }
  expectShape(call, out, expected, "result");
  // Adjacent dimensions both reduced or both kept merge (size-1 ones drop): a
  // sum over leading dimensions is [reduced, kept], over trailing ones [kept,
  // reduced]; those two run vectorized, anything else walks element by element.
  Shape groups;
  std::vector<bool> groupReduced;
  for (int64_t d = 0; d < rank; ++d) {
    if (x.shape[d] == 1)
      continue;
    if (!groups.empty() && groupReduced.back() == reduced[d])
      groups.back() *= x.shape[d];
    else {
      groups.push_back(x.shape[d]);
      groupReduced.push_back(reduced[d]);
    }
  }
  bool leading = groups.size() == 2 && groupReduced[0] && !groupReduced[1];
  bool trailing = (groups.size() == 2 && !groupReduced[0] && groupReduced[1]) ||
                  (groups.size() == 1 && groupReduced[0]); // everything: one row
  // Each input element adds into the output element at its kept coordinates: the
  // output, seen with keepdims, is the input "broadcast" backwards.
  std::array<Shape, 1> strides = {broadcastStrides(kept, x.shape)};
  return dispatchAny(x.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    using Acc = std::conditional_t<isFloat<T>, double, int64_t>;
    return [=] {
      int64_t n = out.numel();
      const T *in = x.as<T>();
      T *o = out.as<T>();
      auto finish = [&](int64_t i, Acc sum) {
        o[i] = Mean ? (T)(count ? sum / (Acc)count : Acc(0)) : (T)sum;
      };
      if constexpr (isFloat<T>) {
        if (trailing) { // row sums
          int64_t cols = groups.back();
          int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, cols));
          parallelFor(n, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i)
              finish(i, cols ? sumRun(in + i * cols, cols) : 0.0);
          });
          return;
        }
        if (leading) { // column sums
          columnSumsInDouble(in, groups[0], n, n, finish);
          return;
        }
      }
      std::vector<Acc> acc(n, Acc(0));
      forEachBroadcast<1>(x.shape, strides,
                          [&](int64_t i, auto off) { acc[off[0]] += in[i]; });
      for (int64_t i = 0; i < n; ++i)
        finish(i, acc[i]);
    };
  });
}

} // namespace

void zrt::addReductionKernels(KernelTable &t) {
  t[Kernel::REDUCE_SUM] = bindReduce<false>;
  t[Kernel::REDUCE_MEAN] = bindReduce<true>;
}
