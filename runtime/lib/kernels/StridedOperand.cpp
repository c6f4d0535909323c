//===- StridedOperand.cpp - A kernel operand read through a view ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "StridedOperand.h"

#include "../cpu/KernelUtil.h"

#include <algorithm>
#include <vector>

using namespace zrt;
using namespace zrt::cpu;
using kernels::StridedOperand;

StridedOperand kernels::stridedOperandOf(const KernelCall &call, const std::string &name,
                                         const TensorView &t) {
  StridedOperand v;
  bool swapped = call.hasAttr("transpose_" + name) && call.intAttr("transpose_" + name);
  if (!call.hasAttr(name + "_shape")) {
    ZRT_CHECK(!call.hasAttr(name + "_strides") && !call.hasAttr(name + "_offset"),
              call.where() << ": " << name << "_strides or " << name << "_offset without "
                           << name << "_shape");
    v.shape = t.shape;
    v.strides = stridesOf(t.shape);
    if (swapped) {
      ZRT_CHECK(v.shape.size() >= 2, call.where() << ": a transposed operand needs rank >= 2");
      v.swapLastTwo();
    }
    return v;
  }
  ZRT_CHECK(!swapped, call.where() << ": transpose_" << name << " and a " << name
                                   << " view together");
  v.shape = call.intsAttr(name + "_shape");
  v.strides = call.intsAttr(name + "_strides");
  v.offset = call.intAttr(name + "_offset");
  ZRT_CHECK(v.shape.size() >= 2 && v.strides.size() == v.shape.size(),
            call.where() << ": the " << name
                         << " view needs rank >= 2 and one stride per dimension");
  bool empty = false;
  int64_t last = v.offset;
  ZRT_CHECK(v.offset >= 0, call.where() << ": the " << name << " view's offset is negative");
  for (size_t d = 0; d < v.shape.size(); ++d) {
    ZRT_CHECK(v.shape[d] >= 0 && v.strides[d] >= 0,
              call.where() << ": the " << name << " view has a negative extent or stride");
    empty |= v.shape[d] == 0;
    int64_t reach;
    if (v.shape[d] > 0)
      ZRT_CHECK(!__builtin_mul_overflow(v.shape[d] - 1, v.strides[d], &reach) &&
                    !__builtin_add_overflow(last, reach, &last),
                call.where() << ": the " << name << " view's extent overflows");
  }
  ZRT_CHECK(empty || last < t.numel(),
            call.where() << ": the " << name << " view reaches element " << last
                         << " of a tensor of " << t.numel());
  return v;
}

bool kernels::coversOnce(const StridedOperand &v, int64_t numel) {
  std::vector<size_t> dims;
  int64_t count = 1;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (__builtin_mul_overflow(count, v.shape[d], &count))
      return false;
    if (v.shape[d] > 1)
      dims.push_back(d);
  }
  if (count != numel)
    return false;
  std::sort(dims.begin(), dims.end(),
            [&](size_t x, size_t y) { return v.strides[x] < v.strides[y]; });
  int64_t reach = 0;
  for (size_t d : dims) {
    if (v.strides[d] <= reach)
      return false;
    reach += (v.shape[d] - 1) * v.strides[d];
  }
  return true;
}
