//===- GraphCaptureTest.cpp - Every rank captures the step, or none does ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// NCCL user guide, "Using NCCL with CUDA Graphs": whether a collective's launch is
// captured "must be uniform over all ranks participating". The executor runs the
// first step directly (nothing lazy inside a capture), captures the second, and
// drops every rank's graph when one rank's capture failed.
//
//===----------------------------------------------------------------------===//

#include "zrt/Communicator.h"
#include "zrt/Device.h"
#include "zrt/Executor.h"

#include <gtest/gtest.h>

#include <thread>

using namespace zrt;

namespace {

/// The CPU device, with graphs whose capture fails where told to.
class GraphDevice final : public Device {
public:
  explicit GraphDevice(bool failCapture) : cpu_(makeCpuDevice()), fail_(failCapture) {}
  std::string name() const override { return "graphs"; }
  void *allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void release(void *memory) override { cpu_->release(memory); }
  void upload(void *d, const void *h, size_t bytes) override { cpu_->upload(d, h, bytes); }
  void download(void *h, const void *d, size_t bytes) override { cpu_->download(h, d, bytes); }
  void synchronize() override { cpu_->synchronize(); }
  const KernelTable &kernels() const override { return cpu_->kernels(); }
  bool hasGraphs() const override { return true; }
  bool captureGraph(const std::function<void()> &, std::string &why) override {
    ++captures;
    if (fail_)
      why = "told to fail";
    graph_ = !fail_;
    return graph_;
  }
  void replayGraph() override {
    ASSERT_TRUE(graph_);
    ++replays;
  }
  void discardGraph() override {
    graph_ = false;
    ++discards;
  }
  int captures = 0, replays = 0, discards = 0;

private:
  std::unique_ptr<Device> cpu_;
  bool fail_;
  bool graph_ = false;
};

/// Runs `steps` steps of an empty plan on `ranks` ranks as threads; rank
/// `failing` (or none, -1) fails its capture. Returns each rank's device.
std::vector<std::unique_ptr<GraphDevice>> runSteps(int ranks, int failing, int steps) {
  auto comms = makeThreadCommunicators(ranks);
  std::vector<std::unique_ptr<GraphDevice>> devices;
  for (int r = 0; r < ranks; ++r)
    devices.push_back(std::make_unique<GraphDevice>(r == failing));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      zero::zplan::Plan plan;
      plan.set_world_size(ranks);
      Executor executor(plan, *devices[r], *comms[r]);
      for (int s = 0; s < steps; ++s)
        executor.run();
    });
  for (auto &t : threads)
    t.join();
  return devices;
}

TEST(GraphCapture, TheFirstStepRunsDirectlyThenTheGraphReplays) {
  auto one = runSteps(2, -1, 1);
  for (auto &d : one)
    EXPECT_EQ(d->captures, 0); // one step: nothing captured
  auto four = runSteps(2, -1, 4);
  for (auto &d : four) {
    EXPECT_EQ(d->captures, 1);
    EXPECT_EQ(d->replays, 3); // steps 2-4
    EXPECT_EQ(d->discards, 0);
  }
}

TEST(GraphCapture, OneRanksFailedCaptureMakesEveryRankRunDirectly) {
  testing::internal::CaptureStderr();
  auto devices = runSteps(3, 1, 4);
  std::string said = testing::internal::GetCapturedStderr();
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(devices[r]->captures, 1);
    EXPECT_EQ(devices[r]->replays, 0);
    EXPECT_EQ(devices[r]->discards, r == 1 ? 0 : 1);
  }
  // Rank 0 says why once; rank 1 gives its own reason.
  EXPECT_NE(said.find("the capture failed on rank 1"), std::string::npos) << said;
  EXPECT_NE(said.find("told to fail"), std::string::npos) << said;
}

} // namespace
