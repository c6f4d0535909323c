//===- HostWorker.h - Runs host kernels beside the device's ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// An offloaded optimizer's kernels run on the host while the device goes on with
// the step: the executor hands them here in plan order and moves on; a thread runs
// them in that order, each split into chunks that a few threads share. NVMe
// transfers have a worker of their own, so that reads issued ahead and writes
// behind overlap the host's arithmetic; a task of one worker waits for the tasks
// of the other whose bytes it needs (tickets, counted in the order given).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_HOSTWORKER_H
#define ZRT_HOSTWORKER_H

#include "zrt/Error.h"
#include "zrt/Kernels.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zrt {

class HostWorker {
public:
  /// `threads` run the chunks of one kernel (at least 1).
  explicit HostWorker(int threads);
  ~HostWorker();
  HostWorker(const HostWorker &) = delete;
  HostWorker &operator=(const HostWorker &) = delete;

  int threads() const { return threads_; }
  /// Runs `before`, then every chunk (in parallel), after the tasks given earlier.
  /// Returns the task's ticket: 1 for the first task ever given, then 2, 3, ...
  int64_t enqueue(std::function<void()> before, std::vector<BoundKernel> chunks);
  /// Tickets given so far (the next task's is one more).
  int64_t given() const;
  /// Returns once the task of `ticket` (and so every earlier one) is done; throws
  /// SkippedAfterFailure if a task of this worker failed (it, or the ones after
  /// it, did not run: drain() reports that failure).
  void waitFor(int64_t ticket);
  /// Returns once every task given so far has run; throws the first task's error
  /// (the tasks after a failed one are skipped).
  void drain();

private:
  struct Task {
    std::function<void()> before;
    std::vector<BoundKernel> chunks;
  };
  void loop();
  void runChunks(std::vector<BoundKernel> &chunks);

  int threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  int64_t given_ = 0, done_ = 0; // tickets given; tasks run or skipped
  bool busy_ = false, stopping_ = false, failed_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

/// What a task that waits for another worker's task throws when that worker
/// failed: the failure itself is the other worker's to report.
class SkippedAfterFailure : public Error {
public:
  using Error::Error;
};

/// Splits a bound host kernel's work: for elementwise kernels (the optimizers,
/// casts, copies), `parts` calls over consecutive ranges of every tensor with the
/// output's element count (scalars whole); other kernels, the call itself.
std::vector<KernelCall> splitElementwise(const KernelCall &call, int parts);

} // namespace zrt

#endif // ZRT_HOSTWORKER_H
