//===- Watchdog.cpp - No rank waits for a collective forever --------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Watchdog.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

using namespace zrt;
using Clock = std::chrono::steady_clock;

namespace {

struct Wait {
  int rank;
  const char *what;
  int64_t detail;
  Clock::time_point since;
};

/// The waits in progress, and the thread that looks at them.
struct Watchdog {
  std::mutex mutex;
  std::condition_variable wake;
  std::map<uint64_t, Wait> waits;
  uint64_t next = 0;
  double timeoutSeconds = 0;
  std::function<void(const std::string &)> stop;
  bool started = false;

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      // Look a few times per timeout (at least once a second): a wait is caught
      // within the timeout and a quarter.
      double period = std::min(1.0, timeoutSeconds / 4);
      wake.wait_for(lock, std::chrono::duration<double>(period));
      Clock::time_point now = Clock::now();
      for (const auto &[id, w] : waits) {
        double waited = std::chrono::duration<double>(now - w.since).count();
        if (waited <= timeoutSeconds)
          continue;
        std::ostringstream msg;
        msg << "rank " << w.rank << " has waited " << (int64_t)waited << " s in "
            << w.what;
        if (w.detail >= 0)
          msg << " #" << w.detail;
        msg << ", longer than --collective-timeout=" << timeoutSeconds
            << " s: another rank has failed or hangs; stopping the job";
        auto hook = stop;
        lock.unlock();
        hook(msg.str());
        return; // not reached: the hook ends the job
      }
    }
  }
};

Watchdog &watchdog() {
  static Watchdog *w = new Watchdog(); // never destroyed: its thread may outlive main
  return *w;
}

} // namespace

void zrt::startWatchdog(double timeoutSeconds,
                        std::function<void(const std::string &)> stop) {
  Watchdog &w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.timeoutSeconds = timeoutSeconds;
  w.stop = std::move(stop);
  if (!w.started && timeoutSeconds > 0) {
    w.started = true;
    std::thread([&w] { w.loop(); }).detach();
  }
}

WatchedWait::WatchedWait(int rank, const char *what, int64_t detail) {
  Watchdog &w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  id_ = w.next++;
  w.waits.emplace(id_, Wait{rank, what, detail, Clock::now()});
}

WatchedWait::~WatchedWait() {
  Watchdog &w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.waits.erase(id_);
}
