//===- RendezvousFuzzer.cpp - libFuzzer target: rank 0's rendezvous answer --===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Rank 1 of a 2-rank launch without mpirun meets "rank 0" over loopback; rank 0
// is this harness, and what it answers is the input. Input byte 0 chooses: even,
// the whole answer (challenge and reply) is the input's rest, as an impostor
// would send it; odd, the harness answers the challenge as the real rank 0 would
// (it holds the job's secret) and the reply that follows (status, length, the
// address table or an error text) is the input's rest. Either way it then closes
// the connection. A refusal (zrt::Error) is fine; a rank that joins must have a
// table of its world's size. Crashes, reads past a message, leaks and undefined
// behaviour are findings. Only the loopback address is used (a world of 2: rank
// 1 connects to no other rank). Built by utils/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/lib/comm/JobSecret.h"

#include "zrt/Error.h"
#include "zrt/Launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr const char *kSecret = "fuzzing-secret-0123456789abcdef";

/// A listener on 127.0.0.1 at a port of the system's choice.
int listenOnLoopback(int &port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0)
    std::abort();
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

bool readAll(int fd, void *p, size_t n) {
  char *c = static_cast<char *>(p);
  while (n > 0) {
    ssize_t got = ::recv(fd, c, n, 0);
    if (got <= 0)
      return false;
    c += got;
    n -= (size_t)got;
  }
  return true;
}

void sendAll(int fd, const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  while (n > 0) {
    ssize_t sent = ::send(fd, c, n, MSG_NOSIGNAL);
    if (sent <= 0)
      return;
    c += sent;
    n -= (size_t)sent;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int port = 0;
  int listener = listenOnLoopback(port);
  bool honest = data[0] & 1;
  std::thread root([&] {
    int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0)
      return;
    // TcpLinks.cpp's Hello (52 bytes) and, from an honest rank 0, its Challenge.
    char hello[52];
    if (readAll(fd, hello, sizeof hello)) {
      if (honest) {
        zrt::tcp::Nonce nonce{};
        zrt::tcp::Proof proof = zrt::tcp::proofOf(kSecret, "acceptor", hello, sizeof hello, nonce);
        char challenge[72];
        std::memcpy(challenge, "zrunrdv1", 8);
        std::memcpy(challenge + 8, nonce.data(), 32);
        std::memcpy(challenge + 40, proof.data(), 32);
        sendAll(fd, challenge, sizeof challenge);
        char answer[32];
        readAll(fd, answer, sizeof answer);
      }
      sendAll(fd, data + 1, size - 1);
    }
    ::shutdown(fd, SHUT_WR);
    char drain[256];
    while (::recv(fd, drain, sizeof drain, 0) > 0) {
    }
    ::close(fd);
  });
  zrt::LaunchVariables v;
  v.launcher = "torchrun";
  v.rank = 1;
  v.worldSize = 2;
  v.masterAddress = "127.0.0.1";
  v.masterPort = port;
  v.secret = kSecret;
  try {
    auto comm = zrt::makeTcpCommunicator(v, 2.0);
    if (comm->size() != 2 || comm->rank() != 1)
      std::abort();
  } catch (const zrt::Error &) {
  }
  root.join();
  ::close(listener);
  return 0;
}
