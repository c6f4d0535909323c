//===- TcpCommunicator.cpp - Ranks that meet through a TCP rendezvous -----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// For launches without mpirun (torchrun, srun, Kubernetes): the ranks meet and
// connect through TcpLinks. A collective is one exchange over those connections:
// each rank sends every peer what it needs and receives what the peers send, all
// at once. Sums run on the receiving rank in rank order, as thread ranks' do
// (RankOrderSum.h), so a run's bits do not depend on the launcher.
//
// A group (split) is the same connections restricted to its members: it opens
// none of its own, and its errors name world ranks.
//
//===----------------------------------------------------------------------===//

#include "RankOrderSum.h"
#include "SplitMembers.h"
#include "TcpLinks.h"

#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/Launch.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <cmath>
#include <numeric>

using namespace zrt;
using namespace zrt::tcp;

namespace {

class TcpCommunicator final : public Communicator {
public:
  /// The group `members` (world ranks, in group order) of `links`, this rank
  /// among them.
  TcpCommunicator(std::shared_ptr<TcpLinks> links, std::vector<int> members)
      : links_(std::move(links)), members_(std::move(members)),
        size_((int)members_.size()) {
    rank_ = (int)(std::find(members_.begin(), members_.end(), links_->rank()) -
                  members_.begin());
    ZRT_CHECK(rank_ < size_, "internal: a TCP group without this rank");
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override {
    if (size_ == links_->size())
      return "TCP (" + std::to_string(size_) + " ranks, met at " + links_->where() + ")";
    return "TCP group of " + std::to_string(size_) + " of " +
           std::to_string(links_->size()) + " ranks";
  }
  void abort(const std::string &why) override { links_->abort(why); }

  std::unique_ptr<Communicator> split(int color, int key) override {
    std::vector<int> group = splitMembers(allGatherInts(color), allGatherInts(key), color);
    for (int &p : group)
      p = members_[p];
    return std::make_unique<TcpCommunicator>(links_, std::move(group));
  }

  void allGather(const void *in, void *out, int64_t count, DType t) override {
    allGatherBytes(Kind::AllGather, in, out, count * dtypeSize(t));
    allGatherElements += count * size_;
  }

  void reduceScatterSum(const void *in, void *out, int64_t count, DType t) override {
    std::vector<char> sum = reduceChunks(Kind::ReduceScatter, in, evenChunks(count), t);
    std::memcpy(out, sum.data(), sum.size());
    reduceScatterElements += count * size_;
  }

  void allReduceSum(const void *in, void *out, int64_t count, DType t) override {
    // A reduce-scatter of near-equal chunks, then an all-gather of the sums.
    std::vector<int64_t> first(size_ + 1);
    for (int p = 0; p <= size_; ++p)
      first[p] = count * p / size_;
    std::vector<char> sum = reduceChunks(Kind::AllReduce, in, first, t);
    size_t width = dtypeSize(t);
    char *o = static_cast<char *>(out);
    std::vector<Transfer> sends, recvs;
    for (int p = 0; p < size_; ++p)
      if (p != rank_) {
        sends.push_back({members_[p], sum.data(), sum.size()});
        recvs.push_back({members_[p], o + first[p] * width, (size_t)(first[p + 1] - first[p]) * width});
      }
    links_->exchange(Kind::AllReduce, sends, recvs);
    std::memcpy(o + first[rank_] * width, sum.data(), sum.size());
    allReduceElements += count;
  }

  void allToAllBytes(const void *in, void *out, size_t bytes) override {
    const char *i = static_cast<const char *>(in);
    char *o = static_cast<char *>(out);
    std::vector<Transfer> sends, recvs;
    for (int p = 0; p < size_; ++p)
      if (p != rank_) {
        sends.push_back({members_[p], const_cast<char *>(i) + p * bytes, bytes});
        recvs.push_back({members_[p], o + p * bytes, bytes});
      }
    links_->exchange(Kind::AllToAll, sends, recvs);
    std::memcpy(o + rank_ * bytes, i + rank_ * bytes, bytes);
  }

  void gatherToRoot(const void *in, void *out, int64_t count, DType t) override {
    gatherBytes(Kind::Gather, in, out, count * dtypeSize(t));
  }

  double meanOf(double v) override {
    std::vector<double> all(size_);
    allGatherBytes(Kind::Mean, &v, all.data(), sizeof v);
    double sum = 0;
    for (double x : all)
      sum += x;
    return sum / size_;
  }

  std::vector<int64_t> gatherInts(int64_t v) override {
    std::vector<int64_t> all(rank_ == 0 ? size_ : 1);
    gatherBytes(Kind::Counts, &v, all.data(), sizeof v);
    return all;
  }

  std::vector<int64_t> allGatherInts(int64_t v) override {
    std::vector<int64_t> all(size_);
    allGatherBytes(Kind::Agreement, &v, all.data(), sizeof v);
    return all;
  }

  void broadcast(void *data, size_t bytes) override {
    std::vector<Transfer> sends, recvs;
    for (int p = 1; p < size_ && rank_ == 0; ++p)
      sends.push_back({members_[p], static_cast<char *>(data), bytes});
    if (rank_ != 0)
      recvs.push_back({members_[0], static_cast<char *>(data), bytes});
    links_->exchange(Kind::Broadcast, sends, recvs);
  }

private:
  /// `first[p] .. first[p+1]`: chunk p of `count`, for a reduce-scatter.
  std::vector<int64_t> evenChunks(int64_t count) const {
    std::vector<int64_t> first(size_ + 1);
    for (int p = 0; p <= size_; ++p)
      first[p] = count * p;
    return first;
  }

  /// Sends each peer its chunk of `in` and sums this rank's chunk over the ranks,
  /// in rank order.
  std::vector<char> reduceChunks(Kind kind, const void *in, const std::vector<int64_t> &first,
                                 DType t) {
    size_t width = dtypeSize(t);
    const char *i = static_cast<const char *>(in);
    int64_t count = first[rank_ + 1] - first[rank_];
    std::vector<char> received(size_ * count * width);
    std::vector<Transfer> sends, recvs;
    std::vector<const void *> from(size_);
    for (int p = 0; p < size_; ++p) {
      from[p] = p == rank_ ? i + first[rank_] * width : received.data() + p * count * width;
      if (p == rank_)
        continue;
      sends.push_back({members_[p], const_cast<char *>(i) + first[p] * width,
                       (size_t)(first[p + 1] - first[p]) * width});
      recvs.push_back({members_[p], received.data() + p * count * width, count * width});
    }
    links_->exchange(kind, sends, recvs);
    std::vector<char> sum;
    sumInRankOrder(from, 0, count, t, sum);
    return sum;
  }

  /// out[p * bytes ..] = rank p's `in`. `in` may be this rank's own slot of `out`
  /// (the plan's buckets); lying elsewhere in `out`, it is copied first, since the
  /// others' parts land there while it is being sent.
  void allGatherBytes(Kind kind, const void *in, void *out, size_t bytes) {
    char *o = static_cast<char *>(out);
    const char *src = static_cast<const char *>(in);
    std::vector<char> copy;
    if (src != o + rank_ * bytes && src < o + size_ * bytes && src + bytes > o) {
      copy.assign(src, src + bytes);
      src = copy.data();
    }
    std::vector<Transfer> sends, recvs;
    for (int p = 0; p < size_; ++p)
      if (p != rank_) {
        sends.push_back({members_[p], const_cast<char *>(src), bytes});
        recvs.push_back({members_[p], o + p * bytes, bytes});
      }
    links_->exchange(kind, sends, recvs);
    std::memmove(o + rank_ * bytes, src, bytes);
  }

  /// Rank 0's `out` gets every rank's `bytes` in rank order; the others' gets
  /// their own.
  void gatherBytes(Kind kind, const void *in, void *out, size_t bytes) {
    std::vector<Transfer> sends, recvs;
    char *o = static_cast<char *>(out);
    if (rank_ == 0)
      for (int p = 1; p < size_; ++p)
        recvs.push_back({members_[p], o + p * bytes, bytes});
    else
      sends.push_back({members_[0], const_cast<char *>(static_cast<const char *>(in)), bytes});
    links_->exchange(kind, sends, recvs);
    std::memmove(o, in, bytes);
  }

  std::shared_ptr<TcpLinks> links_;
  std::vector<int> members_; ///< world ranks, in group order
  int rank_, size_;
};

} // namespace

std::unique_ptr<Communicator> zrt::makeTcpCommunicator(const LaunchVariables &v,
                                                      double timeoutSeconds) {
  ZRT_CHECK(timeoutSeconds > 0 && !std::isnan(timeoutSeconds),
            "--rendezvous-timeout must be positive");
  auto links = std::make_shared<TcpLinks>(v, timeoutSeconds);
  std::vector<int> everyone(v.worldSize);
  std::iota(everyone.begin(), everyone.end(), 0);
  return std::make_unique<TcpCommunicator>(std::move(links), std::move(everyone));
}
