//===- Reductions.cpp - Sum and mean over axes ----------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

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
  // Each input element adds into the output element at its kept coordinates: the
  // output, seen with keepdims, is the input "broadcast" backwards.
  std::array<Shape, 1> strides = {broadcastStrides(kept, x.shape)};
  return dispatchAny(x.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    using Acc = std::conditional_t<isFloat<T>, double, int64_t>;
    return [=] {
      int64_t n = out.numel();
      std::vector<Acc> acc(n, Acc(0));
      const T *in = x.as<T>();
      forEachBroadcast<1>(x.shape, strides,
                          [&](int64_t i, auto off) { acc[off[0]] += in[i]; });
      T *o = out.as<T>();
      for (int64_t i = 0; i < n; ++i)
        o[i] = Mean ? (T)(count ? acc[i] / (Acc)count : Acc(0)) : (T)acc[i];
    };
  });
}

} // namespace

void zrt::addReductionKernels(KernelTable &t) {
  t["reduce_sum"] = bindReduce<false>;
  t["reduce_mean"] = bindReduce<true>;
}
