//===- PlanKernelCheck.cpp - Bind every kernel of a plan, run none --------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/PlanKernelCheck.h"
#include "zrt/AsyncCollectives.h"
#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/Kernels.h"
#include "zrt/PlanFile.h"
#include "zrt/PlanVerifier.h"
#include "zrt/RankGroups.h"

#include <cstdint>

using namespace zrt;

namespace {

/// The plan's world for binding: its size, no transfers (binding moves no data).
class ShapeOnlyCommunicator final : public Communicator {
public:
  explicit ShapeOnlyCommunicator(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  std::string name() const override { return "shape check"; }
  void allGather(const void *, void *, int64_t, DType) override { refuse(); }
  void reduceScatterSum(const void *, void *, int64_t, DType) override { refuse(); }
  void allReduceSum(const void *, void *, int64_t, DType) override { refuse(); }
  void allToAllBytes(const void *, void *, size_t) override { refuse(); }
  void gatherToRoot(const void *, void *, int64_t, DType) override { refuse(); }
  double meanOf(double) override { refuse(); }
  std::vector<int64_t> gatherInts(int64_t) override { refuse(); }
  std::vector<int64_t> allGatherInts(int64_t) override { refuse(); }
  void broadcast(void *, size_t) override { refuse(); }
  std::unique_ptr<Communicator> split(int, int) override { refuse(); }

private:
  [[noreturn]] static void refuse() { ZRT_FAIL("a plan check moves no data"); }
  int ranks_;
};

} // namespace

std::string zrt::checkPlanKernels(const zero::zplan::Plan &plan, const std::string &what) {
  try {
    validatePlan(plan, what);
    verifyPlan(plan, what);
    ShapeOnlyCommunicator comm((int)plan.world_size());
    AsyncCollectives async(plan.kernels_size(), 0);
    // Binding computes addresses inside the arena but never reads or writes them:
    // an address range that no allocation will ever have stands in for it.
    char *arena = reinterpret_cast<char *>(uintptr_t(1) << 46);
    for (int k = 0; k < plan.kernels_size(); ++k) {
      int64_t groupSize = 0;
      kernelRankGroup(plan, k, groupSize, what);
      ShapeOnlyCommunicator group((int)groupSize); // its group's size
      bindPlanKernel(cpuKernels(), plan, k, arena, arena, &group, &async);
    }
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
