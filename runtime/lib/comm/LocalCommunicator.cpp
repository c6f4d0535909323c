//===- LocalCommunicator.cpp - The one-rank communicator ------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Communicator.h"

#include <cstring>

using namespace zrt;

namespace {

class LocalCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local (1 rank)"; }
  void allGather(const void *in, void *out, int64_t count, DType t) override {
    allGatherElements += count;
    std::memmove(out, in, count * dtypeSize(t));
  }
  void reduceScatterSum(const void *in, void *out, int64_t count, DType t) override {
    reduceScatterElements += count;
    std::memmove(out, in, count * dtypeSize(t));
  }
  void allReduceSum(const void *in, void *out, int64_t count, DType t) override {
    allReduceElements += count;
    std::memmove(out, in, count * dtypeSize(t));
  }
  void allToAllBytes(const void *in, void *out, size_t bytes) override {
    std::memmove(out, in, bytes);
  }
  void gatherToRoot(const void *in, void *out, int64_t count, DType t) override {
    std::memmove(out, in, count * dtypeSize(t));
  }
  double meanOf(double v) override { return v; }
  std::vector<int64_t> gatherInts(int64_t v) override { return {v}; }
  std::vector<int64_t> allGatherInts(int64_t v) override { return {v}; }
  void broadcast(void *, size_t) override {}
  std::unique_ptr<Communicator> split(int, int) override {
    return std::make_unique<LocalCommunicator>();
  }
};

} // namespace

std::unique_ptr<Communicator> zrt::makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}
