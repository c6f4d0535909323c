//===- NvrtcKernelTest.cpp - Generated kernels compile with NVRTC ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CUDA build's check of what only a GPU runs: the generated fused kernels
// (lib/cuda/FusedKernelSource.h), with the embedded headers, compile with the
// toolkit's NVRTC for Ampere and Hopper, as zero-run compiles them at plan load.
// Every op, in every rounding type, over f32/bf16/f16 and bool inputs, contiguous,
// broadcast and scalar, vectorized or not, 32- and 64-bit indices. NVRTC needs no
// GPU; the emulated build runs the same sources (GeneratedKernelTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "../lib/cuda/FusedKernelSource.h"
#include "../lib/cuda/GeneratedKernels.h"
#include "zrt/Error.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace zrt;
using namespace zrt::cuda;

namespace {

Strided view(std::vector<int64_t> shape, std::vector<int64_t> stride) {
  Strided s;
  s.rank = (int)shape.size();
  for (int d = 0; d < s.rank; ++d) {
    s.shape[d] = shape[d];
    s.stride[d] = stride[d];
  }
  s.contiguous = isRowMajor(s);
  return s;
}

std::vector<FusedKernelSource> everyKind() {
  std::vector<FusedKernelSource> out;
  const Elem types[] = {Elem::F32, Elem::BF16, Elem::F16};
  Strided rows = view({64, 96}, {96, 1}), bias = view({64, 96}, {0, 1}),
          column = view({64, 96}, {1, 0}), scalar = view({64, 96}, {0, 0});
  Strided huge = view({int64_t(3) << 30}, {1});
  for (int op = 0; op < (int)fused::Op::Count; ++op)
    for (int t = 0; t < 3; ++t)
      for (Elem in : types) {
        if (in != types[t]) // each op in each type over that type's inputs
          continue;
        fused::Instruction x{fused::Op(op), fused::Type(t), 1, 2, 2};
        if (x.op == fused::Op::Const) {
          double v = 0.125;
          std::memcpy(&x.a, &v, sizeof v);
        }
        if (x.op == fused::Op::Where)
          x.a = 0;
        std::vector<FusedOperand> ins = {{Elem::U8, rows, true},
                                         {in, bias, true},
                                         {Elem::F32, column, false}};
        out.push_back(fusedKernelSource({x}, ins, {types[t], rows, true}, 64 * 96));
        ins[0].view = scalar;
        ins[1] = {in, rows, false};
        out.push_back(fusedKernelSource({x}, ins, {types[t], rows, false}, 64 * 96));
      }
  std::vector<fused::Instruction> chain = {{fused::Op::Mul, fused::Type::BF16, 0, 1, 0},
                                           {fused::Op::GeluTanh, fused::Type::BF16, 2, 0, 0}};
  out.push_back(fusedKernelSource(chain, {{Elem::BF16, huge, true}, {Elem::BF16, huge, true}},
                                  {Elem::BF16, huge, true}, int64_t(3) << 30));
  return out;
}

TEST(NvrtcKernel, EveryKindCompilesForAmpereAndHopper) {
  std::vector<FusedKernelSource> kernels = everyKind();
  size_t distinct = 0;
  std::string source = GeneratedKernels::translationUnit(kernels, &distinct);
  EXPECT_GT(distinct, 120u);
  for (const char *arch : {"sm_80", "sm_90"}) {
    std::string cubin = GeneratedKernels::compileSource(source, arch);
    ASSERT_GT(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(1, 3), "ELF") << arch;
    // Every kernel's entry point is in the object.
    for (const FusedKernelSource &k : kernels)
      ASSERT_NE(cubin.find(k.name), std::string::npos) << k.name << " for " << arch;
  }
}

TEST(NvrtcKernel, ACompileErrorNamesNvrtcsLog) {
  try {
    GeneratedKernels::compileSource("#include \"FusedMath.h\"\nthis is not C++;\n", "sm_90");
    FAIL() << "NVRTC took a broken source";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("NVRTC could not compile"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("error"), std::string::npos);
  }
}

} // namespace
