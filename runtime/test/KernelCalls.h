//===- KernelCalls.h - Building kernel calls in the runtime's tests -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TEST_KERNELCALLS_H
#define ZRT_TEST_KERNELCALLS_H

#include "zrt/Kernels.h"

#include <string>
#include <vector>

namespace zrt::test {

using Attrs = google::protobuf::Map<std::string, zero::zplan::Attr>;

/// `v`'s elements as a tensor of dtype `t` and `shape`.
template <typename T>
TensorView view(std::vector<T> &v, DType t, std::vector<int64_t> shape) {
  return TensorView{v.data(), t, std::move(shape)};
}

/// A call of a `kind` kernel as a plan would make it.
inline KernelCall callOf(KernelKind kind, std::vector<TensorView> ins,
                         std::vector<TensorView> outs, const Attrs *attrs = nullptr) {
  KernelCall c;
  c.kind = kind;
  c.ins = std::move(ins);
  c.outs = std::move(outs);
  c.attrs = attrs;
  return c;
}

} // namespace zrt::test

#endif // ZRT_TEST_KERNELCALLS_H
