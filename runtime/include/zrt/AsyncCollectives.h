//===- AsyncCollectives.h - Collectives on their own thread ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_ASYNCCOLLECTIVES_H
#define ZRT_ASYNCCOLLECTIVES_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zrt {

/// Runs started collectives on a communication thread, in start order (the same
/// on every rank), while the compute thread goes on; a wait blocks until its
/// request is done. Only this thread calls MPI while a step runs.
class AsyncCollectives {
public:
  /// `delayNsPerByte` (a test-only option) sleeps after each collective, to make
  /// communication slow enough to measure the overlap.
  /// `rank` names this rank in the watchdog's messages.
  AsyncCollectives(int64_t requests, int rank, double delayNsPerByte = 0);
  ~AsyncCollectives();

  void start(int64_t request, std::string name, int64_t bytes, std::function<void()> job);
  /// Blocks until `request` is done; rethrows its error, if any.
  void wait(int64_t request);

  /// One finished collective, for --trace: times from the thread's clock.
  struct Event {
    std::string name;
    std::chrono::steady_clock::time_point begin, end;
  };
  /// The events since the last call.
  std::vector<Event> takeEvents();

private:
  struct Job {
    int64_t request;
    std::string name;
    int64_t bytes;
    std::function<void()> run;
  };
  void loop();

  double delayNsPerByte_;
  int rank_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<int> state_; // 0 idle, 1 queued, 2 done
  std::vector<std::string> errors_;
  std::vector<Event> events_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace zrt

#endif // ZRT_ASYNCCOLLECTIVES_H
