//===- ParallelFor.cpp - The CPU kernels' threads -------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/ParallelFor.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace zrt;

namespace {

/// How long a thread of the pool polls for the next job before it sleeps on a
/// condition variable (and the caller polls for the last part before it sleeps).
/// A step's parallel kernels come microseconds apart, and waking a sleeping thread
/// took longer than many of them run: at two threads the small kernels (LayerNorm's
/// gradient, column sums, transposes) ran no faster than at one, the caller having
/// done every part before the other thread woke. Polling yields the core each time,
/// and sleeping after it leaves the core to whatever else wants it for longer (a
/// rank's thread, the offloaded optimizer's).
constexpr std::chrono::microseconds kPollFor{200};

/// Calls `ready` until it is true or kPollFor has passed.
template <typename Ready> void pollFor(Ready &&ready) {
  auto until = std::chrono::steady_clock::now() + kPollFor;
  for (int i = 0; !ready(); ++i) {
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until)
      return;
    std::this_thread::yield();
  }
}

class Pool {
public:
  ~Pool() { resize(0); }

  void resize(int workers) {
    std::lock_guard<std::mutex> use(use_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_)
      t.join();
    threads_.clear();
    stopping_ = false;
    for (int i = 0; i < workers; ++i)
      threads_.emplace_back([this] { loop(); });
  }

  int workers() const { return (int)threads_.size(); }

  /// False when another caller holds the pool.
  bool tryRun(int parts, const std::function<void(int)> &part) {
    std::unique_lock<std::mutex> use(use_, std::try_to_lock);
    if (!use.owns_lock())
      return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      part_ = &part;
      parts_ = parts;
      // Before next_ opens the parts: a thread still polling from the last job may
      // take one at once, and its count must come off this job's.
      pending_ = parts; // parts not yet run, whoever runs them
      next_.store(0);
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    int ran = 0;
    for (int p; (p = next_.fetch_add(1)) < parts; ++ran)
      runPart(p);
    if (pending_.fetch_sub(ran) != ran)
      pollFor([&] { return pending_.load() == 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_.load() == 0; });
    part_ = nullptr;
    return true;
  }

  std::exception_ptr takeError() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::exception_ptr e = error_;
    error_ = nullptr;
    return e;
  }

private:
  void runPart(int p) {
    try {
      (*part_.load())(p);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_)
        error_ = std::current_exception();
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      pollFor([&] { return stopping_.load() || generation_.load() != seen; });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
        if (stopping_)
          return;
        seen = generation_.load();
      }
      int ran = 0;
      for (int p; (p = next_.fetch_add(1)) < parts_;) {
        runPart(p);
        ++ran;
      }
      if (ran && pending_.fetch_sub(ran) == ran) {
        std::lock_guard<std::mutex> lock(mutex_); // the caller may be going to sleep
        done_.notify_all();
      }
    }
  }

  std::mutex use_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  // Read by the threads without the mutex (a polling thread takes a part as soon as
  // next_ allows it): atomics.
  std::atomic<const std::function<void(int)> *> part_{nullptr};
  std::atomic<int> parts_{0}, next_{0}, pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;
};

Pool &pool() {
  static Pool p;
  return p;
}
std::atomic<int> threadCount{1};

} // namespace

void zrt::setKernelThreads(int threads) {
  threads = std::max(1, threads);
  threadCount = threads;
  pool().resize(threads - 1);
}

int zrt::kernelThreads() { return threadCount; }

int zrt::defaultCpuThreads() {
  // Read before setCpuThreads sets OpenBLAS to one thread.
  static const int threads = std::max(1, openblas_get_num_threads());
  return threads;
}

void zrt::setCpuThreads(int threads) {
  defaultCpuThreads();
  // One thread of OpenBLAS per GEMM: the pool splits the GEMMs (lib/cpu/LinearAlgebra.cpp).
  // OpenBLAS's own threads, spinning after each GEMM, took the cores from the
  // kernels between GEMMs; on 2 cores the step ran at 205 ms with them, 149 ms
  // without (utils/bench-train-step.py --threads 2).
  openblas_set_num_threads(1);
  setKernelThreads(threads);
}

/// Set while a thread runs a range: a parallelFor inside one runs inline (the pool
/// is taken, and its mutex is the caller's own).
thread_local bool inRange = false;

void zrt::parallelFor(int64_t n, int64_t grain,
                      const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  int64_t parts = std::min<int64_t>(threadCount, n / std::max<int64_t>(1, grain));
  if (parts > 1 && !inRange) {
    std::function<void(int)> part = [&](int p) {
      inRange = true;
      struct Reset {
        ~Reset() { inRange = false; }
      } reset;
      body(n * p / parts, n * (p + 1) / parts);
    };
    if (pool().tryRun((int)parts, part)) {
      if (std::exception_ptr e = pool().takeError())
        std::rethrow_exception(e);
      return;
    }
  }
  body(0, n);
}
