//===- PlanVerifier.cpp - A plan's checks beyond its file format ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/PlanVerifier.h"
#include "zrt/RankGroups.h"
#include "zrt/Error.h"
#include "zrt/Tensor.h"
#include "zplan/KernelKind.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

using namespace zrt;
using zero::zplan::Kernel;
using zero::zplan::Plan;

namespace {

std::string nameOf(const Plan &plan, int i) {
  const auto &b = plan.buffers(i);
  return "buffer " + std::to_string(i) + (b.name().empty() ? "" : " ('" + b.name() + "')");
}

std::string kernelName(const Plan &plan, int k) {
  const auto &kern = plan.kernels(k);
  return "kernel " + std::to_string(k) + " (" + zero::zplan::kernelKindName(kern.kind()) + ")" +
         (kern.loc().empty() ? "" : " at " + kern.loc());
}

bool isStart(Kernel::Kind kind) { return zero::zplan::synchronousKind(kind) != kind; }

int64_t numel(const zero::zplan::Buffer &b) {
  int64_t n = 1;
  for (int64_t d : b.shape())
    n *= d; // validatePlan checked that this does not overflow
  return n;
}

/// Collectives on the plan's grid: flat buffers of one dtype whose sizes fit the
/// world size (an all-gather's output and a reduce-scatter's input are N slices).
void checkCollective(const Plan &plan, int k, const std::string &what) {
  const auto &kern = plan.kernels(k);
  Kernel::Kind kind = zero::zplan::synchronousKind(kern.kind());
  if (kind != Kernel::ALL_GATHER && kind != Kernel::REDUCE_SCATTER &&
      kind != Kernel::ALL_REDUCE && kind != Kernel::ALL_SLICE)
    return;
  ZRT_CHECK(kern.inputs_size() == 1 && kern.outputs_size() == 1,
            what << ": " << kernelName(plan, k) << " needs one input and one output, "
                 << "the plan gives " << kern.inputs_size() << " and "
                 << kern.outputs_size());
  const auto &in = plan.buffers(kern.inputs(0)), &out = plan.buffers(kern.outputs(0));
  ZRT_CHECK(in.shape_size() == 1 && out.shape_size() == 1 && in.dtype() == out.dtype(),
            what << ": " << kernelName(plan, k) << " needs flat buffers of one dtype");
  int64_t n = 0, i = numel(in), o = numel(out);
  bool group = kernelRankGroup(plan, k, n, what) != RankGroup::World;
  bool fits = kind == Kernel::ALL_GATHER   ? o / n == i && o % n == 0
              : kind == Kernel::ALL_REDUCE ? i == o
                                           : i / n == o && i % n == 0;
  ZRT_CHECK(fits, what << ": " << kernelName(plan, k) << " moves " << i << " -> " << o
                       << " elements, which does not fit the " << n << " ranks of "
                       << (group ? "its group" : "the plan"));
}

/// Start/wait pairs: each start's request is its own and waited for once, later,
/// on the start's output; a wait has no inputs, one output, and a started request.
/// Returns, per start kernel, the index of its wait.
std::map<int, int> pairStartsAndWaits(const Plan &plan, const std::string &what) {
  std::map<int64_t, int> startOf; // request -> start kernel
  std::map<int, int> waitOf;      // start kernel -> wait kernel
  auto requestOf = [&](int k) -> int64_t {
    const auto &attrs = plan.kernels(k).attrs();
    auto it = attrs.find("request");
    ZRT_CHECK(it != attrs.end() && it->second.value_case() == zero::zplan::Attr::kI,
              what << ": " << kernelName(plan, k) << " has no integer 'request'");
    int64_t r = it->second.i();
    ZRT_CHECK(r >= 0 && r < plan.kernels_size(),
              what << ": " << kernelName(plan, k) << " has request id " << r
                   << ", out of range");
    return r;
  };
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const auto &kern = plan.kernels(k);
    if (isStart(kern.kind())) {
      int64_t r = requestOf(k);
      auto [it, fresh] = startOf.emplace(r, k);
      ZRT_CHECK(fresh, what << ": " << kernelName(plan, k) << " reuses request " << r
                            << " of " << kernelName(plan, it->second));
    } else if (kern.kind() == Kernel::WAIT) {
      int64_t r = requestOf(k);
      ZRT_CHECK(kern.inputs_size() == 0 && kern.outputs_size() == 1,
                what << ": " << kernelName(plan, k)
                     << " needs no input and one output (the started collective's)");
      auto it = startOf.find(r);
      ZRT_CHECK(it != startOf.end(), what << ": " << kernelName(plan, k)
                                          << " waits for request " << r
                                          << ", which no earlier kernel started");
      ZRT_CHECK(!waitOf.count(it->second),
                what << ": " << kernelName(plan, k) << " waits for request " << r
                     << " a second time (after " << kernelName(plan, waitOf[it->second])
                     << ")");
      ZRT_CHECK(plan.kernels(it->second).outputs_size() == 1 &&
                    plan.kernels(it->second).outputs(0) == kern.outputs(0),
                what << ": " << kernelName(plan, k) << " completes "
                     << nameOf(plan, kern.outputs(0)) << ", not the buffer "
                     << kernelName(plan, it->second) << " writes");
      waitOf[it->second] = k;
    }
  }
  for (const auto &[r, k] : startOf)
    ZRT_CHECK(waitOf.count(k), what << ": " << kernelName(plan, k) << " starts request "
                                    << r << ", which no kernel waits for");
  return waitOf;
}

} // namespace

bool zrt::runsOnHost(const zero::zplan::Plan &plan, int k) {
  const auto &pk = plan.kernels(k);
  if (pk.kind() == Kernel::NVME_READ || pk.kind() == Kernel::NVME_WRITE)
    return true; // the host moves the bytes between the file and host memory
  return pk.kind() != Kernel::TO_HOST && pk.kind() != Kernel::TO_DEVICE &&
         pk.outputs_size() > 0 && plan.buffers(pk.outputs(0)).host();
}

void zrt::verifyPlan(const Plan &plan, const std::string &what) {
  ZRT_CHECK(plan.outputs_size() > 0, what << ": the plan has no outputs");

  int n = plan.kernels_size();
  for (int k = 0; k < n; ++k)
    checkCollective(plan, k, what);
  std::map<int, int> waitOf = pairStartsAndWaits(plan, what);

  // Live ranges in kernel positions: [first, last], persistent buffers [0, n].
  int buffers = plan.buffers_size();
  std::vector<int> first(buffers, n + 1), last(buffers, -1);
  auto touch = [&](int b, int k) {
    first[b] = std::min(first[b], k);
    last[b] = std::max(last[b], k);
  };
  for (int k = 0; k < n; ++k) {
    const auto &kern = plan.kernels(k);
    // A started collective reads and writes its buffers until its wait.
    int until = waitOf.count(k) ? waitOf[k] : k;
    for (int b : kern.inputs()) {
      touch(b, k);
      touch(b, until);
    }
    for (int b : kern.outputs()) {
      touch(b, k);
      touch(b, until);
    }
  }
  for (const auto &o : plan.outputs()) {
    int b = o.buffer();
    first[b] = std::min(first[b], n);
    last[b] = n; // read by the host after the last kernel
  }
  // A view's readers read its root: the root lives as long as they do, and the
  // view itself takes no bytes of its own.
  for (int i = 0; i < buffers; ++i) {
    const auto &b = plan.buffers(i);
    if (!b.has_view_of() || last[i] < 0)
      continue;
    touch(b.view_of(), first[i]);
    touch(b.view_of(), last[i]);
  }
  for (int i = 0; i < buffers; ++i) {
    const auto &b = plan.buffers(i);
    int64_t size = dtypeSize(b.dtype());
    ZRT_CHECK(b.offset() % size == 0, what << ": " << nameOf(plan, i) << " at offset "
                                           << b.offset() << " is not aligned to its "
                                           << size << "-byte elements");
    // Host temporaries share bytes only when a host kernel writes the later one:
    // host kernels run one after another on their own thread, each once the
    // copies issued before it are done, so whatever read the earlier one has. A
    // copy to the host does not wait for the host kernels before it: its result
    // keeps its bytes for the whole step.
    bool hostKernelWrites = false;
    if (b.host() && first[i] < n) {
      const auto &outs = plan.kernels(first[i]).outputs();
      hostKernelWrites =
          runsOnHost(plan, first[i]) && std::count(outs.begin(), outs.end(), i);
    }
    if (b.role() != zero::zplan::TEMP || (b.host() && !hostKernelWrites)) {
      first[i] = 0;
      last[i] = n;
    }
  }

  // Sweep the kernels in order, keeping the live buffers by offset: each newly
  // live buffer must not overlap its neighbours (the live set stays disjoint).
  std::vector<int> order;
  for (int i = 0; i < buffers; ++i)
    if (last[i] >= 0 && plan.buffers(i).bytes() > 0 && !plan.buffers(i).has_view_of())
      order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return first[a] < first[b]; });
  std::multimap<int, int> dying;      // last position -> buffer
  // The three memories: the device arena, the host arena, the NVMe file.
  auto space = [](const zero::zplan::Buffer &b) { return b.nvme() ? 2 : b.host() ? 1 : 0; };
  std::map<std::pair<int, int64_t>, int> live; // (space, offset) -> buffer
  for (int i : order) {
    // Retire what died before this buffer's first kernel.
    while (!dying.empty() && dying.begin()->first < first[i]) {
      const auto &d = plan.buffers(dying.begin()->second);
      live.erase({space(d), d.offset()});
      dying.erase(dying.begin());
    }
    const auto &b = plan.buffers(i);
    int64_t begin = b.offset(), end = b.offset() + b.bytes();
    auto next = live.lower_bound({space(b), begin});
    int clash = -1;
    if (next != live.end() && next->first.first == space(b) && next->first.second < end)
      clash = next->second;
    if (clash < 0 && next != live.begin()) {
      auto prev = std::prev(next);
      const auto &p = plan.buffers(prev->second);
      if (space(p) == space(b) && p.offset() + p.bytes() > begin)
        clash = prev->second;
    }
    ZRT_CHECK(clash < 0,
              what << ": " << nameOf(plan, i) << " [" << begin << ", " << end
                   << ") and " << nameOf(plan, clash) << " ["
                   << plan.buffers(clash).offset() << ", "
                   << plan.buffers(clash).offset() + plan.buffers(clash).bytes()
                   << ") share bytes while both are alive (kernels "
                   << std::max(first[i], first[clash]) << " to "
                   << std::min(last[i], last[clash]) << ")");
    live.emplace(std::make_pair(space(b), begin), i);
    dying.emplace(last[i], i);
  }
}
