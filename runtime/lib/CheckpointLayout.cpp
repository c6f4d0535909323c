//===- CheckpointLayout.cpp - What a plan's persistent buffers hold -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/CheckpointLayout.h"
#include "zrt/RankGroups.h"
#include "zrt/Error.h"
#include "zrt/PlanFile.h"
#include "zplan/PlanFormat.h"
#include "zrt/Tensor.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

using namespace zrt;
using zero::zplan::CheckpointBuffer;
using zero::zplan::CheckpointManifest;
using zero::zplan::CheckpointTensor;

namespace {

int64_t numelOf(const google::protobuf::RepeatedField<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const char *roleName(zero::zplan::Role r) {
  return r == zero::zplan::PARAM ? "param" : r == zero::zplan::MASTER ? "master" : "state";
}

/// A bucket state is named BUCKET.SUFFIX (ShardZero's names): its members' SUFFIX.
std::string stateSuffix(const CheckpointBuffer &b) {
  if (b.role() != "state")
    return "";
  size_t dot = b.name().find('.');
  ZRT_CHECK(dot != std::string::npos && dot + 1 < b.name().size(),
            "optimizer state '" << b.name() << "' is a bucket slice but not named "
                                << "BUCKET.SUFFIX");
  return b.name().substr(dot);
}

/// The tensors `b` holds part of, with their whole shapes, added to `out` once.
void addTensors(const CheckpointBuffer &b, std::vector<CheckpointTensor> &out,
                std::set<std::string> &seen) {
  auto add = [&](const std::string &name, const auto &shape) {
    if (!seen.insert(name).second)
      return;
    CheckpointTensor t;
    t.set_name(name);
    t.set_kind(b.role() == "state" ? "state" : "param");
    t.set_dtype(b.dtype());
    for (int64_t d : shape)
      t.add_shape(d);
    out.push_back(t);
  };
  if (!b.has_bucket()) {
    add(b.name(), b.shape());
    return;
  }
  std::string suffix = stateSuffix(b);
  for (const auto &m : b.bucket().members())
    add(m.name() + suffix, m.shape());
}

} // namespace

bool zrt::persistentBuffer(const zero::zplan::Buffer &b) {
  return b.role() == zero::zplan::PARAM || b.role() == zero::zplan::MASTER ||
         b.role() == zero::zplan::STATE;
}

CheckpointBuffer zrt::describeBuffer(const zero::zplan::Buffer &b) {
  CheckpointBuffer d;
  d.set_name(b.name());
  d.set_role(roleName(b.role()));
  d.set_dtype(dtypeName(b.dtype()));
  for (int64_t s : b.shape())
    d.add_shape(s);
  d.set_bytes(b.bytes());
  if (b.has_bucket())
    *d.mutable_bucket() = b.bucket();
  d.set_rank(-1);
  return d;
}

std::vector<TensorPiece> zrt::tensorPieces(const CheckpointBuffer &b, int rank, int world) {
  int64_t n = numelOf(b.shape());
  if (!b.has_bucket())
    return {{b.name(), 0, n, 0}};
  std::string suffix = stateSuffix(b);
  std::vector<TensorPiece> pieces;
  int64_t lo = (int64_t)rank * n;
  for (const auto &m : b.bucket().members()) {
    int64_t size = numelOf(m.shape());
    int64_t from = std::max(lo, m.offset()), to = std::min(lo + n, m.offset() + size);
    if (from < to)
      pieces.push_back({m.name() + suffix, from - m.offset(), to - from, from - lo});
  }
  return pieces;
}

void zrt::layoutCheckpoint(const zero::zplan::Plan &plan, CheckpointManifest &m,
                           std::vector<int> &planIndex) {
  // Parameters with an f32 master copy somewhere in the plan: their 16-bit
  // buffers are the master's rounding after every step, and are not stored.
  std::vector<std::string> masters = planBufferNames(plan, zero::zplan::MASTER);
  std::set<std::string> mastered(masters.begin(), masters.end());
  auto derived = [&](const zero::zplan::Buffer &b) {
    if (b.role() != zero::zplan::PARAM ||
        (b.dtype() != zero::zplan::BF16 && b.dtype() != zero::zplan::F16))
      return false;
    if (!b.has_bucket())
      return mastered.count(b.name()) > 0;
    for (const auto &mem : b.bucket().members())
      if (!mastered.count(mem.name()))
        return false;
    return true;
  };
  std::vector<std::pair<CheckpointBuffer, int>> sharded, replicated;
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const auto &b = plan.buffers(i);
    if (!persistentBuffer(b) || derived(b))
      continue;
    (b.has_bucket() ? sharded : replicated).push_back({describeBuffer(b), i});
  }
  // Sharded buffers at the same offsets in every file; each replicated buffer in
  // one file, the least loaded so far, so that ranks write about equal shares.
  int64_t shardedBytes = 0;
  for (auto &[d, i] : sharded) {
    d.set_offset(shardedBytes);
    shardedBytes += d.bytes();
  }
  // One file per slice of a bucket: per rank, or per rank of a shard group with
  // hybrid sharding (the other groups hold the same slices).
  int64_t files = planShardGroupSize(plan, "the plan");
  std::vector<int64_t> load(std::max<int64_t>(1, files ? files : plan.world_size()),
                            shardedBytes);
  for (auto &[d, i] : replicated) {
    int r = (int)(std::min_element(load.begin(), load.end()) - load.begin());
    d.set_rank(r);
    d.set_offset(load[r]);
    load[r] += d.bytes();
  }
  m.clear_buffers();
  m.clear_tensors();
  planIndex.clear();
  std::map<int, const CheckpointBuffer *> byPlanOrder;
  for (auto *list : {&sharded, &replicated})
    for (auto &[d, i] : *list) {
      *m.add_buffers() = d;
      planIndex.push_back(i);
    }
  // The tensors in the plan's order (the model's), for consolidation.
  for (int k = 0; k < m.buffers_size(); ++k)
    byPlanOrder[planIndex[k]] = &m.buffers(k);
  std::vector<CheckpointTensor> tensors;
  std::set<std::string> seen;
  for (const auto &[i, d] : byPlanOrder)
    addTensors(*d, tensors, seen);
  for (const auto &t : tensors)
    *m.add_tensors() = t;
  m.set_model_fingerprint(modelFingerprint(m.tensors()));
}

std::string zrt::modelFingerprint(
    const google::protobuf::RepeatedPtrField<CheckpointTensor> &tensors) {
  std::vector<std::string> params;
  for (const auto &t : tensors) {
    if (t.kind() != "param")
      continue;
    std::string key = t.name() + "[";
    for (int64_t d : t.shape())
      key += std::to_string(d) + ",";
    params.push_back(key + "]");
  }
  std::sort(params.begin(), params.end());
  uint64_t h = kFnvOffsetBasis;
  for (const auto &p : params)
    h = fnv1a64(p.data(), p.size() + 1, h); // with the terminating NUL
  return hex64(h);
}

int64_t zrt::payloadBytes(const CheckpointManifest &m, int rank) {
  int64_t end = 0;
  for (const auto &b : m.buffers())
    if (b.rank() < 0 || b.rank() == rank)
      end = std::max(end, b.offset() + b.bytes());
  return end;
}

std::vector<CheckpointTensor> zrt::planTensors(const zero::zplan::Plan &plan) {
  std::vector<CheckpointTensor> tensors;
  std::set<std::string> seen;
  for (const auto &b : plan.buffers())
    if (persistentBuffer(b))
      addTensors(describeBuffer(b), tensors, seen);
  return tensors;
}
