//===- ThreadCommunicator.cpp - Ranks that are threads of one process -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each rank posts a pointer to its data, every rank reads all of them between two
// barriers, and writes its result only after the second, so no rank overwrites
// data another still reads (in-place collectives included). Sums run in rank
// order on every rank: an all-reduce gives every rank the same bits.
//
//===----------------------------------------------------------------------===//

#include "RankOrderSum.h"
#include "SplitMembers.h"

#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/Watchdog.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <cstring>
#include <mutex>

using namespace zrt;

namespace {

/// What the ranks of one process share: the posted pointers and a barrier that
/// a failing rank can break.
struct Group {
  explicit Group(int ranks)
      : ranks(ranks), pointers(ranks), doubles(ranks), ints(ranks) {}

  void barrier(int rank) {
    WatchedWait watched(rank, "a collective among the thread ranks");
    std::unique_lock<std::mutex> lock(mutex);
    ZRT_CHECK(!aborted, "another rank of this process failed");
    uint64_t generation = generation_;
    if (++arrived_ == ranks) {
      arrived_ = 0;
      ++generation_;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation_ != generation || aborted; });
    ZRT_CHECK(generation_ != generation, "another rank of this process failed");
  }
  /// Breaks this group's barrier, and its groups' (a rank waiting in a group of
  /// the world must see the world's failure too).
  void abort() {
    std::vector<std::shared_ptr<Group>> split;
    {
      std::lock_guard<std::mutex> lock(mutex);
      aborted = true;
      cv.notify_all();
      for (auto &[id, g] : children)
        split.push_back(g);
    }
    for (auto &g : split)
      g->abort();
  }
  /// The group of `ranks` ranks that split number `n` with `color` makes: made by
  /// the first of its members to ask.
  std::shared_ptr<Group> child(int64_t n, int64_t color, int ranks) {
    std::lock_guard<std::mutex> lock(mutex);
    std::shared_ptr<Group> &g = children[{n, color}];
    if (!g)
      g = std::make_shared<Group>(ranks);
    return g;
  }

  const int ranks;
  std::vector<const void *> pointers;
  std::vector<double> doubles;
  std::vector<int64_t> ints;
  std::mutex mutex;
  std::condition_variable cv;
  bool aborted = false;
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<Group>> children;

private:
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

class ThreadCommunicator final : public Communicator {
public:
  ThreadCommunicator(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->ranks; }
  std::string name() const override {
    return std::to_string(group_->ranks) + " ranks as threads of this process";
  }
  void abort(const std::string &) override { group_->abort(); }

  void allGather(const void *in, void *out, int64_t count, DType t) override {
    allGatherElements += count * size();
    size_t bytes = count * dtypeSize(t);
    std::vector<char> all(bytes * size());
    post(in);
    for (int r = 0; r < size(); ++r)
      std::memcpy(all.data() + r * bytes, group_->pointers[r], bytes);
    finish(out, all);
  }
  void reduceScatterSum(const void *in, void *out, int64_t count, DType t) override {
    reduceScatterElements += count * size();
    size_t bytes = count * dtypeSize(t);
    std::vector<char> sum;
    post(in);
    sumInRankOrder(group_->pointers, rank_ * bytes, count, t, sum);
    finish(out, sum);
  }
  void allReduceSum(const void *in, void *out, int64_t count, DType t) override {
    allReduceElements += count;
    std::vector<char> sum;
    post(in);
    sumInRankOrder(group_->pointers, 0, count, t, sum);
    finish(out, sum);
  }
  void allToAllBytes(const void *in, void *out, size_t bytes) override {
    std::vector<char> mine(bytes * size());
    post(in);
    for (int r = 0; r < size(); ++r)
      std::memcpy(mine.data() + r * bytes,
                  static_cast<const char *>(group_->pointers[r]) + rank_ * bytes, bytes);
    finish(out, mine);
  }
  void gatherToRoot(const void *in, void *out, int64_t count, DType t) override {
    size_t bytes = count * dtypeSize(t);
    std::vector<char> all;
    post(in);
    if (rank_ == 0) {
      all.resize(bytes * size());
      for (int r = 0; r < size(); ++r)
        std::memcpy(all.data() + r * bytes, group_->pointers[r], bytes);
    }
    group_->barrier(rank_);
    if (rank_ == 0)
      std::memcpy(out, all.data(), all.size());
    else
      std::memmove(out, in, bytes);
  }
  double meanOf(double v) override {
    group_->doubles[rank_] = v;
    group_->barrier(rank_);
    double sum = 0;
    for (double x : group_->doubles)
      sum += x;
    group_->barrier(rank_);
    return sum / size();
  }
  std::vector<int64_t> gatherInts(int64_t v) override {
    group_->ints[rank_] = v;
    group_->barrier(rank_);
    std::vector<int64_t> all = rank_ == 0 ? group_->ints : std::vector<int64_t>{v};
    group_->barrier(rank_);
    return all;
  }
  std::vector<int64_t> allGatherInts(int64_t v) override {
    group_->ints[rank_] = v;
    group_->barrier(rank_);
    std::vector<int64_t> all = group_->ints;
    group_->barrier(rank_);
    return all;
  }
  void broadcast(void *data, size_t bytes) override {
    post(data);
    if (rank_ != 0)
      std::memcpy(data, group_->pointers[0], bytes);
    group_->barrier(rank_);
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    int64_t n = splits_++; // every rank splits in the same order
    std::vector<int> members = splitMembers(allGatherInts(color), allGatherInts(key), color);
    int index = (int)(std::find(members.begin(), members.end(), rank_) - members.begin());
    return std::make_unique<ThreadCommunicator>(
        group_->child(n, color, (int)members.size()), index);
  }

private:
  /// Publishes this rank's pointer; after it returns every rank's is readable.
  void post(const void *p) {
    group_->pointers[rank_] = p;
    group_->barrier(rank_);
  }
  /// Waits until every rank has read the posted data, then writes the result.
  void finish(void *out, const std::vector<char> &result) {
    group_->barrier(rank_);
    std::memcpy(out, result.data(), result.size());
  }

  std::shared_ptr<Group> group_;
  int rank_;
  int64_t splits_ = 0;
};

} // namespace

std::vector<std::unique_ptr<Communicator>> zrt::makeThreadCommunicators(int ranks) {
  ZRT_CHECK(ranks >= 1, "a process needs at least one rank, not " << ranks);
  auto group = std::make_shared<Group>(ranks);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < ranks; ++r)
    comms.push_back(std::make_unique<ThreadCommunicator>(group, r));
  return comms;
}
