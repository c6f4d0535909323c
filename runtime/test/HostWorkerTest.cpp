//===- HostWorkerTest.cpp - Host kernels' and NVMe transfers' workers -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/HostWorker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace zrt;

namespace {

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(HostWorker, TicketsCountTasksInOrderAcrossDrains) {
  HostWorker w(2);
  std::atomic<int> ran{0};
  EXPECT_EQ(w.given(), 0);
  EXPECT_EQ(w.enqueue([&] { ran = 1; }, {}), 1);
  EXPECT_EQ(w.enqueue([&] { sleepMs(30); ran = 2; }, {}), 2);
  w.waitFor(2);
  EXPECT_EQ(ran.load(), 2); // waitFor returns after the task, not before
  w.drain();
  EXPECT_EQ(w.enqueue({}, {}), 3);
  EXPECT_EQ(w.given(), 3);
  w.drain();
}

// A task of one worker waits for the other's: an NVMe read ahead of a host
// kernel that uses its bytes.
TEST(HostWorker, WaitsForTheOtherWorkersTask) {
  HostWorker nvme(2), host(2);
  std::atomic<int> bytes{0};
  int seen = -1;
  int64_t read = nvme.enqueue([&] { sleepMs(50); bytes = 7; }, {});
  host.enqueue([&] { nvme.waitFor(read); seen = bytes; }, {});
  host.drain();
  EXPECT_EQ(seen, 7);
  nvme.drain();
}

// The failure is reported by the worker whose task failed; the task that waited
// for it is skipped with SkippedAfterFailure, not left waiting.
TEST(HostWorker, AFailureEndsTheTasksThatWaitForIt) {
  HostWorker nvme(1), host(1);
  int64_t read = nvme.enqueue([] { throw Error("reading the NVMe file failed"); }, {});
  bool ranAfter = false;
  host.enqueue([&] { nvme.waitFor(read); ranAfter = true; }, {});
  EXPECT_THROW(host.drain(), SkippedAfterFailure);
  EXPECT_FALSE(ranAfter);
  try {
    nvme.drain();
    FAIL() << "the failed task's error was not reported";
  } catch (const SkippedAfterFailure &) {
    FAIL() << "the failed task was reported as skipped";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "reading the NVMe file failed");
  }
  // Reported once; the worker then runs tasks again.
  int64_t next = nvme.enqueue([] {}, {});
  nvme.waitFor(next);
  nvme.drain();
}

} // namespace
