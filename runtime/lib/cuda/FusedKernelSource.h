//===- FusedKernelSource.h - CUDA C++ for one fused program ------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A fused elementwise program (zplan/FusedProgram.h) as a kernel of its own: the
// instructions are straight-line code, the operands' types and broadcast patterns
// constants, indices 32-bit where every offset fits, and contiguous operands read
// and the output written 16 bytes at a time. The arithmetic is the interpreter's
// (lib/kernels/FusedMath.h, included by name): a generated kernel gives the same
// bits as fusedKernel in CudaKernels.cu. Compiled by NVRTC at plan load on a GPU,
// by the host compiler on the emulator (lib/cuda/GeneratedKernels.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LIB_CUDA_FUSEDKERNELSOURCE_H
#define ZRT_LIB_CUDA_FUSEDKERNELSOURCE_H

#include "CudaLaunch.h"

#include <string>
#include <vector>

namespace zrt::cuda {

/// A tensor the kernel reads or writes: its storage type, how the output's
/// positions map to its elements, and whether its address is 16-byte aligned.
struct FusedOperand {
  Elem type = Elem::F32;
  Strided view;
  bool aligned16 = false;
};

struct FusedKernelSource {
  std::string name;   // the entry point, named by a hash of its code
  std::string source; // a translation unit that defines it
  int elementsPerThread = 1;
  int64_t threads = 0; // to launch: ceil(n / elementsPerThread)
  int params = 0;      // the inputs, the output, n
};

/// The kernel for `code` over `ins` writing `out` (n elements). Its parameters are
/// the inputs' addresses, the output's, and n (all 8 bytes). The binder has
/// validated the program; throws zrt::Error for a storage type it cannot hold.
FusedKernelSource fusedKernelSource(const std::vector<fused::Instruction> &code,
                                    const std::vector<FusedOperand> &ins,
                                    const FusedOperand &out, int64_t n);

/// FNV-1a of `text`: names a kernel by its code, and a compiled module by its source.
uint64_t sourceHash(const std::string &text);

/// The headers the generated sources include, as (include name, text) pairs: the
/// project's own, embedded when it was built.
const std::vector<std::pair<std::string, std::string>> &generatedKernelHeaders();

} // namespace zrt::cuda

#endif // ZRT_LIB_CUDA_FUSEDKERNELSOURCE_H
