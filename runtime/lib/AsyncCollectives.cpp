//===- AsyncCollectives.cpp - Collectives on their own thread -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/AsyncCollectives.h"
#include "zrt/Error.h"
#include "zrt/Watchdog.h"

using namespace zrt;

AsyncCollectives::AsyncCollectives(int64_t requests, int rank, double delayNsPerByte)
    : delayNsPerByte_(delayNsPerByte), rank_(rank), state_(requests, 0), errors_(requests),
      thread_([this] { loop(); }) {}

AsyncCollectives::~AsyncCollectives() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AsyncCollectives::start(int64_t request, std::string name, int64_t bytes,
                             std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ZRT_CHECK(request >= 0 && request < (int64_t)state_.size() && state_[request] == 0,
              "collective request " << request << " started twice");
    state_[request] = 1;
    queue_.push_back({request, std::move(name), bytes, std::move(job)});
  }
  cv_.notify_all();
}

void AsyncCollectives::wait(int64_t request) {
  WatchedWait watched(rank_, "the wait for started collective", request);
  std::unique_lock<std::mutex> lock(mutex_);
  ZRT_CHECK(request >= 0 && request < (int64_t)state_.size() && state_[request] != 0,
            "wait for collective request " << request << ", which was not started");
  cv_.wait(lock, [&] { return state_[request] == 2; });
  state_[request] = 0;
  if (!errors_[request].empty()) {
    std::string e = std::move(errors_[request]);
    errors_[request].clear();
    throw Error(e);
  }
}

std::vector<AsyncCollectives::Event> AsyncCollectives::takeEvents() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(events_);
}

void AsyncCollectives::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    auto begin = std::chrono::steady_clock::now();
    std::string error;
    try {
      job.run();
      if (delayNsPerByte_ > 0)
        std::this_thread::sleep_for(
            std::chrono::nanoseconds((int64_t)(delayNsPerByte_ * job.bytes)));
    } catch (const std::exception &e) {
      error = e.what();
    }
    auto end = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      state_[job.request] = 2;
      errors_[job.request] = error;
      events_.push_back({job.name, begin, end});
    }
    cv_.notify_all();
  }
}
