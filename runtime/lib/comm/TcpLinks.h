//===- TcpLinks.h - The connections of ranks met through TCP ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What TcpCommunicator and its groups share: one connection to every other rank,
// made by the rendezvous at MASTER_ADDR:MASTER_PORT, and the exchange that sends
// and receives messages over them at once. Peers are named by their rank in the
// launch (the world).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_COMM_TCPLINKS_H
#define ZRT_COMM_TCPLINKS_H

#include "zrt/Launch.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace zrt::tcp {

/// What each message kind is called in errors.
enum class Kind : uint32_t {
  AllGather,
  ReduceScatter,
  AllReduce,
  Gather,
  Mean,
  Counts,
  Agreement,
  Broadcast,
  AllToAll,
  Failure ///< a peer's last message: why it stops
};
const char *kindName(Kind k);

struct MessageHeader {
  uint32_t magic, kind;
  uint64_t bytes;
};

/// One message to or from one peer within an exchange.
struct Transfer {
  Transfer(int peer, char *data, size_t bytes) : peer(peer), data(data), bytes(bytes) {}
  int peer; ///< by world rank
  char *data;
  size_t bytes;
  // Progress: the header first, then the data.
  MessageHeader header{};
  size_t done = 0;
  std::string notice; ///< a failure notice's text, received instead of the data
};

constexpr size_t kMaxNoticeBytes = 4096;

/// Owns a socket.
struct Socket {
  int fd = -1;
  Socket() = default;
  explicit Socket(int fd) : fd(fd) {}
  Socket(Socket &&o) : fd(o.fd) { o.fd = -1; }
  Socket &operator=(Socket &&o) {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Socket() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// The world's connections, this rank's end.
class TcpLinks {
public:
  /// Meets the other ranks of the launch `v` (TcpCommunicator's contract).
  TcpLinks(const LaunchVariables &v, double timeoutSeconds);
  TcpLinks(const TcpLinks &) = delete;
  TcpLinks &operator=(const TcpLinks &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// MASTER_ADDR:MASTER_PORT.
  const std::string &where() const { return where_; }

  /// Runs `sends` and `recvs` (at most one of each per peer, peers by world
  /// rank) to completion; a peer that failed, closed or desynchronized is an
  /// Error naming it.
  void exchange(Kind kind, std::vector<Transfer> &sends, std::vector<Transfer> &recvs);
  /// Tells every peer why this rank stops (where its messages are whole), then
  /// closes every connection.
  void abort(const std::string &why);

private:
  void rendezvousAsRoot(uint32_t address, int port,
                        std::chrono::steady_clock::time_point deadline, double timeoutSeconds);
  void rendezvousAsPeer(uint32_t master, int port, std::chrono::steady_clock::duration timeout,
                        double timeoutSeconds);
  [[noreturn]] void failWith(const std::string &why);
  void checkHeader(Kind kind, Transfer &x);

  int rank_, size_;
  std::vector<Socket> peers_;    ///< peers_[p]: the connection to rank p
  std::vector<char> midMessage_; ///< a message to peer p is partly sent
  std::string where_, firstFailure_;
  std::string secret_; ///< ZERO_RUN_SECRET (JobSecret.h)
  std::mutex mutex_;
  std::atomic<bool> aborted_{false};
};

} // namespace zrt::tcp

#endif // ZRT_COMM_TCPLINKS_H
