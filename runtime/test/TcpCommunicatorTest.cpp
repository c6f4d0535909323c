//===- TcpCommunicatorTest.cpp - Ranks met through a TCP rendezvous -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The ranks here are threads, each with a TCP communicator of its own over the
// loopback interface: the same sockets and messages as ranks on different hosts.
//
//===----------------------------------------------------------------------===//

#include "CommunicatorGroups.h"
#include "CommunicatorQuantized.h"

#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/Launch.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>

using namespace zrt;

namespace {

/// A TCP port nobody listens at now.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

constexpr const char *kSecret = "0123456789abcdef-test-secret";

LaunchVariables launch(int rank, int world, int port, const std::string &secret = kSecret) {
  LaunchVariables v;
  v.launcher = "torchrun";
  v.rank = rank;
  v.worldSize = world;
  v.masterAddress = "127.0.0.1";
  v.masterPort = port;
  v.secret = secret;
  return v;
}

/// Runs `body(rank, comm)` for each of `ranks` (a subset of a world of `world`),
/// each on its own thread with its own TCP communicator; `errors[r]` is what rank
/// r threw, empty if nothing.
std::map<int, std::string> onTcpRanks(const std::vector<int> &ranks, int world,
                                      const std::function<void(int, Communicator &)> &body,
                                      double timeout = 20) {
  int port = freePort();
  std::map<int, std::string> errors;
  for (int r : ranks)
    errors[r];
  std::vector<std::thread> threads;
  for (int r : ranks)
    threads.emplace_back([&, r] {
      std::unique_ptr<Communicator> comm;
      try {
        comm = makeTcpCommunicator(launch(r, world, port), timeout);
        body(r, *comm);
      } catch (const std::exception &e) {
        errors[r] = e.what();
        if (comm)
          comm->abort(e.what());
      }
    });
  for (auto &t : threads)
    t.join();
  return errors;
}

std::vector<int> allRanks(int world) {
  std::vector<int> r(world);
  for (int i = 0; i < world; ++i)
    r[i] = i;
  return r;
}

/// Every collective, on data of type `t`, with `count` elements per rank; the
/// results as bytes, one string per rank and collective.
template <typename T>
std::vector<std::string> runCollectives(int rank, Communicator &comm, int64_t count, DType t) {
  std::mt19937 random(1234 + rank);
  std::uniform_real_distribution<float> value(-3, 3);
  int world = comm.size();
  auto bytesOf = [](const std::vector<T> &v) {
    return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
  };
  std::vector<std::string> out;
  std::vector<T> full(world * count);
  for (T &x : full)
    x = T(value(random));
  // In place, as the plan's buckets are: this rank's shard at out + rank * count.
  std::vector<T> gathered = full;
  comm.allGather(gathered.data() + rank * count, gathered.data(), count, t);
  out.push_back(bytesOf(gathered));
  std::vector<T> shard(count);
  comm.reduceScatterSum(full.data(), shard.data(), count, t);
  out.push_back(bytesOf(shard));
  // An all-reduce whose length the ranks do not divide, in place.
  std::vector<T> reduced(full.begin(), full.end() - 1);
  comm.allReduceSum(reduced.data(), reduced.data(), (int64_t)reduced.size(), t);
  out.push_back(bytesOf(reduced));
  std::vector<T> atRoot(world * count);
  comm.gatherToRoot(full.data(), atRoot.data(), count, t);
  if (rank == 0)
    out.push_back(bytesOf(atRoot));
  double mean = comm.meanOf(0.1 * (rank + 1));
  out.push_back(std::string(reinterpret_cast<const char *>(&mean), sizeof mean));
  std::vector<int64_t> ints = comm.allGatherInts(100 + rank);
  EXPECT_EQ(ints.size(), (size_t)world);
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(ints[r], 100 + r);
  ints = comm.gatherInts(7 * rank);
  EXPECT_EQ(ints.size(), rank == 0 ? (size_t)world : 1u);
  EXPECT_EQ(ints.back(), rank == 0 ? 7 * (world - 1) : 7 * rank);
  int64_t id = rank == 0 ? 42 : 0;
  comm.broadcast(&id, sizeof id);
  EXPECT_EQ(id, 42);
  return out;
}

/// The TCP ranks' results are the thread ranks' bit for bit: both sum in rank
/// order.
template <typename T> void expectSameAsThreads(DType t, int world, int64_t count) {
  std::vector<std::vector<std::string>> viaThreads(world), viaTcp(world);
  auto comms = makeThreadCommunicators(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back(
        [&, r] { viaThreads[r] = runCollectives<T>(r, *comms[r], count, t); });
  for (auto &th : threads)
    th.join();
  auto errors = onTcpRanks(allRanks(world), world, [&](int r, Communicator &comm) {
    viaTcp[r] = runCollectives<T>(r, comm, count, t);
    EXPECT_EQ(comm.allGatherElements, count * world);
    EXPECT_EQ(comm.reduceScatterElements, count * world);
    EXPECT_EQ(comm.allReduceElements, count * world - 1);
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(errors[r], "");
    ASSERT_EQ(viaTcp[r].size(), viaThreads[r].size());
    for (size_t k = 0; k < viaTcp[r].size(); ++k)
      EXPECT_TRUE(viaTcp[r][k] == viaThreads[r][k]) << "rank " << r << ", collective " << k;
  }
}

TEST(TcpCommunicator, CollectivesMatchThreadRanksBitForBit) {
  expectSameAsThreads<float>(zero::zplan::F32, 3, 1000);
  expectSameAsThreads<double>(zero::zplan::F64, 2, 17);
  expectSameAsThreads<bf16>(zero::zplan::BF16, 4, 333);
  expectSameAsThreads<f16>(zero::zplan::F16, 3, 5);
  // Larger than a socket's buffers: the exchange interleaves sends and receives.
  expectSameAsThreads<float>(zero::zplan::F32, 4, 3 << 20);
}

TEST(TcpCommunicator, Groups) {
  auto errors = onTcpRanks(allRanks(4), 4, [](int, Communicator &comm) {
    test::checkGroupsOfFour(comm);
  });
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(errors[r], "");
}

TEST(TcpCommunicator, QuantizedCollectives) {
  auto errors = onTcpRanks(allRanks(4), 4, [](int r, Communicator &comm) {
    test::checkQuantizedCollectives(comm);
    std::unique_ptr<Communicator> replicas = comm.split(r % 2, r);
    test::checkQuantizedCollectives(*replicas);
  });
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(errors[r], "");
}

TEST(TcpCommunicator, NamesTheRankThatNeverArrives) {
  auto errors = onTcpRanks({0, 1, 3}, 4, [](int, Communicator &) {}, /*timeout=*/1);
  for (int r : {0, 1, 3})
    EXPECT_NE(errors[r].find("rank 2 of 4 did not arrive at the rendezvous at 127.0.0.1:"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
  errors = onTcpRanks({1, 2}, 3, [](int, Communicator &) {}, /*timeout=*/1);
  for (int r : {1, 2})
    EXPECT_NE(errors[r].find("rank 0's rendezvous at 127.0.0.1:"), std::string::npos)
        << errors[r];
}

TEST(TcpCommunicator, RefusesTwoProcessesOfOneRank) {
  int port = freePort();
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k)
    threads.emplace_back([&, k] {
      try {
        makeTcpCommunicator(launch(k == 0 ? 0 : 1, 3, port), 5);
      } catch (const std::exception &e) {
        errors[k] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  for (const std::string &e : errors)
    EXPECT_NE(e.find("two processes say they are rank 1"), std::string::npos) << e;
}

// A process that does not hold the job's secret is not let in: rank 0 ignores it
// (with a warning) and waits on for the real rank; the impostor is told rank 0
// could not prove itself either. Then the real rank 1 joins and the collectives
// run.
TEST(TcpCommunicator, ARankWithoutTheSecretIsNotLetIn) {
  int port = freePort();
  std::string impostorError, rootError, realError;
  std::vector<float> sums(2);
  std::thread root([&] {
    try {
      auto comm = makeTcpCommunicator(launch(0, 2, port), 10);
      float x = 1;
      comm->allReduceSum(&x, &sums[0], 1, zero::zplan::F32);
    } catch (const std::exception &e) {
      rootError = e.what();
    }
  });
  try {
    makeTcpCommunicator(launch(1, 2, port, "another secret, 32 characters.."), 10);
  } catch (const std::exception &e) {
    impostorError = e.what();
  }
  std::thread real([&] {
    try {
      auto comm = makeTcpCommunicator(launch(1, 2, port), 10);
      float x = 2;
      comm->allReduceSum(&x, &sums[1], 1, zero::zplan::F32);
    } catch (const std::exception &e) {
      realError = e.what();
    }
  });
  root.join();
  real.join();
  EXPECT_NE(impostorError.find("is not this job's rank 0: it did not prove it holds this "
                               "job's ZERO_RUN_SECRET"),
            std::string::npos)
      << impostorError;
  EXPECT_EQ(rootError, "");
  EXPECT_EQ(realError, "");
  EXPECT_EQ(sums[0], 3.0f);
  EXPECT_EQ(sums[1], 3.0f);
}

TEST(TcpCommunicator, AFailedRankEndsTheOthersNamingIt) {
  auto errors = onTcpRanks(allRanks(4), 4, [](int r, Communicator &comm) {
    comm.meanOf(1.0);
    if (r == 1)
      throw Error("rank 1 failed on purpose");
    comm.meanOf(2.0);
  });
  EXPECT_EQ(errors[1], "rank 1 failed on purpose");
  for (int r : {0, 2, 3})
    EXPECT_EQ(errors[r], "rank 1 failed: rank 1 failed on purpose");
}

TEST(TcpCommunicator, ARankThatVanishesIsNamed) {
  // Rank 2 ends without a word (as a killed process does): its connections close.
  auto errors = onTcpRanks(allRanks(4), 4, [](int r, Communicator &comm) {
    comm.meanOf(1.0);
    if (r != 2)
      comm.meanOf(2.0);
  });
  EXPECT_EQ(errors[2], "");
  for (int r : {0, 1, 3})
    EXPECT_EQ(errors[r], "rank 2 closed its connection during the mean over ranks: it "
                         "failed (its own error says why) or was killed");
}

TEST(TcpCommunicator, RanksCallingDifferentCollectivesFailNamingBoth) {
  auto errors = onTcpRanks(allRanks(2), 2, [](int r, Communicator &comm) {
    std::vector<float> v(8);
    comm.allGather(v.data(), v.data(), r == 0 ? 2 : 3, zero::zplan::F32);
  });
  EXPECT_NE(errors[0].find("rank 1 sent an all-gather of 12 bytes where this rank waits "
                           "for an all-gather of 8 bytes"),
            std::string::npos)
      << errors[0];
}

/// Variables from a table, as getenv would give them.
std::optional<LaunchVariables> readFrom(std::map<std::string, std::string> table) {
  return readLaunchVariables([table](const char *name) -> const char * {
    auto it = table.find(name);
    return it == table.end() ? nullptr : it->second.c_str();
  });
}

std::string errorOf(std::map<std::string, std::string> table) {
  try {
    readFrom(table);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(LaunchVariables, TorchrunAndSlurm) {
  EXPECT_FALSE(readFrom({{"PATH", "/bin"}}));
  auto t = readFrom({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                     {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29500"},
                     {"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"},
                     {"ZERO_RUN_SECRET", kSecret}});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->launcher, "torchrun"); // torchrun within a Slurm job: torchrun's
  EXPECT_EQ(t->rank, 2);
  EXPECT_EQ(t->worldSize, 4);
  EXPECT_EQ(t->localRank, 0);
  EXPECT_EQ(t->masterAddress, "node7");
  EXPECT_EQ(t->masterPort, 29500);
  EXPECT_EQ(t->secret, kSecret);
  auto s = readFrom({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                     {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "6000"},
                     {"ZERO_RUN_SECRET", kSecret}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->launcher, "Slurm");
  EXPECT_EQ(s->rank, 3);
  EXPECT_EQ(s->worldSize, 8);
  EXPECT_EQ(s->localRank, 1);
  // One rank meets nobody: no address needed.
  auto one = readFrom({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->worldSize, 1);
}

TEST(LaunchVariables, IncompleteOrInvalidOnesAreNamed) {
  EXPECT_NE(errorOf({{"RANK", "1"}}).find("WORLD_SIZE is not set"), std::string::npos);
  EXPECT_NE(errorOf({{"RANK", "4"}, {"WORLD_SIZE", "4"}})
                .find("RANK='4' is not an integer in [0, 3]"),
            std::string::npos);
  EXPECT_NE(errorOf({{"RANK", "x"}, {"WORLD_SIZE", "4"}}).find("RANK='x'"),
            std::string::npos);
  EXPECT_NE(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}})
                .find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(errorOf({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "h"}})
                .find("MASTER_PORT is not set"),
            std::string::npos);
  EXPECT_NE(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                     {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT='70000' is not an integer in [1, 65535]"),
            std::string::npos);
  // No secret, or one too short to be one.
  EXPECT_NE(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                     {"MASTER_PORT", "29500"}})
                .find("WORLD_SIZE=2 (torchrun) and ZERO_RUN_SECRET is not set"),
            std::string::npos);
  EXPECT_NE(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                     {"MASTER_PORT", "29500"}, {"ZERO_RUN_SECRET", "short"}})
                .find("ZERO_RUN_SECRET has 5 characters"),
            std::string::npos);
  // A world no launch has: named at once, nothing allocated for it.
  EXPECT_NE(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2147483647"}})
                .find("WORLD_SIZE='2147483647' is not an integer in [1, 1048576]"),
            std::string::npos);
}

} // namespace
