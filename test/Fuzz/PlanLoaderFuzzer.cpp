//===- PlanLoaderFuzzer.cpp - libFuzzer target: plan bytes to a run -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each input is a plan's payload (the serialized Plan). The fuzzer would almost
// never get the header's checksum right, so the target writes the header itself:
// what is fuzzed is everything after it, as an edited plan with a recomputed
// checksum would be. A plan that loads is bound on the CPU (one rank, an arena of
// at most 16 MiB) and run once on its zeroed inputs. Errors (zrt::Error) are
// fine; crashes, out-of-bounds accesses, leaks, undefined behaviour and other
// exceptions are findings. Built by utils/fuzz.sh (clang, -DZERO_FUZZ=ON).
//
//===----------------------------------------------------------------------===//

#include "zrt/Communicator.h"
#include "zrt/Device.h"
#include "zrt/Error.h"
#include "zrt/Executor.h"
#include "zrt/PlanFile.h"
#include "zplan/PlanFormat.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string payload(reinterpret_cast<const char *>(data), size);
  std::string file = zrt::encodePlanHeader(payload) + payload;
  try {
    zero::zplan::Plan plan = zrt::parsePlanBytes(file, "fuzz.zplan");
    if (plan.world_size() != 1 || plan.arena_bytes() > (int64_t(16) << 20))
      return 0;
    std::unique_ptr<zrt::Device> device = zrt::makeCpuDevice();
    std::unique_ptr<zrt::Communicator> comm = zrt::makeLocalCommunicator();
    zrt::Executor exec(std::move(plan), *device, *comm);
    exec.run();
    for (int i = 0; i < exec.numOutputs(); ++i)
      exec.readOutput(i);
  } catch (const zrt::Error &) {
  }
  return 0;
}
