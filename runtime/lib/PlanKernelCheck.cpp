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
  void gatherToRoot(const void *, void *, int64_t, DType) override { refuse(); }
  double meanOf(double) override { refuse(); }
  std::vector<int64_t> gatherInts(int64_t) override { refuse(); }
  void broadcast(void *, size_t) override { refuse(); }

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
    const KernelTable &table = cpuKernels();
    for (int k = 0; k < plan.kernels_size(); ++k) {
      const auto &pk = plan.kernels(k);
      auto it = table.find(pk.name());
      ZRT_CHECK(it != table.end(), what << ": kernel " << k << " '" << pk.name()
                                        << "' is not implemented by the runtime");
      KernelCall call;
      call.name = pk.name();
      call.loc = pk.loc();
      call.attrs = &pk.attrs();
      call.comm = &comm;
      call.async = &async;
      auto view = [&](int i) {
        const auto &b = plan.buffers(i);
        return TensorView{arena + b.offset(), b.dtype(),
                          std::vector<int64_t>(b.shape().begin(), b.shape().end())};
      };
      for (int i : pk.inputs())
        call.ins.push_back(view(i));
      for (int i : pk.outputs())
        call.outs.push_back(view(i));
      it->second(call);
    }
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
