//===- MachineFileFuzzer.cpp - libFuzzer target: a machine file ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each input is a file given to `zero-opt --machine FILE`: read by the cost
// model's reader (strict JSON, each figure's type and range, unknown keys named
// with a suggestion). A refusal is fine; so is a machine it accepts, but then
// every figure must be finite and in its range (what the cost model divides by
// is never 0): anything else, crashes, leaks and undefined behaviour are
// findings. Built by utils/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Plan/Analysis/CostModel.h"

#include <cmath>
#include "FuzzInputFile.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = writeFuzzInput("machine-fuzz", data, size);
  std::string error;
  auto m = zero::loadMachineModel(path, error);
  if (mlir::failed(m)) {
    if (error.empty())
      std::abort(); // a refusal says why
    return 0;
  }
  for (double rate : {m->matmulFlops, m->vectorFlops, m->memoryBandwidth,
                      m->nvmeReadBandwidth, m->nvmeWriteBandwidth})
    if (!std::isfinite(rate) || rate < 1)
      std::abort();
  for (double t : {m->kernelOverheadS, m->alphaS, m->betaSPerByte, m->interAlphaS,
                   m->interBetaSPerByte})
    if (!std::isfinite(t) || t < 0)
      std::abort();
  if (m->ranksPerNode < 1)
    std::abort();
  return 0;
}
