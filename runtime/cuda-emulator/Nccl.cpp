//===- Nccl.cpp - Emulated NCCL collectives --------------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The ranks of a communicator are threads of this process, each draining its own
// device's streams; a collective runs when all of them reach it.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"
#include "nccl.h"
#include "zrt/Float16.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

using namespace zero_cuda_emulator::detail;

namespace {

enum class Kind { AllGather, ReduceScatter, AllReduce, AlltoAll };

/// What one rank brings to a collective.
struct Post {
  Kind kind;
  const void *send;
  size_t count; // elements each rank sends (all-gather), receives (reduce-scatter),
                // or both (all-reduce)
  ncclDataType_t type;
};

/// The ranks of one communicator, meeting at each collective.
struct Clique {
  explicit Clique(int n) : ranks(n), posts(n) {}
  int ranks;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Post> posts;
  int arrived = 0, joined = 0;
  uint64_t generation = 0, collectives = 0;
  bool aborted = false; // ncclCommAbort on any rank: collectives stop
  // ncclCommSplit: each rank's color and key, and the groups made so far (by
  // split number and color), each made by the first of its members to look.
  std::vector<std::pair<int, int>> splitPosts;
  std::map<std::pair<uint64_t, int>, std::shared_ptr<Clique>> groups;
};

/// Waits (mutex held) until every rank of `c` has arrived; false when the clique
/// was aborted instead.
bool meet(std::unique_lock<std::mutex> &lock, Clique &c, int rank) {
  if (c.aborted)
    return false;
  uint64_t generation = c.generation;
  if (++c.arrived == c.ranks) {
    c.arrived = 0;
    ++c.generation;
    c.changed.notify_all();
    return true;
  }
  if (!c.changed.wait_for(lock, std::chrono::seconds(60),
                          [&] { return c.generation != generation || c.aborted; }))
    fatal("NCCL rank " + std::to_string(rank) + " waited 60 s for the others at collective #" +
          std::to_string(c.collectives) +
          " (a rank stopped, or the ranks issue different collectives)");
  return !c.aborted;
}

size_t typeSize(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  default:
    return 8;
  }
}

/// Sums in Acc (16-bit floats in f32, rounded once, as NCCL's kernels do).
template <typename T, typename Acc = T>
void sumInto(std::vector<char> &out, const std::vector<Post> &posts, size_t offset,
             size_t count) {
  T *o = reinterpret_cast<T *>(out.data());
  for (size_t i = 0; i < count; ++i) {
    Acc acc = static_cast<const T *>(posts[0].send)[offset + i];
    for (size_t r = 1; r < posts.size(); ++r)
      acc += static_cast<const T *>(posts[r].send)[offset + i];
    o[i] = T(acc);
  }
}

void sumInto(std::vector<char> &out, const std::vector<Post> &posts, size_t offset,
             size_t count, ncclDataType_t type) {
  switch (type) {
  case ncclFloat32:
    return sumInto<float>(out, posts, offset, count);
  case ncclFloat64:
    return sumInto<double>(out, posts, offset, count);
  case ncclInt32:
    return sumInto<int32_t>(out, posts, offset, count);
  case ncclInt64:
    return sumInto<int64_t>(out, posts, offset, count);
  case ncclBfloat16:
    return sumInto<zrt::bf16, float>(out, posts, offset, count);
  case ncclFloat16:
    return sumInto<zrt::f16, float>(out, posts, offset, count);
  default:
    fatal("NCCL sums of type " + std::to_string((int)type) + " are not emulated");
  }
}

} // namespace

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0, device = 0;
  uint64_t splits = 0; // ncclCommSplit calls so far (every rank makes the same)
};

namespace {

/// Runs rank `rank`'s part of a collective of clique `c` (on its stream, in
/// order). It holds the clique, not the communicator: an aborted communicator is
/// freed while its collectives may still be queued.
void collective(Clique &c, int rank, Post post, void *recv) {
  size_t size = typeSize(post.type), n = (size_t)c.ranks;
  bool spread = post.kind == Kind::AllGather || post.kind == Kind::AlltoAll;
  size_t outCount = spread ? post.count * n : post.count;
  std::vector<char> out(outCount * size);
  std::unique_lock<std::mutex> lock(c.mutex);
  c.posts[rank] = post;
  if (!meet(lock, c, rank))
    return; // aborted: no data, as an aborted NCCL kernel leaves it
  for (const Post &p : c.posts)
    if (p.kind != post.kind || p.count != post.count || p.type != post.type)
      fatal("NCCL ranks disagree at collective #" + std::to_string(c.collectives) +
            ": rank " + std::to_string(rank) + " issued kind " +
            std::to_string((int)post.kind) + " of " + std::to_string(post.count) +
            " elements, another kind " + std::to_string((int)p.kind) + " of " +
            std::to_string(p.count));
  lock.unlock();
  // Every rank's send buffer stays put until all have read it (the second meeting).
  if (post.kind == Kind::AlltoAll) {
    for (size_t r = 0; r < n; ++r)
      std::memcpy(out.data() + r * post.count * size,
                  static_cast<const char *>(c.posts[r].send) + rank * post.count * size,
                  post.count * size);
  } else if (post.kind == Kind::AllGather) {
    for (size_t r = 0; r < n; ++r)
      std::memcpy(out.data() + r * post.count * size, c.posts[r].send, post.count * size);
  } else {
    size_t offset = post.kind == Kind::ReduceScatter ? rank * post.count : 0;
    sumInto(out, c.posts, offset, post.count, post.type);
  }
  lock.lock();
  if (!meet(lock, c, rank))
    return;
  if (rank == 0)
    ++c.collectives;
  lock.unlock();
  std::memcpy(recv, out.data(), out.size());
}

ncclResult_t enqueueCollective(const char *call, ncclComm_t comm, cudaStream_t stream,
                               Post post, void *recv) {
  if (!comm || !stream)
    return ncclInvalidArgument;
  if (stream->device != comm->device) {
    complain(cudaErrorInvalidValue, std::string(call) + ": the stream is on device " +
                                        std::to_string(stream->device) +
                                        ", the communicator's GPU is " +
                                        std::to_string(comm->device));
    return ncclInvalidUsage;
  }
  size_t size = typeSize(post.type), n = (size_t)comm->clique->ranks;
  bool toAll = post.kind == Kind::AlltoAll;
  size_t sendCount =
      post.kind == Kind::ReduceScatter || toAll ? post.count * n : post.count;
  size_t recvCount = post.kind == Kind::AllGather || toAll ? post.count * n : post.count;
  // NCCL user guide, "Using NCCL with CUDA Graphs": "Using multiple GPUs per
  // process with CUDA graph capture may result in deadlocks ... We recommend
  // running with a single GPU per process". Every emulated communicator of more
  // than one rank has its ranks in this process, as threads driving their GPUs.
  if (stream->capture && n > 1) {
    complain(cudaErrorStreamCaptureUnsupported,
             std::string(call) + ": captured into a CUDA graph on one of " +
                 std::to_string(n) + " GPUs of this process (NCCL's guidance: one GPU "
                 "per process where graphs hold collectives)");
    if (stream->capture->invalid.empty())
      stream->capture->invalid = std::string(call) + " over several GPUs of one process";
    return ncclInvalidUsage;
  }
  if (!post.count)
    return ncclSuccess;
  if (deviceOf(call, post.send, sendCount * size) < 0 ||
      deviceOf(call, recv, recvCount * size) < 0)
    return ncclInvalidArgument;
  enqueue(stream, [clique = comm->clique, rank = comm->rank, post, recv] {
    collective(*clique, rank, post, recv);
  });
  return ncclSuccess;
}

std::mutex idMutex;
std::map<std::string, std::shared_ptr<Clique>> cliquesById;

} // namespace

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  default:
    return "internal error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static std::mutex m;
  static uint64_t next = 0;
  std::lock_guard<std::mutex> lock(m);
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "emulated-%llu",
                (unsigned long long)next++);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return ncclInvalidArgument;
  std::shared_ptr<Clique> clique;
  {
    std::lock_guard<std::mutex> lock(idMutex);
    std::shared_ptr<Clique> &slot = cliquesById[std::string(id.internal, sizeof id.internal)];
    if (!slot)
      slot = std::make_shared<Clique>(ranks);
    clique = slot;
  }
  std::unique_lock<std::mutex> lock(clique->mutex);
  if (clique->ranks != ranks)
    return ncclInvalidUsage;
  ++clique->joined;
  clique->changed.notify_all();
  // Like NCCL, wait for every rank; only ranks that are threads of this process
  // can arrive here.
  if (!clique->changed.wait_for(lock, std::chrono::seconds(10),
                                [&] { return clique->joined == ranks; })) {
    std::fprintf(stderr, "cuda-emulator: ncclCommInitRank: %d of %d ranks joined in 10 s "
                         "(ranks in other processes, as under mpirun, are not emulated)\n",
                 clique->joined, ranks);
    return ncclInvalidUsage;
  }
  *comm = new ncclComm{clique, rank, currentDevice};
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ranks, const int *devices) {
  if (ranks < 1)
    return ncclInvalidArgument;
  auto clique = std::make_shared<Clique>(ranks);
  clique->joined = ranks;
  for (int r = 0; r < ranks; ++r) {
    int device = devices ? devices[r] : r;
    if (device < 0 || device >= deviceCount())
      return ncclInvalidArgument;
    comms[r] = new ncclComm{clique, r, device};
  }
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm)
    return ncclInvalidArgument;
  {
    std::lock_guard<std::mutex> lock(comm->clique->mutex);
    comm->clique->aborted = true;
  }
  comm->clique->changed.notify_all();
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendCount,
                           ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  return enqueueCollective("ncclAllGather", comm, stream,
                           Post{Kind::AllGather, send, sendCount, type}, recv);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvCount,
                               ncclDataType_t type, ncclRedOp_t, ncclComm_t comm,
                               cudaStream_t stream) {
  return enqueueCollective("ncclReduceScatter", comm, stream,
                           Post{Kind::ReduceScatter, send, recvCount, type}, recv);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t, ncclComm_t comm, cudaStream_t stream) {
  return enqueueCollective("ncclAllReduce", comm, stream,
                           Post{Kind::AllReduce, send, count, type}, recv);
}

ncclResult_t ncclAlltoAll(const void *send, void *recv, size_t count, ncclDataType_t type,
                          ncclComm_t comm, cudaStream_t stream) {
  return enqueueCollective("ncclAlltoAll", comm, stream,
                           Post{Kind::AlltoAll, send, count, type}, recv);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *) {
  if (!comm || !newcomm)
    return ncclInvalidArgument;
  Clique &c = *comm->clique;
  uint64_t split = comm->splits++;
  std::unique_lock<std::mutex> lock(c.mutex);
  c.splitPosts.resize(c.ranks);
  c.splitPosts[comm->rank] = {color, key};
  if (!meet(lock, c, comm->rank))
    return ncclInvalidUsage;
  // The members of this color, by key then rank; this rank's place among them.
  std::vector<std::pair<int, int>> members; // (key, rank)
  for (int r = 0; r < c.ranks; ++r)
    if (c.splitPosts[r].first == color)
      members.push_back({c.splitPosts[r].second, r});
  std::sort(members.begin(), members.end());
  int index = 0;
  while (members[index].second != comm->rank)
    ++index;
  std::shared_ptr<Clique> group;
  if (color != NCCL_SPLIT_NOCOLOR) {
    std::shared_ptr<Clique> &slot = c.groups[{split, color}];
    if (!slot) {
      slot = std::make_shared<Clique>((int)members.size());
      slot->joined = (int)members.size();
    }
    group = slot;
  }
  // Every rank has read the posts before the next split may write them.
  if (!meet(lock, c, comm->rank))
    return ncclInvalidUsage;
  *newcomm = group ? new ncclComm{group, index, comm->device} : nullptr;
  return ncclSuccess;
}

