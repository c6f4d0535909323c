//===- HostWorker.cpp - Runs host kernels beside the device's -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/HostWorker.h"
#include "zrt/Error.h"

#include <algorithm>

using namespace zrt;

HostWorker::HostWorker(int threads)
    : threads_(std::max(1, threads)), thread_([this] { loop(); }) {}

HostWorker::~HostWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int64_t HostWorker::enqueue(std::function<void()> before, std::vector<BoundKernel> chunks) {
  int64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(before), std::move(chunks)});
    ticket = ++given_;
  }
  wake_.notify_all();
  return ticket;
}

int64_t HostWorker::given() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return given_;
}

void HostWorker::waitFor(int64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return done_ >= ticket || failed_; });
  if (failed_)
    throw SkippedAfterFailure("skipped: a host task it waits for failed");
}

void HostWorker::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    failed_ = false;
    std::rethrow_exception(e);
  }
}

void HostWorker::loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      busy_ = !error_;
      if (error_) { // a task failed: the rest is skipped until drain reports it
        ++done_;
        idle_.notify_all();
        continue;
      }
    }
    std::exception_ptr failure;
    try {
      if (task.before)
        task.before();
      runChunks(task.chunks);
    } catch (...) {
      failure = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure && !error_) {
        error_ = failure;
        failed_ = true;
      }
      ++done_;
      busy_ = false;
    }
    idle_.notify_all();
  }
}

void HostWorker::runChunks(std::vector<BoundKernel> &chunks) {
  if (chunks.size() <= 1) {
    for (auto &c : chunks)
      c();
    return;
  }
  // Chunk 0 here, the others on threads of their own (elementwise work of a few
  // milliseconds or more: starting a thread costs microseconds).
  std::vector<std::thread> helpers;
  std::vector<std::exception_ptr> errors(chunks.size());
  for (size_t i = 1; i < chunks.size(); ++i)
    helpers.emplace_back([&, i] {
      try {
        chunks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  try {
    chunks[0]();
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto &t : helpers)
    t.join();
  for (auto &e : errors)
    if (e)
      std::rethrow_exception(e);
}

std::vector<KernelCall> zrt::splitElementwise(const KernelCall &call, int parts) {
  bool elementwise = call.kind == Kernel::ADAMW || call.kind == Kernel::SGD ||
                     call.kind == Kernel::CAST || call.kind == Kernel::COPY;
  // An optimizer over several tensors (the plan joins device updates only) is
  // left whole: its operands are not one length.
  if (call.hasAttr("operand_segments") && call.intsAttr("operand_segments")[0] > 1)
    elementwise = false;
  bool split = parts > 1 && !call.outs.empty() && elementwise;
  int64_t n = split ? call.outs[0].numel() : 0;
  // Below this many elements a thread costs more than it saves.
  const int64_t kMinChunk = 1 << 16;
  parts = (int)std::min<int64_t>(parts, n / kMinChunk);
  if (parts <= 1)
    return {call};
  std::vector<KernelCall> calls;
  for (int p = 0; p < parts; ++p) {
    int64_t lo = n * p / parts, hi = n * (p + 1) / parts;
    KernelCall c = call;
    auto cut = [&](std::vector<TensorView> &views) {
      for (TensorView &v : views)
        if (!v.shape.empty() && v.numel() == n) {
          v.data = static_cast<char *>(v.data) + lo * dtypeSize(v.dtype);
          v.shape = {hi - lo};
        }
    };
    cut(c.ins);
    cut(c.outs);
    calls.push_back(std::move(c));
  }
  return calls;
}
