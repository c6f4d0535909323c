//===- Elementwise.cpp - Elementwise CPU kernels --------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/ElementwiseMath.h"

#include <cmath>
#include <type_traits>

using namespace zrt;
using namespace zrt::cpu;

namespace {

using kernels::BinaryOp;
using kernels::ComputeType;
using kernels::UnaryOp;

/// o[j] = x[j * sx] op y[j * sy] for a run of n; strides of 0 or 1 get loops of
/// their own (those vectorize).
template <BinaryOp K, typename T>
ZRT_VECTORIZED void binaryRun(const T *x, int64_t sx, const T *y, int64_t sy, T *o,
                              int64_t n) {
  using C = ComputeType<T>;
  if (sx == 1 && sy == 1) {
    for (int64_t j = 0; j < n; ++j)
      o[j] = T(kernels::binary<K>(C(x[j]), C(y[j])));
  } else if (sx == 1 && sy == 0) {
    C b = C(y[0]);
    for (int64_t j = 0; j < n; ++j)
      o[j] = T(kernels::binary<K>(C(x[j]), b));
  } else if (sx == 0 && sy == 1) {
    C a = C(x[0]);
    for (int64_t j = 0; j < n; ++j)
      o[j] = T(kernels::binary<K>(a, C(y[j])));
  } else {
    for (int64_t j = 0; j < n; ++j)
      o[j] = T(kernels::binary<K>(C(x[j * sx]), C(y[j * sy])));
  }
}

template <BinaryOp K> BoundKernel bindBinary(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  ZRT_CHECK(a.dtype == b.dtype, call.where() << ": operand dtypes differ");
  ZRT_CHECK(out.dtype == (K == BinaryOp::Equal ? zero::zplan::BOOL : a.dtype),
            call.where() << ": wrong result dtype " << dtypeName(out.dtype));
  Shape shape = broadcastShapes({a.shape, b.shape}, call);
  expectShape(call, out, shape, "result");
  std::array<Shape, 2> strides = {broadcastStrides(a.shape, shape),
                                  broadcastStrides(b.shape, shape)};
  bool intDiv = K == BinaryOp::Div &&
                dispatchAny(a.dtype, call, [](auto tag) { return !isFloat<decltype(tag)>; });
  std::string where = call.where();
  return dispatchAny(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const T *x = a.as<T>(), *y = b.as<T>();
      if constexpr (K == BinaryOp::Equal) {
        uint8_t *o = out.as<uint8_t>();
        forEachRun<2>(shape, strides, [&](int64_t i, auto off, auto step, int64_t n) {
          for (int64_t j = 0; j < n; ++j)
            o[i + j] = x[off[0] + j * step[0]] == y[off[1] + j * step[1]];
        });
      } else {
        T *o = out.as<T>();
        if (intDiv)
          forEachRun<2>(shape, strides, [&](int64_t, auto off, auto step, int64_t n) {
            for (int64_t j = 0; j < n; ++j)
              ZRT_CHECK(y[off[1] + j * step[1]] != 0, where << ": integer division by zero");
          });
        forEachRun<2>(shape, strides, [&](int64_t i, auto off, auto step, int64_t n) {
          binaryRun<K, T>(x + off[0], step[0], y + off[1], step[1], o + i, n);
        });
      }
    };
  });
}

template <UnaryOp K, typename T> ZRT_VECTORIZED void unaryRun(const T *in, T *o, int64_t n) {
  using C = ComputeType<T>;
  for (int64_t j = 0; j < n; ++j)
    o[j] = T(kernels::unary<K>(C(in[j])));
}

template <UnaryOp K> BoundKernel bindUnary(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  expectShape(call, out, x.shape, "result");
  auto body = [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const T *in = x.as<T>();
      T *o = out.as<T>();
      parallelFor(x.numel(), kParallelGrain,
                  [&](int64_t lo, int64_t hi) { unaryRun<K, T>(in + lo, o + lo, hi - lo); });
    };
  };
  if constexpr (K == UnaryOp::Neg)
    return dispatchAny(x.dtype, call, body);
  else
    return dispatchFloat(x.dtype, call, body);
}

/// Pow: the exponent may have another dtype than the base (as in ONNX).
BoundKernel bindPow(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  ZRT_CHECK(out.dtype == a.dtype, call.where() << ": result dtype must be the base's");
  Shape shape = broadcastShapes({a.shape, b.shape}, call);
  expectShape(call, out, shape, "result");
  std::array<Shape, 2> strides = {broadcastStrides(a.shape, shape),
                                  broadcastStrides(b.shape, shape)};
  return dispatchAny(a.dtype, call, [&](auto baseTag) -> BoundKernel {
    using T = decltype(baseTag);
    return dispatchAny(b.dtype, call, [&](auto expTag) -> BoundKernel {
      using U = decltype(expTag);
      return [=] {
        const T *x = a.as<T>();
        const U *y = b.as<U>();
        T *o = out.as<T>();
        forEachRun<2>(shape, strides, [&](int64_t i, auto off, auto step, int64_t n) {
          for (int64_t j = 0; j < n; ++j)
            o[i + j] = kernels::power(x[off[0] + j * step[0]], y[off[1] + j * step[1]]);
        });
      };
    });
  });
}

BoundKernel bindWhere(const KernelCall &call) {
  call.expectArity(3, 1);
  const TensorView c = call.ins[0], a = call.ins[1], b = call.ins[2], out = call.outs[0];
  ZRT_CHECK(c.dtype == zero::zplan::BOOL, call.where() << ": condition must be bool");
  ZRT_CHECK(a.dtype == b.dtype && a.dtype == out.dtype,
            call.where() << ": branch dtypes differ");
  Shape shape = broadcastShapes({c.shape, a.shape, b.shape}, call);
  expectShape(call, out, shape, "result");
  std::array<Shape, 3> strides = {broadcastStrides(c.shape, shape),
                                  broadcastStrides(a.shape, shape),
                                  broadcastStrides(b.shape, shape)};
  return dispatchAny(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const uint8_t *cond = c.as<uint8_t>();
      const T *x = a.as<T>(), *y = b.as<T>();
      T *o = out.as<T>();
      forEachRun<3>(shape, strides, [&](int64_t i, auto off, auto step, int64_t n) {
        for (int64_t j = 0; j < n; ++j)
          o[i + j] = cond[off[0] + j * step[0]] ? x[off[1] + j * step[1]]
                                                : y[off[2] + j * step[2]];
      });
    };
  });
}

template <typename In, typename Out>
ZRT_VECTORIZED void castRun(const In *in, Out *o, int64_t n, bool toBool) {
  if (toBool)
    for (int64_t j = 0; j < n; ++j)
      o[j] = (Out)(in[j] != In(0));
  else
    for (int64_t j = 0; j < n; ++j)
      o[j] = static_cast<Out>(in[j]);
}

BoundKernel bindCast(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  expectShape(call, out, x.shape, "result");
  bool toBool = out.dtype == zero::zplan::BOOL;
  return dispatchAny(x.dtype, call, [&](auto inTag) -> BoundKernel {
    using In = decltype(inTag);
    return dispatchAny(out.dtype, call, [&](auto outTag) -> BoundKernel {
      using Out = decltype(outTag);
      return [=] {
        const In *in = x.as<In>();
        Out *o = out.as<Out>();
        parallelFor(x.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
          castRun<In, Out>(in + lo, o + lo, hi - lo, toBool);
        });
      };
    });
  });
}

} // namespace

void zrt::addElementwiseKernels(KernelTable &t) {
  t[Kernel::ADD] = bindBinary<BinaryOp::Add>;
  t[Kernel::SUB] = bindBinary<BinaryOp::Sub>;
  t[Kernel::MUL] = bindBinary<BinaryOp::Mul>;
  t[Kernel::DIV] = bindBinary<BinaryOp::Div>;
  t[Kernel::POW] = bindPow;
  t[Kernel::EQUAL] = bindBinary<BinaryOp::Equal>;
#define ZERO_UNARY_OP(ID, NAME, KIND, ...) t[Kernel::KIND] = bindUnary<UnaryOp::ID>;
#include "zplan/UnaryOps.def"
  t[Kernel::WHERE] = bindWhere;
  t[Kernel::CAST] = bindCast;
}
