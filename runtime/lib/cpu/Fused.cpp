//===- Fused.cpp - The fused elementwise kernel on the CPU ----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Runs a fused program (zplan/FusedProgram.h) over blocks of kBlock output elements:
// the inputs' elements of a block are loaded into f32 scratch rows, each
// instruction is one vectorized loop from rows to a row, and the last row is
// stored. The rows stay in the L1 cache, so each tensor is read or written once.
// What need not be copied is not: a contiguous f32 input is read where it lies, an
// f32 result is written where it goes, and the rows that stay the same along a run
// (constants, inputs broadcast along it) are filled once per run.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "../kernels/FusedMath.h"
#include "zplan/FusedProgram.h"

#include <algorithm>
#include <cstring>

using namespace zrt;
using namespace zrt::cpu;

namespace {

using fused::Op;
using kernels::BinaryOp;
using kernels::UnaryOp;

constexpr int64_t kBlock = 256;
constexpr int kMaxValues = fused::kMaxInputs + fused::kMaxInstructions;

/// dst[j] = p[j * stride] in f32, for j < n.
template <typename T>
ZRT_VECTORIZED void loadRun(const void *base, int64_t at, int64_t stride, float *dst,
                            int64_t n) {
  const T *p = static_cast<const T *>(base) + at;
  if (stride == 0) {
    float v = float(p[0]);
    for (int64_t j = 0; j < n; ++j)
      dst[j] = v;
  } else if (stride == 1) {
    for (int64_t j = 0; j < n; ++j)
      dst[j] = float(p[j]);
  } else {
    for (int64_t j = 0; j < n; ++j)
      dst[j] = float(p[j * stride]);
  }
}
using Loader = void (*)(const void *, int64_t, int64_t, float *, int64_t);

template <typename T> ZRT_VECTORIZED void storeRun(const float *src, void *base, int64_t at, int64_t n) {
  T *o = static_cast<T *>(base) + at;
  for (int64_t j = 0; j < n; ++j)
    o[j] = T(src[j]);
}
using Storer = void (*)(const float *, void *, int64_t, int64_t);

template <UnaryOp K> ZRT_VECTORIZED void unaryBlock(const float *x, float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = kernels::unary<K>(x[j]);
}
template <BinaryOp K>
ZRT_VECTORIZED void binaryBlock(const float *x, const float *y, float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = kernels::binary<K>(x[j], y[j]);
}
void powBlock(const float *x, const float *y, float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = kernels::power(x[j], y[j]);
}
ZRT_VECTORIZED void whereBlock(const float *c, const float *x, const float *y, float *o,
                               int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = c[j] != 0.0f ? x[j] : y[j];
}
template <kernels::ActivationGrad K>
ZRT_VECTORIZED void activationGradBlock(const float *x, const float *g, float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = kernels::activationGrad<K>(x[j], g[j]);
}
ZRT_VECTORIZED void fillBlock(float v, float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = v;
}
ZRT_VECTORIZED void copyBlock(const float *x, float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = x[j];
}
template <typename T> ZRT_VECTORIZED void roundBlock(float *o, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    o[j] = float(T(o[j]));
}

/// The loops by op, in the order of kernels::UnaryOp (the records of
/// zplan/UnaryOps.def) and kernels::BinaryOp.
using UnaryBlock = void (*)(const float *, float *, int64_t);
const UnaryBlock unaryBlocks[] = {
#define ZERO_UNARY_OP(ID, ...) unaryBlock<UnaryOp::ID>,
#include "zplan/UnaryOps.def"
};
using BinaryBlock = void (*)(const float *, const float *, float *, int64_t);
const BinaryBlock binaryBlocks[] = {binaryBlock<BinaryOp::Add>, binaryBlock<BinaryOp::Sub>,
                                        binaryBlock<BinaryOp::Mul>, binaryBlock<BinaryOp::Div>};

/// A Const instruction's value.
float constantOf(const fused::Instruction &ins) {
  double v;
  static_assert(sizeof v == sizeof ins.a);
  std::memcpy(&v, &ins.a, sizeof v);
  return float(v);
}

/// One instruction over a block: `o` from the values it reads (val[i]: value i's
/// n elements).
void execute(const fused::Instruction &ins, const float *const *val, float *o, int64_t n) {
  int reads = fused::operandCount(ins.op);
  const float *a = reads > 0 ? val[ins.a] : nullptr, *b = reads > 1 ? val[ins.b] : nullptr,
              *c = reads > 2 ? val[ins.c] : nullptr;
  switch (ins.op) {
  case Op::Const:
    fillBlock(constantOf(ins), o, n);
    break;
#define ZERO_UNARY_OP(ID, ...) case Op::ID:
#include "zplan/UnaryOps.def"
    unaryBlocks[(int)kernels::unaryOf(ins.op)](a, o, n);
    break;
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
    binaryBlocks[(int)kernels::binaryOf(ins.op)](a, b, o, n);
    break;
  case Op::Pow:
    powBlock(a, b, o, n);
    break;
  case Op::Cast:
    copyBlock(a, o, n);
    break;
  case Op::Where:
    whereBlock(a, b, c, o, n);
    break;
  case Op::ReluGrad:
    activationGradBlock<kernels::ActivationGrad::Relu>(a, b, o, n);
    break;
  case Op::GeluGrad:
    activationGradBlock<kernels::ActivationGrad::Gelu>(a, b, o, n);
    break;
  case Op::GeluTanhGrad:
    activationGradBlock<kernels::ActivationGrad::GeluTanh>(a, b, o, n);
    break;
  default:
    break; // decodeProgram refused it
  }
  if (ins.type == fused::Type::BF16)
    roundBlock<bf16>(o, n);
  else if (ins.type == fused::Type::F16)
    roundBlock<f16>(o, n);
}

fused::Type typeOf(const KernelCall &call, DType t, const char *what) {
  switch (t) {
  case zero::zplan::F32:
    return fused::Type::F32;
  case zero::zplan::BF16:
    return fused::Type::BF16;
  case zero::zplan::F16:
    return fused::Type::F16;
  default:
    ZRT_FAIL(call.where() << ": " << what << " has dtype " << dtypeName(t)
                          << "; a fused kernel computes f32, bf16 and f16 values");
  }
}

/// Whether `in` stretches to `out` by numpy's rules without changing it.
bool broadcastsTo(const Shape &in, const Shape &out) {
  if (in.size() > out.size())
    return false;
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t e = in[in.size() - 1 - d], o = out[out.size() - 1 - d];
    if (e != o && e != 1)
      return false;
  }
  return true;
}

BoundKernel bindFused(const KernelCall &call) {
  int n = (int)call.ins.size();
  std::vector<fused::Instruction> code;
  std::string problem = fused::decodeProgram(call.intsAttr("program"), n, code);
  ZRT_CHECK(problem.empty(), call.where() << ": " << problem);
  call.expectArity(n, 1);
  const TensorView out = call.outs[0];

  // Bool inputs are Where's conditions and nothing else; the others are values.
  std::vector<char> condition(n, 0), value(n, 0);
  for (const fused::Instruction &ins : code) {
    int reads = fused::operandCount(ins.op);
    const int64_t operands[3] = {ins.a, ins.b, ins.c};
    for (int k = 0; k < reads; ++k) {
      bool isCondition = ins.op == Op::Where && k == 0;
      ZRT_CHECK(!isCondition || operands[k] < n,
                call.where() << ": where's condition must be an input");
      if (operands[k] < n)
        (isCondition ? condition : value)[operands[k]] = 1;
    }
  }
  std::vector<TensorView> ins = call.ins;
  std::array<Shape, fused::kMaxInputs> strides;
  std::vector<Loader> load(n);
  for (int k = 0; k < n; ++k) {
    const TensorView &in = ins[k];
    std::string name = "input " + std::to_string(k);
    if (condition[k]) {
      ZRT_CHECK(!value[k] && in.dtype == zero::zplan::BOOL,
                call.where() << ": " << name << " is a condition and must be bool only");
    } else {
      typeOf(call, in.dtype, name.c_str());
    }
    ZRT_CHECK(broadcastsTo(in.shape, out.shape),
              call.where() << ": " << name << " of shape " << shapeString(in.shape)
                           << " does not broadcast to the result's "
                           << shapeString(out.shape));
    strides[k] = broadcastStrides(in.shape, out.shape);
    load[k] = dispatchAny(in.dtype, call,
                          [](auto tag) -> Loader { return loadRun<decltype(tag)>; });
  }
  for (int k = n; k < fused::kMaxInputs; ++k)
    strides[k] = Shape(out.shape.size(), 0);
  ZRT_CHECK(typeOf(call, out.dtype, "the result") == code.back().type,
            call.where() << ": the result's dtype " << dtypeName(out.dtype)
                         << " is not the last instruction's type");
  Storer store =
      dispatchAny(out.dtype, call, [](auto tag) -> Storer { return storeRun<decltype(tag)>; });
  std::vector<char> inPlace(n); // f32 inputs read where they lie when contiguous
  for (int k = 0; k < n; ++k)
    inPlace[k] = ins[k].dtype == zero::zplan::F32;
  bool storeInPlace = out.dtype == zero::zplan::F32;
  int steps = (int)code.size();
  return [=] {
    forEachRun<fused::kMaxInputs>(
        out.shape, strides, [&](int64_t at, auto off, auto step, int64_t count) {
          alignas(64) float row[kMaxValues][kBlock];
          const float *val[kMaxValues];
          for (int v = 0; v < n + steps; ++v)
            val[v] = row[v];
          // The same along the run: broadcast inputs and constants.
          int64_t first = std::min(kBlock, count);
          for (int k = 0; k < n; ++k)
            if (step[k] == 0)
              load[k](ins[k].data, off[k], 0, row[k], first);
          for (int i = 0; i < steps; ++i)
            if (code[i].op == Op::Const)
              execute(code[i], val, row[n + i], first); // rounded to its type
          for (int64_t lo = 0; lo < count; lo += kBlock) {
            int64_t m = std::min(kBlock, count - lo);
            for (int k = 0; k < n; ++k) {
              if (step[k] == 0)
                continue;
              if (inPlace[k] && step[k] == 1)
                val[k] = ins[k].as<float>() + off[k] + lo;
              else
                load[k](ins[k].data, off[k] + lo * step[k], step[k], row[k], m);
            }
            for (int i = 0; i < steps; ++i) {
              bool last = i == steps - 1;
              if (code[i].op == Op::Const && !(last && storeInPlace))
                continue; // filled above
              float *o = last && storeInPlace ? out.as<float>() + at + lo : row[n + i];
              execute(code[i], val, o, m);
              val[n + i] = o;
            }
            if (!storeInPlace)
              store(val[n + steps - 1], out.data, at + lo, m);
          }
        });
  };
}

} // namespace

void zrt::addFusedKernels(KernelTable &t) { t[Kernel::FUSED] = bindFused; }
