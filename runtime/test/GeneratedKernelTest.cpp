//===- GeneratedKernelTest.cpp - Generated fused kernels against the interpreter ===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Random fused programs (every op, f32/bf16/f16 values, bool conditions, broadcast
// inputs, misaligned tensors, lengths that are not a multiple of a thread's
// elements) run on the emulated GPU twice: through the interpreter kernel and
// through their generated kernels (lib/cuda/FusedKernelSource.h), compiled as one
// translation unit for the host. The outputs must be the same bytes (NaNs only
// need to be NaNs: the host compiler may commute an addition of two NaNs).
//
//===----------------------------------------------------------------------===//

#include "../lib/cuda/CudaLaunch.h"
#include "../lib/cuda/FusedKernelSource.h"
#include "../lib/cuda/GeneratedKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace zrt;
using namespace zrt::cuda;

namespace {

int bytesOf(Elem t) { return t == Elem::F32 ? 4 : t == Elem::U8 ? 1 : 2; }

float valueAt(Elem t, const std::vector<char> &host, int64_t i) {
  if (t == Elem::F32) {
    float v;
    std::memcpy(&v, host.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, host.data() + 2 * i, 2);
  return t == Elem::BF16 ? floatFromBf16(h) : floatFromF16(h);
}

struct Tensor {
  Elem type;
  std::vector<int64_t> shape; // broadcast against the output's, aligned right
  int64_t offset;             // elements past a 256-byte aligned allocation
  char *device = nullptr;
  std::vector<char> host;
};

struct Case {
  std::vector<fused::Instruction> code;
  std::vector<Tensor> ins;
  Tensor out;
  std::vector<int64_t> outShape;
  FusedArgs args;
  FusedKernelSource source;
  std::shared_ptr<GeneratedKernels::Kernel> kernel;
  std::vector<uint64_t> params;
};

int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

Strided viewOf(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
  Strided s;
  s.rank = (int)out.size();
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    int64_t extent = in[d];
    s.shape[d] = out[d];
    s.stride[d] = extent == 1 ? 0 : stride;
    stride *= extent;
  }
  s.contiguous = isRowMajor(s);
  return s;
}

Case randomCase(std::mt19937 &rng) {
  auto pick = [&](int n) { return (int)(rng() % n); };
  const int64_t extents[] = {1, 2, 3, 5, 7, 8, 16, 33};
  const Elem floats[] = {Elem::F32, Elem::BF16, Elem::F16};
  Case c;
  int rank = 1 + pick(4);
  for (int d = 0; d < rank; ++d)
    c.outShape.push_back(extents[pick(8)]);
  bool withBool = pick(3) == 0;
  int inputs = 1 + withBool + pick(4 - withBool); // a float input besides the bool
  for (int k = 0; k < inputs; ++k) {
    Tensor t;
    t.type = withBool && k == 0 ? Elem::U8 : floats[pick(3)];
    for (int64_t e : c.outShape)
      t.shape.push_back(pick(3) == 0 ? 1 : e); // broadcast along some dimensions
    t.offset = pick(2) ? 0 : pick(8);
    c.ins.push_back(t);
  }
  // Instructions: any op on earlier float values; Where's condition is the bool.
  int count = 1 + pick(10);
  auto floatValue = [&](int j) {
    for (;;) {
      int v = pick(inputs + j);
      if (v >= inputs || c.ins[v].type != Elem::U8)
        return v;
    }
  };
  for (int j = 0; j < count; ++j) {
    fused::Instruction x{};
    x.type = fused::Type(pick(3));
    int op = pick((int)fused::Op::Count);
    x.op = fused::Op(op);
    if (x.op == fused::Op::Where && !withBool)
      x.op = fused::Op::Mul;
    if (x.op == fused::Op::Const) {
      double value = std::uniform_real_distribution<double>(-4, 4)(rng);
      std::memcpy(&x.a, &value, sizeof value);
    } else if (x.op == fused::Op::Where) {
      x.a = 0;
      x.b = floatValue(j);
      x.c = floatValue(j);
    } else {
      int reads = fused::operandCount(x.op);
      x.a = floatValue(j);
      x.b = reads > 1 ? floatValue(j) : 0;
    }
    c.code.push_back(x);
  }
  c.out.type = floats[pick(3)];
  c.out.shape = c.outShape;
  c.out.offset = pick(2) ? 0 : pick(8);
  return c;
}

void fill(std::mt19937 &rng, Tensor &t, const std::vector<int64_t> &outShape) {
  int64_t n = numel(t.shape);
  t.host.assign((size_t)(n + t.offset) * bytesOf(t.type), 0);
  std::uniform_real_distribution<float> value(-3, 3);
  for (int64_t i = 0; i < n; ++i) {
    char *at = t.host.data() + (i + t.offset) * bytesOf(t.type);
    float v = rng() % 16 == 0 ? 0.0f : value(rng);
    if (t.type == Elem::U8)
      *at = (char)(rng() % 2);
    else if (t.type == Elem::F32)
      std::memcpy(at, &v, 4);
    else {
      uint16_t h = t.type == Elem::BF16 ? bf16FromFloat(v) : f16FromFloat(v);
      std::memcpy(at, &h, 2);
    }
  }
  ASSERT_EQ(cudaMalloc(&t.device, t.host.size() + 16), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(t.device, t.host.data(), t.host.size(), cudaMemcpyHostToDevice),
            cudaSuccess);
}

TEST(GeneratedKernel, BitIdenticalToTheInterpreter) {
  std::mt19937 rng(7);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  GeneratedKernels generated;
  std::vector<Case> cases(300);
  for (Case &c : cases) {
    c = randomCase(rng);
    for (Tensor &t : c.ins)
      fill(rng, t, c.outShape);
    int64_t n = numel(c.outShape);
    for (int copy = 0; copy < 2; ++copy) { // the interpreter's output, then the kernel's
      Tensor &o = c.out;
      o.host.assign((size_t)(n + o.offset) * bytesOf(o.type), 0);
    }
    ASSERT_EQ(cudaMalloc(&c.out.device, 2 * (c.out.host.size() + 16)), cudaSuccess);

    FusedArgs &a = c.args;
    a.inputs = (int)c.ins.size();
    a.instructions = (int)c.code.size();
    std::vector<FusedOperand> operands;
    for (int k = 0; k < a.inputs; ++k) {
      const Tensor &t = c.ins[k];
      a.in[k] = t.device + t.offset * bytesOf(t.type);
      a.inType[k] = t.type;
      a.view[k] = viewOf(t.shape, c.outShape);
      operands.push_back({t.type, a.view[k], reinterpret_cast<uintptr_t>(a.in[k]) % 16 == 0});
      c.params.push_back(reinterpret_cast<uint64_t>(a.in[k]));
    }
    for (int j = 0; j < a.instructions; ++j) {
      const fused::Instruction &x = c.code[j];
      int reads = fused::operandCount(x.op);
      a.code[j] = {x.op, x.type, reads > 0 ? (int)x.a : 0, reads > 1 ? (int)x.b : 0,
                   reads > 2 ? (int)x.c : 0, 0.0f};
      if (x.op == fused::Op::Const) {
        double d;
        std::memcpy(&d, &x.a, sizeof d);
        a.code[j].constant = (float)d;
      }
    }
    a.out = c.out.device + c.out.offset * bytesOf(c.out.type);
    a.outType = c.out.type;
    // The generated kernel writes a second copy, after the interpreter's.
    char *second = c.out.device + c.out.host.size() + 16;
    void *generatedOut = second + c.out.offset * bytesOf(c.out.type);
    FusedOperand out{c.out.type, viewOf(c.outShape, c.outShape),
                     reinterpret_cast<uintptr_t>(generatedOut) % 16 == 0};
    c.source = fusedKernelSource(c.code, operands, out, n);
    c.kernel = generated.add(c.source);
    c.params.push_back(reinterpret_cast<uint64_t>(generatedOut));
    c.params.push_back((uint64_t)n);
  }
  generated.compile();
  EXPECT_EQ(generated.loaded(), cases.size());
  int vectorized = 0, misaligned = 0;
  for (Case &c : cases) {
    int64_t n = numel(c.outShape);
    fusedElementwise(stream, c.args, n);
    generated.launch(*c.kernel, stream, c.params.data());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<char> both(2 * (c.out.host.size() + 16));
    ASSERT_EQ(cudaMemcpy(both.data(), c.out.device, both.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    std::vector<char> interpreted(both.begin() + c.out.offset * bytesOf(c.out.type),
                                  both.begin() + c.out.host.size());
    size_t second = c.out.host.size() + 16 + c.out.offset * bytesOf(c.out.type);
    std::vector<char> compiled(both.begin() + second,
                               both.begin() + second + interpreted.size());
    for (int64_t i = 0; i < n; ++i) {
      float x = valueAt(c.out.type, interpreted, i), y = valueAt(c.out.type, compiled, i);
      bool same = std::memcmp(interpreted.data() + i * bytesOf(c.out.type),
                              compiled.data() + i * bytesOf(c.out.type),
                              bytesOf(c.out.type)) == 0;
      ASSERT_TRUE(same || (std::isnan(x) && std::isnan(y)))
          << "element " << i << " of " << n << ": interpreter " << x << ", generated " << y
          << "\n" << c.source.source;
    }
    vectorized += c.source.elementsPerThread > 1;
    misaligned += c.out.offset % 4 != 0;
  }
  // The cases cover both of a thread's paths.
  EXPECT_GT(vectorized, 50);
  EXPECT_GT(misaligned, 50);
}

TEST(GeneratedKernel, SixtyFourBitIndicesWhereOffsetsDoNotFit) {
  std::vector<fused::Instruction> code = {{fused::Op::Neg, fused::Type::F32, 0, 0, 0}};
  Strided small = viewOf({1024}, {1024});
  FusedKernelSource a = fusedKernelSource(code, {{Elem::F32, small, true}},
                                          {Elem::F32, small, true}, 1024);
  EXPECT_NE(a.source.find("using I = unsigned int;"), std::string::npos);
  EXPECT_EQ(a.elementsPerThread, 4);
  Strided big = viewOf({int64_t(3) << 30}, {int64_t(3) << 30});
  FusedKernelSource b = fusedKernelSource(code, {{Elem::F32, big, true}},
                                          {Elem::F32, big, true}, int64_t(3) << 30);
  EXPECT_NE(b.source.find("using I = unsigned long long;"), std::string::npos);
  EXPECT_NE(a.name, b.name);
}

} // namespace
