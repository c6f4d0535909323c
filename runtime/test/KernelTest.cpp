//===- KernelTest.cpp - Kernel binding checks and run-time errors ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Numerics are checked by the ONNX backend node tests (test/onnx-node); this file
// checks what those cannot reach: a bad plan call is refused at bind time, and a
// data-dependent error is an exception, not an out-of-bounds access.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/Kernels.h"

#include "KernelCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace zrt;

namespace {

using zrt::test::callOf;

TensorView view(std::vector<float> &v, std::vector<int64_t> shape) {
  return zrt::test::view(v, zero::zplan::F32, std::move(shape));
}

// The compiler may emit any kind of the schema; the CPU runs each (and the CUDA
// table checks itself against the CPU's when it is built).
TEST(Kernels, EveryKindHasACpuKernel) {
  for (int k = Kernel::Kind_MIN; k <= Kernel::Kind_MAX; ++k)
    if (Kernel::Kind_IsValid(k) && k != Kernel::KIND_UNSPECIFIED)
      EXPECT_TRUE(cpuKernels().count(KernelKind(k))) << zero::zplan::kernelKindName(k);
  EXPECT_FALSE(cpuKernels().count(Kernel::KIND_UNSPECIFIED));
  EXPECT_EQ(zero::zplan::kernelKindName(Kernel::ALL_GATHER_START), "all_gather_start");
  EXPECT_EQ(zero::zplan::parseKernelKind("layer_norm_grad"), Kernel::LAYER_NORM_GRAD);
  EXPECT_FALSE(zero::zplan::parseKernelKind("MATMUL"));
  EXPECT_FALSE(zero::zplan::parseKernelKind("kind_unspecified"));
  EXPECT_FALSE(zero::zplan::parseKernelKind("swish"));
}

// Layer norm's gradient in f32 (computed in f32 as PyTorch does, row sums in f32
// lanes combined in double) against the formula in double, over rows whose length
// is not a multiple of the vector width; bf16 tensors within bf16's rounding. With
// a tensor to accumulate, the input gradient is bit for bit the add kernel's sum.
TEST(Kernels, LayerNormGradMatchesItsDefinition) {
  const int64_t rows = 6, n = 37;
  std::vector<double> x(rows * n), g(rows * n), scale(n), mean(rows), rstd(rows);
  for (int64_t i = 0; i < rows * n; ++i) {
    x[i] = std::sin(0.37 * double(i)) * 2 + 0.1 * double(i % 5);
    g[i] = std::cos(0.23 * double(i)) - 0.2;
  }
  for (int64_t j = 0; j < n; ++j)
    scale[j] = 0.5 + 0.03 * double(j);
  for (int64_t o = 0; o < rows; ++o) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mu += x[o * n + j] / n;
    for (int64_t j = 0; j < n; ++j)
      var += (x[o * n + j] - mu) * (x[o * n + j] - mu) / n;
    mean[o] = mu;
    rstd[o] = 1 / std::sqrt(var + 1e-5);
  }
  std::vector<double> dx(rows * n), ds(n, 0.0), db(n, 0.0);
  for (int64_t o = 0; o < rows; ++o) {
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < n; ++j) {
      double xhat = (x[o * n + j] - mean[o]) * rstd[o], gx = g[o * n + j] * scale[j];
      sg += gx / n;
      sgx += gx * xhat / n;
      ds[j] += g[o * n + j] * xhat;
      db[j] += g[o * n + j];
    }
    for (int64_t j = 0; j < n; ++j) {
      double xhat = (x[o * n + j] - mean[o]) * rstd[o], gx = g[o * n + j] * scale[j];
      dx[o * n + j] = rstd[o] * (gx - sg - xhat * sgx);
    }
  }
  auto check = [&](auto tag, zero::zplan::DType t, double tolerance) {
    using T = decltype(tag);
    auto cast = [](const std::vector<double> &v) { return std::vector<T>(v.begin(), v.end()); };
    std::vector<T> tx = cast(x), tg = cast(g), ts = cast(scale), tm = cast(mean),
                   tr = cast(rstd), tdx(rows * n), tds(n), tdb(n);
    google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
    attrs["axis"].set_i(1);
    using zrt::test::view;
    cpuKernels().at(Kernel::LAYER_NORM_GRAD)(callOf(
        Kernel::LAYER_NORM_GRAD,
        {view(tx, t, {rows, n}), view(ts, t, {n}), view(tm, t, {rows, 1}),
         view(tr, t, {rows, 1}), view(tg, t, {rows, n})},
        {view(tdx, t, {rows, n}), view(tds, t, {n}), view(tdb, t, {n})}, &attrs))();
    double worst = 0, scaleOf = 0;
    for (int64_t i = 0; i < rows * n; ++i) {
      worst = std::max(worst, std::fabs((double)tdx[i] - dx[i]));
      scaleOf = std::max(scaleOf, std::fabs(dx[i]));
    }
    EXPECT_LT(worst, tolerance * scaleOf) << "input gradient";
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_NEAR((double)tds[j], ds[j], tolerance * (1 + std::fabs(ds[j]))) << j;
      EXPECT_NEAR((double)tdb[j], db[j], tolerance * (1 + std::fabs(db[j]))) << j;
    }
    // With a tensor to accumulate: the bits of the ADD kernel after it.
    std::vector<T> res = cast(g), sum(rows * n), adx(rows * n), ads(n), adb(n);
    for (T &v : res)
      v = T(float(v) * 0.75f + 0.5f);
    cpuKernels().at(Kernel::ADD)(callOf(Kernel::ADD, {view(tdx, t, {rows, n}), view(res, t, {rows, n})},
                                        {view(sum, t, {rows, n})}))();
    cpuKernels().at(Kernel::LAYER_NORM_GRAD)(callOf(
        Kernel::LAYER_NORM_GRAD,
        {view(tx, t, {rows, n}), view(ts, t, {n}), view(tm, t, {rows, 1}),
         view(tr, t, {rows, 1}), view(tg, t, {rows, n}), view(res, t, {rows, n})},
        {view(adx, t, {rows, n}), view(ads, t, {n}), view(adb, t, {n})}, &attrs))();
    EXPECT_EQ(0, std::memcmp(adx.data(), sum.data(), sum.size() * sizeof(T)));
    EXPECT_EQ(0, std::memcmp(ads.data(), tds.data(), n * sizeof(T)));
    EXPECT_NE(0, std::memcmp(adx.data(), tdx.data(), n * sizeof(T)));
  };
  check(float{}, zero::zplan::F32, 2e-6);
  check(double{}, zero::zplan::F64, 1e-12);
  check(bf16{}, zero::zplan::BF16, 4e-2);
}

// A softmax gradient with a scale gives the bits of the softmax gradient followed
// by a multiply kernel by that constant (what the compiler folds into it), along
// a contiguous and a strided axis, in f32 and bf16; a scale that is not finite is
// refused.
TEST(Kernels, SoftmaxGradScaleIsTheMultiplyAfterIt) {
  std::vector<double> y(24), g(24);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = 0.03 * double((i * 5) % 11) + 0.01;
    g[i] = std::sin(0.7 * double(i)) * 3;
  }
  const double scale = 0.17677669529663687; // 1/sqrt(32)
  for (int64_t axis : {1, 2}) {
    auto run = [&](auto tag, DType t) {
      using T = decltype(tag);
      std::vector<int64_t> shape = {2, 3, 4};
      std::vector<T> ty(y.begin(), y.end()), tg(g.begin(), g.end()), plain(y.size()),
          twoKernels(y.size()), folded(y.size()), c = {T(scale)};
      google::protobuf::Map<std::string, zero::zplan::Attr> attrs, scaled;
      attrs["axis"].set_i(axis);
      scaled["axis"].set_i(axis);
      scaled["scale"].set_f(scale);
      auto sg = [&](std::vector<T> &out, const google::protobuf::Map<std::string, zero::zplan::Attr> &a) {
        cpuKernels().at(Kernel::SOFTMAX_GRAD)(callOf(
            Kernel::SOFTMAX_GRAD, {zrt::test::view(ty, t, shape), zrt::test::view(tg, t, shape)},
            {zrt::test::view(out, t, shape)}, &a))();
      };
      sg(plain, attrs);
      cpuKernels().at(Kernel::MUL)(callOf(
          Kernel::MUL, {zrt::test::view(plain, t, shape), zrt::test::view(c, t, {})},
          {zrt::test::view(twoKernels, t, shape)}, nullptr))();
      sg(folded, scaled);
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ((float)folded[i], (float)twoKernels[i]) << "axis " << axis << ", element " << i;
    };
    run(float(), zero::zplan::F32);
    run(bf16(), zero::zplan::BF16);
  }
  std::vector<float> a(6), b(6), out(6);
  google::protobuf::Map<std::string, zero::zplan::Attr> bad;
  bad["axis"].set_i(1);
  bad["scale"].set_f(INFINITY);
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX_GRAD)(callOf(
                   Kernel::SOFTMAX_GRAD, {view(a, {2, 3}), view(b, {2, 3})}, {view(out, {2, 3})},
                   &bad)),
               Error);
}

// A softmax with a prologue (the compiler's folded attention scale and mask) gives
// the bits of a multiply kernel by the scale, an add kernel of the bias and the
// softmax kernel after them: a causal mask broadcast over batch and heads, a
// padding mask of one value per row (step 0), a full-shape bias and no bias, in
// f32 and bf16. A prologue along another axis, on a log-softmax, or with a bias
// that does not broadcast is refused.
TEST(Kernels, SoftmaxPrologueIsTheMultiplyAndAddBeforeIt) {
  const std::vector<int64_t> shape = {2, 3, 5, 5};
  const int64_t n = 2 * 3 * 5 * 5;
  std::vector<double> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = std::sin(0.37 * double(i)) * 7;
  const double scale = 0.17677669529663687; // 1/sqrt(32)
  std::vector<double> causal(25), padding(2 * 5), full(n);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j)
      causal[i * 5 + j] = j > i ? -1e9 : 0.0;
  for (size_t i = 0; i < padding.size(); ++i)
    padding[i] = i % 3 == 2 ? -INFINITY : 0.25 * double(i);
  for (int64_t i = 0; i < n; ++i)
    full[i] = std::cos(0.11 * double(i));
  struct Bias {
    const std::vector<double> *values;
    std::vector<int64_t> shape;
  };
  const std::vector<Bias> biases = {
      {&causal, {5, 5}}, {&padding, {2, 1, 5, 1}}, {&full, shape}, {nullptr, {}}};
  auto run = [&](auto tag, DType t) {
    using T = decltype(tag);
    for (const Bias &bias : biases) {
      std::vector<T> tx(x.begin(), x.end()), tb, c = {T(scale)}, scaled(n), masked(n),
          separate(n), folded(n);
      if (bias.values)
        tb.assign(bias.values->begin(), bias.values->end());
      google::protobuf::Map<std::string, zero::zplan::Attr> attrs, prologue;
      attrs["axis"].set_i(3);
      prologue = attrs;
      prologue["scale"].set_f(scale);
      cpuKernels().at(Kernel::MUL)(callOf(
          Kernel::MUL, {zrt::test::view(tx, t, shape), zrt::test::view(c, t, {})},
          {zrt::test::view(scaled, t, shape)}, nullptr))();
      std::vector<TensorView> ins = {zrt::test::view(tx, t, shape)};
      if (bias.values) {
        cpuKernels().at(Kernel::ADD)(callOf(
            Kernel::ADD, {zrt::test::view(scaled, t, shape), zrt::test::view(tb, t, bias.shape)},
            {zrt::test::view(masked, t, shape)}, nullptr))();
        ins.push_back(zrt::test::view(tb, t, bias.shape));
      } else {
        masked = scaled;
      }
      cpuKernels().at(Kernel::SOFTMAX)(callOf(Kernel::SOFTMAX, {zrt::test::view(masked, t, shape)},
                                              {zrt::test::view(separate, t, shape)}, &attrs))();
      cpuKernels().at(Kernel::SOFTMAX)(
          callOf(Kernel::SOFTMAX, ins, {zrt::test::view(folded, t, shape)}, &prologue))();
      EXPECT_EQ(0, std::memcmp(folded.data(), separate.data(), n * sizeof(T)))
          << "bias of rank " << (bias.values ? (int)bias.shape.size() : -1);
      if (bias.values == &causal) // masked scores weigh nothing
        EXPECT_EQ((float)folded[1], 0.0f);
    }
  };
  run(float(), zero::zplan::F32);
  run(bf16(), zero::zplan::BF16);

  std::vector<float> a(n), b(25), out(n);
  google::protobuf::Map<std::string, zero::zplan::Attr> axis2, last, wrong;
  axis2["axis"].set_i(2);
  last["axis"].set_i(3);
  wrong = last;
  wrong["scale"].set_f(INFINITY);
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX)(callOf(
                   Kernel::SOFTMAX, {view(a, shape), view(b, {5, 5})}, {view(out, shape)}, &axis2)),
               Error);
  EXPECT_THROW(cpuKernels().at(Kernel::LOG_SOFTMAX)(callOf(
                   Kernel::LOG_SOFTMAX, {view(a, shape), view(b, {5, 5})}, {view(out, shape)}, &last)),
               Error);
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX)(callOf(
                   Kernel::SOFTMAX, {view(a, shape), view(b, {25})}, {view(out, shape)}, &last)),
               Error);
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX)(
                   callOf(Kernel::SOFTMAX, {view(a, shape)}, {view(out, shape)}, &wrong)),
               Error);
}

TEST(Kernels, MatMulComputesAndChecksShapes) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, c(4);
  auto bound = cpuKernels().at(Kernel::MATMUL)(
      callOf(Kernel::MATMUL, {view(a, {2, 3}), view(b, {3, 2})}, {view(c, {2, 2})}, nullptr));
  bound();
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(a, {2, 3}), view(b, {2, 3})}, {view(c, {2, 2})},
                   nullptr)),
               Error);
}

// A matmul reads and writes strided views in place (a head split of a fused QKV
// projection, a transposed key, a result written column-major into a merged
// layout, a slice's rows merged into one GEMM): the same products as a loop over
// the views, exactly (small integers), in f32, f64 and bf16, whatever the result's
// buffer held before (-1 here: the GEMMs accumulate onto a matrix they clear).
TEST(Kernels, MatMulReadsAndWritesStridedViews) {
  struct View {
    std::vector<int64_t> shape, strides;
    int64_t offset;
  };
  struct Case {
    std::vector<int64_t> aShape, bShape, cShape; // the tensors
    View a, b, c;                                // the operands over them
  };
  const std::vector<Case> cases = {
      // q [2,2,3,2] and k^T [2,2,2,3] read from qkv [2,3,12]; a plain result.
      {{2, 3, 12}, {2, 3, 12}, {2, 2, 3, 3},
       {{2, 2, 3, 2}, {36, 2, 12, 1}, 0}, {{2, 2, 2, 3}, {36, 2, 1, 12}, 4},
       {{2, 2, 3, 3}, {18, 9, 3, 1}, 0}},
      // A result [b,h,d,s] written into [b,s,h,d]: column-major, run as C^T = B^T A^T.
      {{2, 2, 2, 3}, {2, 2, 3, 3}, {2, 3, 2, 2},
       {{2, 2, 2, 3}, {12, 6, 3, 1}, 0}, {{2, 2, 3, 3}, {18, 9, 3, 1}, 0},
       {{2, 2, 2, 3}, {12, 2, 1, 4}, 0}},
      // Rows of a slice [2,3,4] of [2,3,8] times one matrix: one GEMM, lda 8.
      {{2, 3, 8}, {4, 5}, {2, 3, 5},
       {{2, 3, 4}, {24, 8, 1}, 4}, {{4, 5}, {5, 1}, 0}, {{2, 3, 5}, {15, 5, 1}, 0}},
  };
  auto numel = [](const std::vector<int64_t> &s) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    return n;
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case &c = cases[ci];
    std::vector<double> a(numel(c.aShape)), b(numel(c.bShape)), want(numel(c.cShape), -99);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = double((i * 7) % 5) - 2;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = double((i * 3) % 7) - 3;
    // The reference: every (batch, row, column) of the views.
    const View &av = c.a, &bv = c.b, &cv = c.c;
    size_t r = cv.shape.size();
    int64_t m = cv.shape[r - 2], n = cv.shape[r - 1], k = av.shape.back();
    int64_t batches = numel(cv.shape) / (m * n);
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t ao = av.offset, bo = bv.offset, co = cv.offset, rest = bi;
      for (size_t d = r - 2; d-- > 0;) {
        int64_t i = rest % cv.shape[d];
        rest /= cv.shape[d];
        size_t da = d + av.shape.size() - r, db = d + bv.shape.size() - r;
        if (d + av.shape.size() >= r)
          ao += i * av.strides[da];
        if (d + bv.shape.size() >= r)
          bo += i * bv.strides[db];
        co += i * cv.strides[d];
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += a[ao + i * av.strides[av.shape.size() - 2] + p * av.strides.back()] *
                   b[bo + p * bv.strides[bv.shape.size() - 2] + j * bv.strides.back()];
          want[co + i * cv.strides[r - 2] + j * cv.strides[r - 1]] = sum;
        }
    }
    google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
    auto setView = [&](const std::string &name, const View &v) {
      for (int64_t e : v.shape)
        attrs[name + "_shape"].mutable_ints()->add_values(e);
      for (int64_t e : v.strides)
        attrs[name + "_strides"].mutable_ints()->add_values(e);
      attrs[name + "_offset"].set_i(v.offset);
    };
    setView("lhs", av);
    setView("rhs", bv);
    setView("out", cv);
    auto run = [&](auto tag, DType t) {
      using T = decltype(tag);
      std::vector<T> ta(a.begin(), a.end()), tb(b.begin(), b.end()), tc(want.size(), T(-1));
      cpuKernels().at(Kernel::MATMUL)(callOf(
          Kernel::MATMUL,
          {zrt::test::view(ta, t, c.aShape), zrt::test::view(tb, t, c.bShape)},
          {zrt::test::view(tc, t, c.cShape)}, &attrs))();
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ((float)tc[i], (float)want[i]) << "case " << ci << ", element " << i;
    };
    run(float(), zero::zplan::F32);
    run(double(), zero::zplan::F64);
    run(bf16(), zero::zplan::BF16);
  }
}

// The plan joins a step's optimizer updates into one kernel (operand_segments
// [N, N, N, N, scalars...], outputs N per result): it updates each tensor exactly
// as a kernel of its own would. Segments that do not describe the operands are
// refused.
TEST(Kernels, OptimizerOverSeveralTensors) {
  auto attrsOf = [](std::vector<int64_t> segments, double lr) {
    zrt::test::Attrs a;
    for (int64_t e : segments)
      a["operand_segments"].mutable_ints()->add_values(e);
    for (const char *name : {"beta1", "beta2", "eps", "weight_decay", "momentum"})
      a[name].set_f(0.5);
    a["lr"].set_f(lr);
    return a;
  };
  std::vector<int64_t> step = {3};
  std::vector<float> g1 = {0.5f, -1, 2}, g2 = {3, -0.25f, 1, 0, -2};
  // Separately, then joined: p, m and v of each tensor start alike.
  std::vector<std::vector<float>> apart = {{1, 2, 3}, {0.1f, 0.2f, 0.3f}, {1, 1, 1},
                                           {4, 5, 6, 7, 8}, {0, 0, 1, 1, 0}, {2, 2, 2, 2, 2}};
  std::vector<std::vector<float>> joined = apart;
  zrt::test::Attrs one = attrsOf({1, 1, 1, 1, 1, 0, 0, 0}, 0.1), two = attrsOf({2, 2, 2, 2, 1, 0, 0, 0}, 0.1);
  auto v = [](std::vector<float> &x) { return view(x, {(int64_t)x.size()}); };
  TensorView t = zrt::test::view(step, zero::zplan::I64, {});
  for (int k = 0; k < 2; ++k) {
    auto &a = apart;
    std::vector<float> &g = k ? g2 : g1;
    cpuKernels().at(Kernel::ADAMW)(callOf(Kernel::ADAMW, {v(a[3 * k]), v(g), v(a[3 * k + 1]), v(a[3 * k + 2]), t},
                                          {v(a[3 * k]), v(a[3 * k + 1]), v(a[3 * k + 2])}, &one))();
  }
  auto &j = joined;
  cpuKernels().at(Kernel::ADAMW)(callOf(
      Kernel::ADAMW, {v(j[0]), v(j[3]), v(g1), v(g2), v(j[1]), v(j[4]), v(j[2]), v(j[5]), t},
      {v(j[0]), v(j[3]), v(j[1]), v(j[4]), v(j[2]), v(j[5])}, &two))();
  EXPECT_EQ(joined, apart);
  EXPECT_NE(apart[0], (std::vector<float>{1, 2, 3})); // it did update
  // SGD: p and its momentum buffer.
  std::vector<std::vector<float>> sApart = {{1, 2, 3}, {1, 0, 1}, {4, 5, 6, 7, 8}, {0, 1, 0, 1, 0}};
  std::vector<std::vector<float>> sJoined = sApart;
  zrt::test::Attrs sOne = attrsOf({1, 1, 1, 0, 0, 0}, 0.1), sTwo = attrsOf({2, 2, 2, 0, 0, 0}, 0.1);
  for (int k = 0; k < 2; ++k) {
    auto &a = sApart;
    std::vector<float> &g = k ? g2 : g1;
    cpuKernels().at(Kernel::SGD)(callOf(Kernel::SGD, {v(a[2 * k]), v(g), v(a[2 * k + 1])},
                                        {v(a[2 * k]), v(a[2 * k + 1])}, &sOne))();
  }
  auto &s = sJoined;
  cpuKernels().at(Kernel::SGD)(callOf(Kernel::SGD, {v(s[0]), v(s[2]), v(g1), v(g2), v(s[1]), v(s[3])},
                                      {v(s[0]), v(s[2]), v(s[1]), v(s[3])}, &sTwo))();
  EXPECT_EQ(sJoined, sApart);
  // Two tensors' segments over one tensor's operands.
  EXPECT_THROW(cpuKernels().at(Kernel::ADAMW)(callOf(
                   Kernel::ADAMW, {v(j[0]), v(g1), v(j[1]), v(j[2]), t},
                   {v(j[0]), v(j[1]), v(j[2])}, &two)),
               Error);
}

// A weight gradient Gᵀ X with its bias gradient (lhs_sums: G's column sums), G
// read transposed in place; and lhs_sums of an untransposed lhs (its row sums).
// A batched product or sums of the wrong length are refused.
TEST(Kernels, MatMulLhsSums) {
  std::vector<float> g = {1, 2, 3, 4, 5, 6, 7, 8}, x = {1, 0, 0, 1, 2, 2, 1, 1};
  std::vector<float> dw(4), db(2);
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  for (int64_t e : {1, 1, 0, 0})
    attrs["operand_segments"].mutable_ints()->add_values(e);
  auto transposed = attrs;
  transposed["transpose_lhs"].set_i(1); // booleans are integers in a plan
  // G is [4 rows, 2 columns]; Gᵀ X is [2, 2].
  cpuKernels().at(Kernel::MATMUL)(callOf(Kernel::MATMUL, {view(g, {4, 2}), view(x, {4, 2})},
                                         {view(dw, {2, 2}), view(db, {2})}, &transposed))();
  EXPECT_EQ(db, (std::vector<float>{1 + 3 + 5 + 7, 2 + 4 + 6 + 8}));
  EXPECT_EQ(dw, (std::vector<float>{1 + 10 + 7, 3 + 10 + 7, 2 + 12 + 8, 4 + 12 + 8}));
  std::vector<float> y(16), rows(4);
  cpuKernels().at(Kernel::MATMUL)(callOf(Kernel::MATMUL, {view(g, {4, 2}), view(x, {2, 4})},
                                         {view(y, {4, 4}), view(rows, {4})}, &attrs))();
  EXPECT_EQ(rows, (std::vector<float>{3, 7, 11, 15}));
  std::vector<float> wrong(3), batched(16);
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(g, {4, 2}), view(x, {4, 2})},
                   {view(dw, {2, 2}), view(wrong, {3})}, &transposed)),
               Error);
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(g, {2, 2, 2}), view(x, {2, 4})},
                   {view(batched, {2, 2, 4}), view(wrong, {2})}, &attrs)),
               Error);
}

// GELU (tanh form) in a product's epilogue, on the CPU: the forward equals the
// matmul with its bias then the gelu_tanh kernel, keeping the pre-activation; the
// gradient equals the matmul then gelu_tanh_grad on the kept pre-activation; bit
// for bit, as the kernels they replace. An addend beside it, an unknown activation
// or a pre-activation of another shape are refused.
TEST(Kernels, MatMulGeluTanhEpilogue) {
  std::vector<float> x = {0.5f, -1, 2, 0.25f, -0.75f, 1.5f}, w = {1, -2, 0.5f, 0.3f, 1.1f, -0.4f},
                     b = {0.1f, -0.2f};
  auto attrsOf = [](std::vector<int64_t> segments, const char *activation) {
    google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
    for (int64_t e : segments)
      attrs["operand_segments"].mutable_ints()->add_values(e);
    if (activation)
      attrs["activation"].set_s(activation);
    return attrs;
  };
  auto run = [](KernelKind k, std::vector<TensorView> ins, std::vector<TensorView> outs,
                const google::protobuf::Map<std::string, zero::zplan::Attr> *attrs) {
    cpuKernels().at(k)(callOf(k, ins, outs, attrs))();
  };
  // [3, 2] x [2, 2] + bias.
  std::vector<float> g(6), pre(6), wantPre(6), want(6);
  auto forward = attrsOf({1, 1, 1, 0, 0}, "gelu_tanh");
  run(Kernel::MATMUL, {view(x, {3, 2}), view(w, {2, 2}), view(b, {2})},
      {view(g, {3, 2}), view(pre, {3, 2})}, &forward);
  auto biasOnly = attrsOf({1, 1, 1, 0}, nullptr);
  run(Kernel::MATMUL, {view(x, {3, 2}), view(w, {2, 2}), view(b, {2})}, {view(wantPre, {3, 2})},
      &biasOnly);
  run(Kernel::GELU_TANH, {view(wantPre, {3, 2})}, {view(want, {3, 2})}, nullptr);
  EXPECT_EQ(pre, wantPre);
  EXPECT_EQ(g, want);
  // The gradient of the GELU input from that of the output, dy w.
  std::vector<float> dy = {1, 2, -1, 0.5f, 3, -2}, dx(6), dg(6), wantDx(6);
  auto backward = attrsOf({1, 1, 0, 0, 1}, "gelu_tanh");
  run(Kernel::MATMUL, {view(dy, {3, 2}), view(w, {2, 2}), view(pre, {3, 2})}, {view(dx, {3, 2})},
      &backward);
  run(Kernel::MATMUL, {view(dy, {3, 2}), view(w, {2, 2})}, {view(dg, {3, 2})}, nullptr);
  run(Kernel::GELU_TANH_GRAD, {view(pre, {3, 2}), view(dg, {3, 2})}, {view(wantDx, {3, 2})},
      nullptr);
  EXPECT_EQ(dx, wantDx);
  for (float v : dx)
    EXPECT_TRUE(std::isfinite(v));
  std::vector<float> r(6), small(4);
  auto withAddend = attrsOf({1, 1, 0, 1, 0}, "gelu_tanh");
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(x, {3, 2}), view(w, {2, 2}), view(r, {3, 2})},
                   {view(g, {3, 2}), view(pre, {3, 2})}, &withAddend)),
               Error);
  auto relu = attrsOf({1, 1, 1, 0, 0}, "relu");
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(x, {3, 2}), view(w, {2, 2}), view(b, {2})},
                   {view(g, {3, 2}), view(pre, {3, 2})}, &relu)),
               Error);
  EXPECT_THROW(cpuKernels().at(Kernel::MATMUL)(callOf(
                   Kernel::MATMUL, {view(x, {3, 2}), view(w, {2, 2}), view(b, {2})},
                   {view(g, {3, 2}), view(small, {2, 2})}, &forward)),
               Error);
}

// The overflow count over several tensors of different float dtypes: inf and NaN
// counted from the bits, finite extremes not.
TEST(Kernels, NonfiniteCountOverTensors) {
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> a = {inf, 1, nan, std::numeric_limits<float>::max()};
  std::vector<bf16> b = {bf16(1.0f), bf16(-inf), bf16(3.0e38f)};
  std::vector<f16> c = {f16(65504.0f), f16(nan)};
  std::vector<double> d = {1e300, -std::numeric_limits<double>::infinity()};
  std::vector<float> count(1, -1);
  cpuKernels().at(Kernel::NONFINITE_COUNT)(callOf(
      Kernel::NONFINITE_COUNT,
      {view(a, {4}), zrt::test::view(b, zero::zplan::BF16, {3}),
       zrt::test::view(c, zero::zplan::F16, {2}), zrt::test::view(d, zero::zplan::F64, {2})},
      {view(count, {})}, nullptr))();
  EXPECT_EQ(count[0], 5.0f);
  EXPECT_THROW(cpuKernels().at(Kernel::NONFINITE_COUNT)(
                   callOf(Kernel::NONFINITE_COUNT, {}, {view(count, {})}, nullptr)),
               Error);
}

TEST(Kernels, BroadcastAdd) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30}, c(6);
  cpuKernels().at(Kernel::ADD)(
      callOf(Kernel::ADD, {view(a, {2, 3}), view(b, {3})}, {view(c, {2, 3})}, nullptr))();
  EXPECT_EQ(c, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::vector<float> bad(4);
  EXPECT_THROW(cpuKernels().at(Kernel::ADD)(callOf(
                   Kernel::ADD, {view(a, {2, 3}), view(bad, {4})}, {view(c, {2, 3})}, nullptr)),
               Error);
}

TEST(Kernels, GatherIndexOutOfRangeThrows) {
  std::vector<float> table = {1, 2, 3, 4}, out(2);
  std::vector<int64_t> idx = {1, 7};
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  attrs["axis"].set_i(0);
  KernelCall call = callOf(Kernel::GATHER, {view(table, {4}), TensorView{idx.data(),
                                      zero::zplan::I64, {2}}},
                           {view(out, {2})}, &attrs);
  auto bound = cpuKernels().at(Kernel::GATHER)(call);
  try {
    bound();
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("index 7 out of range"), std::string::npos);
  }
}

TEST(Kernels, MissingAttributeIsAnError) {
  std::vector<float> x(4), y(4);
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX)(
                   callOf(Kernel::SOFTMAX, {view(x, {4})}, {view(y, {4})}, &attrs)),
               Error);
}

// softmax_grad, y (g - sum(g y)) along the axis, is no ONNX node: checked here over a
// contiguous axis (rows) and a strided one, in f32 and bf16, against the formula in
// double (the inputs are dyadic, so every product and sum is exact and both sides
// round the same double once).
TEST(Kernels, SoftmaxGradRowsAndStridedAxis) {
  const std::vector<double> y = {0.25, 0.5,   0.25, 0.125, 0.375, 0.5,
                                 0.75, 0.125, 0.125, 0.5,  0.25,  0.25};
  const std::vector<double> g = {1, -2, 0.5, 3, 0, -1, 0.25, 2, -0.5, 1.5, -3, 4};
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis, outer, dim, inner;
  };
  for (const Case &c : {Case{{4, 3}, 1, 4, 3, 1}, Case{{2, 3, 2}, 1, 2, 3, 2}}) {
    std::vector<double> want(y.size());
    for (int64_t o = 0; o < c.outer; ++o)
      for (int64_t i = 0; i < c.inner; ++i) {
        double dot = 0;
        for (int64_t d = 0; d < c.dim; ++d)
          dot += y[(o * c.dim + d) * c.inner + i] * g[(o * c.dim + d) * c.inner + i];
        for (int64_t d = 0; d < c.dim; ++d) {
          int64_t at = (o * c.dim + d) * c.inner + i;
          want[at] = y[at] * (g[at] - dot);
        }
      }
    google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
    attrs["axis"].set_i(c.axis);
    auto run = [&](auto tag, DType t) {
      using T = decltype(tag);
      std::vector<T> ty(y.begin(), y.end()), tg(g.begin(), g.end()), dx(y.size());
      cpuKernels().at(Kernel::SOFTMAX_GRAD)(callOf(
          Kernel::SOFTMAX_GRAD,
          {zrt::test::view(ty, t, c.shape), zrt::test::view(tg, t, c.shape)},
          {zrt::test::view(dx, t, c.shape)}, &attrs))();
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_EQ((float)dx[k], (float)T(want[k])) << "element " << k << " of dim " << c.dim;
    };
    run(float(), zero::zplan::F32);
    run(bf16(), zero::zplan::BF16);
  }
  std::vector<float> a(6), b(6), out(6);
  google::protobuf::Map<std::string, zero::zplan::Attr> far;
  far["axis"].set_i(2);
  EXPECT_THROW(cpuKernels().at(Kernel::SOFTMAX_GRAD)(callOf(
                   Kernel::SOFTMAX_GRAD, {view(a, {2, 3}), view(b, {2, 3})},
                   {view(out, {2, 3})}, &far)),
               Error);
}

google::protobuf::Map<std::string, zero::zplan::Attr> reduceAttrs(std::vector<int64_t> axes) {
  google::protobuf::Map<std::string, zero::zplan::Attr> attrs;
  for (int64_t a : axes)
    attrs["axes"].mutable_ints()->add_values(a);
  attrs["keepdims"].set_i(0);
  return attrs;
}

// The vectorized reductions: over leading dimensions, over trailing ones, over
// everything, and over empty extents (no division by a zero row length).
TEST(Kernels, ReduceSumFastPathsAndEmptyExtents) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, cols(3), rows(2), all(1);
  auto leading = reduceAttrs({0}), trailing = reduceAttrs({1}), both = reduceAttrs({0, 1});
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(x, {2, 3})}, {view(cols, {3})}, &leading))();
  EXPECT_EQ(cols, (std::vector<float>{5, 7, 9}));
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(x, {2, 3})}, {view(rows, {2})}, &trailing))();
  EXPECT_EQ(rows, (std::vector<float>{6, 15}));
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(x, {2, 3})}, {view(all, {})}, &both))();
  EXPECT_EQ(all, (std::vector<float>{21}));
  std::vector<float> empty, four(4, -1.0f);
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(empty, {4, 0})}, {view(four, {4})}, &trailing))();
  EXPECT_EQ(four, (std::vector<float>(4, 0.0f)));
  four.assign(4, -1.0f);
  cpuKernels().at(Kernel::REDUCE_SUM)(
      callOf(Kernel::REDUCE_SUM, {view(empty, {0, 4})}, {view(four, {4})}, &leading))();
  EXPECT_EQ(four, (std::vector<float>(4, 0.0f)));
}

} // namespace
