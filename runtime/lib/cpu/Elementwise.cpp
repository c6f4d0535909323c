//===- Elementwise.cpp - Elementwise CPU kernels --------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <cmath>
#include <type_traits>

using namespace zrt;
using namespace zrt::cpu;

namespace {

enum class BinaryKind { Add, Sub, Mul, Div, Equal };

template <typename T> T applyBinary(BinaryKind k, T a, T b) {
  switch (k) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  default:
    return T{};
  }
}

template <BinaryKind K> BoundKernel bindBinary(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  ZRT_CHECK(a.dtype == b.dtype, call.where() << ": operand dtypes differ");
  ZRT_CHECK(out.dtype == (K == BinaryKind::Equal ? zero::zplan::BOOL : a.dtype),
            call.where() << ": wrong result dtype " << dtypeName(out.dtype));
  Shape shape = broadcastShapes({a.shape, b.shape}, call);
  expectShape(call, out, shape, "result");
  std::array<Shape, 2> strides = {broadcastStrides(a.shape, shape),
                                  broadcastStrides(b.shape, shape)};
  bool intDiv = K == BinaryKind::Div &&
                dispatchAny(a.dtype, call, [](auto tag) { return !isFloat<decltype(tag)>; });
  std::string where = call.where();
  return dispatchAny(a.dtype, call, [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const T *x = a.as<T>(), *y = b.as<T>();
      if constexpr (K == BinaryKind::Equal) {
        uint8_t *o = out.as<uint8_t>();
        forEachBroadcast<2>(shape, strides, [&](int64_t i, auto off) {
          o[i] = x[off[0]] == y[off[1]];
        });
      } else {
        T *o = out.as<T>();
        if (intDiv)
          forEachBroadcast<2>(shape, strides, [&](int64_t, auto off) {
            ZRT_CHECK(y[off[1]] != 0, where << ": integer division by zero");
          });
        forEachBroadcast<2>(shape, strides, [&](int64_t i, auto off) {
          o[i] = applyBinary<T>(K, x[off[0]], y[off[1]]);
        });
      }
    };
  });
}

enum class UnaryKind { Neg, Sqrt, Reciprocal, Exp, Log, Relu, Tanh, Sigmoid, Erf };

template <UnaryKind K> BoundKernel bindUnary(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  expectShape(call, out, x.shape, "result");
  auto body = [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const T *in = x.as<T>();
      T *o = out.as<T>();
      int64_t n = x.numel();
      for (int64_t i = 0; i < n; ++i) {
        T v = in[i];
        if constexpr (K == UnaryKind::Neg)
          o[i] = (T)-v;
        else if constexpr (isFloat<T>) {
          if constexpr (K == UnaryKind::Sqrt)
            o[i] = std::sqrt(v);
          else if constexpr (K == UnaryKind::Reciprocal)
            o[i] = T(1) / v;
          else if constexpr (K == UnaryKind::Exp)
            o[i] = std::exp(v);
          else if constexpr (K == UnaryKind::Log)
            o[i] = std::log(v);
          else if constexpr (K == UnaryKind::Relu)
            o[i] = v > T(0) ? v : T(0);
          else if constexpr (K == UnaryKind::Tanh)
            o[i] = std::tanh(v);
          else if constexpr (K == UnaryKind::Sigmoid)
            o[i] = T(1) / (T(1) + std::exp(-v));
          else if constexpr (K == UnaryKind::Erf)
            o[i] = std::erf(v);
        }
      }
    };
  };
  if constexpr (K == UnaryKind::Neg)
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
        forEachBroadcast<2>(shape, strides, [&](int64_t i, auto off) {
          o[i] = (T)std::pow((double)x[off[0]], (double)y[off[1]]);
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
      forEachBroadcast<3>(shape, strides, [&](int64_t i, auto off) {
        o[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
      });
    };
  });
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
        int64_t n = x.numel();
        for (int64_t i = 0; i < n; ++i)
          o[i] = toBool ? (Out)(in[i] != In(0)) : static_cast<Out>(in[i]);
      };
    });
  });
}

} // namespace

void zrt::addElementwiseKernels(KernelTable &t) {
  t["add"] = bindBinary<BinaryKind::Add>;
  t["sub"] = bindBinary<BinaryKind::Sub>;
  t["mul"] = bindBinary<BinaryKind::Mul>;
  t["div"] = bindBinary<BinaryKind::Div>;
  t["pow"] = bindPow;
  t["equal"] = bindBinary<BinaryKind::Equal>;
  t["neg"] = bindUnary<UnaryKind::Neg>;
  t["sqrt"] = bindUnary<UnaryKind::Sqrt>;
  t["reciprocal"] = bindUnary<UnaryKind::Reciprocal>;
  t["exp"] = bindUnary<UnaryKind::Exp>;
  t["log"] = bindUnary<UnaryKind::Log>;
  t["relu"] = bindUnary<UnaryKind::Relu>;
  t["tanh"] = bindUnary<UnaryKind::Tanh>;
  t["sigmoid"] = bindUnary<UnaryKind::Sigmoid>;
  t["erf"] = bindUnary<UnaryKind::Erf>;
  t["where"] = bindWhere;
  t["cast"] = bindCast;
}
