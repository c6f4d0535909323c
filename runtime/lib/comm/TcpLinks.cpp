//===- TcpLinks.cpp - The connections of ranks met through TCP -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Rank 0 listens at MASTER_PORT; every other rank connects to MASTER_ADDR:MASTER_PORT,
// says its rank, world size and the port it listens at; once all have arrived rank
// 0 sends each the table of addresses (or, when one never arrives, the error
// naming it). Every pair of ranks then holds one connection: rank 0's are the
// rendezvous connections, a higher rank connects to each lower one.
//
// Each message starts with its kind and size: ranks that call different
// collectives fail naming both instead of reading each other's data as their own.
// Messages are in host byte order: the ranks of a job run the same binary on the
// same kind of machine.
//
//===----------------------------------------------------------------------===//

#include "TcpLinks.h"
#include "JobSecret.h"

#include "zrt/Error.h"
#include "zrt/Watchdog.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

using namespace zrt;
using namespace zrt::tcp;

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kRendezvousMagic[8] = {'z', 'r', 'u', 'n', 'r', 'd', 'v', '1'};
constexpr char kMeshMagic[8] = {'z', 'r', 'u', 'n', 'm', 's', 'h', '1'};
constexpr uint32_t kMessageMagic = 0x5a52544d; // "ZRTM"

/// A rendezvous connection's first message (rank > 0 to rank 0), and a mesh
/// connection's (higher rank to lower; port unused), with the initiator's nonce.
struct Hello {
  char magic[8];
  int32_t rank, worldSize;
  uint32_t port;
  Nonce nonce;
};
/// The acceptor's answer to a hello: its nonce and its proof of the secret over
/// both; the initiator then sends its own proof (JobSecret.h).
struct Challenge {
  char magic[8];
  Nonce nonce;
  Proof proof;
};
static_assert(sizeof(Hello) == 52 && sizeof(Challenge) == 72, "no padding on the wire");
/// Rank 0's answer: status 0 and worldSize Endpoints, or status 1 and `length`
/// bytes of error text.
struct Reply {
  char magic[8];
  int32_t status;
  uint32_t length;
};
struct Endpoint {
  uint32_t address; ///< IPv4, network order
  uint32_t port;
};

std::string errnoText(int e = errno) { return std::strerror(e); }

std::string addressText(uint32_t address, uint32_t port) {
  char text[INET_ADDRSTRLEN] = "?";
  in_addr a{address};
  inet_ntop(AF_INET, &a, text, sizeof text);
  return std::string(text) + ":" + std::to_string(port);
}

int millisecondsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return (int)std::max<int64_t>(0, std::min<int64_t>(left.count(), 1000));
}

void setBlocking(int fd, bool blocking) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

/// Sends or receives all `bytes` on a non-blocking socket by `deadline`; false on
/// timeout, end of stream or error (`why` says which).
bool transferAll(int fd, void *data, size_t bytes, bool sending, Clock::time_point deadline,
                 std::string &why) {
  char *p = static_cast<char *>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = sending ? ::send(fd, p + done, bytes - done, MSG_NOSIGNAL)
                        : ::recv(fd, p + done, bytes - done, 0);
    if (n > 0) {
      done += n;
      continue;
    }
    if (n == 0) {
      why = "the connection was closed";
      return false;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      why = errnoText();
      return false;
    }
    if (Clock::now() >= deadline) {
      why = "timed out";
      return false;
    }
    pollfd pfd{fd, (short)(sending ? POLLOUT : POLLIN), 0};
    ::poll(&pfd, 1, millisecondsLeft(deadline));
  }
  return true;
}

/// MASTER_ADDR as an IPv4 address.
uint32_t resolve(const std::string &host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  ZRT_CHECK(rc == 0 && found, "MASTER_ADDR '" << host << "' does not resolve to an IPv4 "
                                              << "address: " << gai_strerror(rc));
  uint32_t address = reinterpret_cast<sockaddr_in *>(found->ai_addr)->sin_addr.s_addr;
  freeaddrinfo(found);
  return address;
}

/// A non-blocking socket listening at `address` (IPv4, network order), `port` (0:
/// any).
Socket listenAt(uint32_t address, int port, const std::string &what) {
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  ZRT_CHECK(s.fd >= 0, "cannot open a socket: " << errnoText());
  int one = 1;
  setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = address;
  a.sin_port = htons((uint16_t)port);
  ZRT_CHECK(::bind(s.fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0,
            "cannot listen at " << what << ": " << errnoText()
                                << (errno == EADDRINUSE ? " (another job's rendezvous, or "
                                                          "another program, has the port)"
                                    : errno == EADDRNOTAVAIL
                                        ? " (MASTER_ADDR must be an address of rank 0's "
                                          "own host)"
                                        : ""));
  ZRT_CHECK(::listen(s.fd, SOMAXCONN) == 0, "cannot listen at " << what << ": " << errnoText());
  setBlocking(s.fd, false);
  return s;
}

int boundPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  return ntohs(a.sin_port);
}

/// A connection accepted by `deadline`, or none; `from` is the peer's address.
Socket acceptBy(int listener, Clock::time_point deadline, sockaddr_in &from) {
  while (true) {
    socklen_t len = sizeof from;
    int fd = ::accept(listener, reinterpret_cast<sockaddr *>(&from), &len);
    if (fd >= 0) {
      setBlocking(fd, false);
      return Socket(fd);
    }
    if (Clock::now() >= deadline)
      return Socket();
    pollfd pfd{listener, POLLIN, 0};
    ::poll(&pfd, 1, millisecondsLeft(deadline));
  }
}

/// A connection to address:port, retried until `deadline` while nobody listens
/// there yet; none at the deadline (`why` says what the last try met).
Socket connectBy(uint32_t address, int port, Clock::time_point deadline, std::string &why) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = address;
  a.sin_port = htons((uint16_t)port);
  while (true) {
    Socket s(::socket(AF_INET, SOCK_STREAM, 0));
    ZRT_CHECK(s.fd >= 0, "cannot open a socket: " << errnoText());
    setBlocking(s.fd, false);
    int rc = ::connect(s.fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd pfd{s.fd, POLLOUT, 0};
      ::poll(&pfd, 1, millisecondsLeft(deadline));
      socklen_t len = sizeof err;
      if (pfd.revents)
        getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      else
        err = ETIMEDOUT;
    }
    if (err == 0)
      return s;
    why = errnoText(err);
    if (Clock::now() >= deadline)
      return Socket();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

/// "rank 3" or "ranks 2, 3".
std::string rankList(const std::vector<int> &ranks) {
  std::ostringstream s;
  s << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i)
    s << (i ? ", " : "") << ranks[i];
  return s.str();
}

/// Small messages go out at once; a peer whose host vanished (a cut link) is
/// found within about 30 s even while this rank only waits (keepalive) or has
/// data unacknowledged (TCP_USER_TIMEOUT), rather than at the collective timeout.
void tune(int fd) {
  int one = 1, idle = 10, interval = 5, probes = 3, userTimeoutMs = 30000;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeoutMs, sizeof userTimeoutMs);
}

/// The acceptor's half of a connection's start, once the hello `h` is in: sends
/// its challenge and checks the initiator's proof. False, `why` set, when the
/// initiator does not prove it holds `secret`.
bool checkInitiator(int fd, const Hello &h, const char *magic, const std::string &secret,
                    Clock::time_point deadline, std::string &why) {
  Challenge c{};
  std::memcpy(c.magic, magic, sizeof c.magic);
  c.nonce = freshNonce();
  c.proof = proofOf(secret, "acceptor", &h, sizeof h, c.nonce);
  Proof answer{};
  if (!transferAll(fd, &c, sizeof c, true, deadline, why) ||
      !transferAll(fd, answer.data(), answer.size(), false, deadline, why))
    return false;
  if (!sameProof(answer, proofOf(secret, "initiator", &h, sizeof h, c.nonce))) {
    why = "it did not prove it holds this job's ZERO_RUN_SECRET";
    return false;
  }
  return true;
}

/// How the initiator's half of a connection's start ended.
enum class Start { Proven, Failed, Impostor };

/// The initiator's half: sends the hello `h` (its nonce drawn here), checks the
/// acceptor's proof, sends its own. `why` says what went wrong when not Proven:
/// Impostor when the acceptor does not hold the secret, Failed when the
/// connection broke.
Start proveToAcceptor(int fd, Hello &h, const char *magic, const std::string &secret,
                      Clock::time_point deadline, std::string &why) {
  h.nonce = freshNonce();
  Challenge c{};
  if (!transferAll(fd, &h, sizeof h, true, deadline, why) ||
      !transferAll(fd, &c, sizeof c, false, deadline, why))
    return Start::Failed;
  if (std::memcmp(c.magic, magic, sizeof c.magic) != 0 ||
      !sameProof(c.proof, proofOf(secret, "acceptor", &h, sizeof h, c.nonce))) {
    why = "it did not prove it holds this job's ZERO_RUN_SECRET (the ranks' secrets "
          "differ, or another program listens there)";
    return Start::Impostor;
  }
  Proof mine = proofOf(secret, "initiator", &h, sizeof h, c.nonce);
  return transferAll(fd, mine.data(), mine.size(), true, deadline, why) ? Start::Proven
                                                                         : Start::Failed;
}

} // namespace

const char *zrt::tcp::kindName(Kind k) {
  switch (k) {
  case Kind::AllGather:
    return "an all-gather";
  case Kind::ReduceScatter:
    return "a reduce-scatter";
  case Kind::AllReduce:
    return "an all-reduce";
  case Kind::Gather:
    return "a gather to rank 0";
  case Kind::Mean:
    return "the mean over ranks";
  case Kind::Counts:
    return "a gather of counts to rank 0";
  case Kind::Agreement:
    return "the ranks' agreement";
  case Kind::Broadcast:
    return "a broadcast from rank 0";
  case Kind::AllToAll:
    return "an all-to-all";
  case Kind::Failure:
    return "a failure notice";
  }
  return "a collective";
}

TcpLinks::TcpLinks(const LaunchVariables &v, double timeoutSeconds)
    : rank_(v.rank), size_(v.worldSize), peers_(v.worldSize), midMessage_(v.worldSize) {
  where_ = v.masterAddress + ":" + std::to_string(v.masterPort);
  secret_ = v.secret;
  uint32_t master = resolve(v.masterAddress);
  // inf (no limit) and the longest timeout alike: a deadline the clock can hold.
  auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(timeoutSeconds, kLongestTimeoutS)));
  if (rank_ == 0)
    rendezvousAsRoot(master, v.masterPort, Clock::now() + timeout, timeoutSeconds);
  else
    rendezvousAsPeer(master, v.masterPort, timeout, timeoutSeconds);
  for (int p = 0; p < size_; ++p)
    if (p != rank_)
      tune(peers_[p].fd);
}

/// The peers see their connections to this rank close and fail naming it.
/// Each peer gets a notice naming the failure (where this rank's messages to it
/// are whole: not after an exchange that failed midway, not while another
/// thread exchanges), then sees the connection close.
void TcpLinks::abort(const std::string &why) {
  if (aborted_.exchange(true))
    return;
  std::unique_lock<std::mutex> idle(mutex_, std::try_to_lock);
  std::string notice = firstFailure_;
  if (notice.empty())
    notice = "rank " + std::to_string(rank_) + " failed: " + (why.empty() ? "?" : why);
  notice.resize(std::min(notice.size(), kMaxNoticeBytes));
  MessageHeader header{kMessageMagic, (uint32_t)Kind::Failure, notice.size()};
  auto sendBy = Clock::now() + std::chrono::milliseconds(200);
  for (int p = 0; p < size_; ++p) {
    if (peers_[p].fd < 0)
      continue;
    std::string ignored;
    if (idle.owns_lock() && !midMessage_[p])
      transferAll(peers_[p].fd, &header, sizeof header, true, sendBy, ignored) &&
          transferAll(peers_[p].fd, notice.data(), notice.size(), true, sendBy, ignored);
    ::shutdown(peers_[p].fd, SHUT_RDWR);
  }
}

/// Rank 0: waits for every other rank's hello, then answers each with the
/// table or with why the rendezvous failed.
void TcpLinks::rendezvousAsRoot(uint32_t address, int port, Clock::time_point deadline,
                                double timeoutSeconds) {
  // At MASTER_ADDR only: the other interfaces' networks have no business here.
  Socket listener = listenAt(address, port, "MASTER_ADDR:MASTER_PORT " + where_);
  std::vector<Endpoint> table(size_);
  std::vector<std::string> from(size_);
  int arrived = 1;
  std::string failure;
  while (arrived < size_ && failure.empty()) {
    sockaddr_in a{};
    Socket s = acceptBy(listener.fd, deadline, a);
    if (s.fd < 0) {
      std::vector<int> missing;
      for (int r = 1; r < size_; ++r)
        if (peers_[r].fd < 0)
          missing.push_back(r);
      std::ostringstream why;
      why << rankList(missing) << " of " << size_ << " did not arrive at the rendezvous at "
          << where_ << " within " << timeoutSeconds << " s (--rendezvous-timeout)";
      failure = why.str();
      break;
    }
    std::string peer = addressText(a.sin_addr.s_addr, ntohs(a.sin_port));
    Hello h{};
    std::string why;
    auto answerBy = std::min(deadline, Clock::now() + std::chrono::seconds(10));
    if (!transferAll(s.fd, &h, sizeof h, false, answerBy, why) ||
        std::memcmp(h.magic, kRendezvousMagic, sizeof h.magic) != 0) {
      std::fprintf(stderr, "zero-run: warning: ignored a connection to MASTER_PORT from %s "
                           "that is not a zero-run rank\n", peer.c_str());
      continue;
    }
    // Before anything it says is believed: it must hold the job's secret.
    if (!checkInitiator(s.fd, h, kRendezvousMagic, secret_, answerBy, why)) {
      std::fprintf(stderr, "zero-run: warning: ignored a connection to MASTER_PORT from %s: "
                           "%s\n", peer.c_str(), why.c_str());
      continue;
    }
    std::ostringstream bad;
    if (h.worldSize != size_)
      bad << "rank " << h.rank << " (from " << peer << ") was started for " << h.worldSize
          << " ranks, rank 0 for " << size_;
    else if (h.rank <= 0 || h.rank >= size_)
      bad << "a process from " << peer << " says it is rank " << h.rank << " of " << size_
          << (h.rank == 0 ? ": two processes are rank 0" : "");
    else if (peers_[h.rank].fd >= 0)
      bad << "two processes say they are rank " << h.rank << " (from " << from[h.rank]
          << " and " << peer << ")";
    if (!bad.str().empty()) {
      failure = bad.str();
      peers_.push_back(std::move(s)); // told below, with the others
      break;
    }
    table[h.rank] = {a.sin_addr.s_addr, h.port};
    from[h.rank] = peer;
    peers_[h.rank] = std::move(s);
    ++arrived;
  }
  // Everyone that arrived learns the outcome.
  Reply reply{};
  std::memcpy(reply.magic, kRendezvousMagic, sizeof reply.magic);
  reply.status = failure.empty() ? 0 : 1;
  reply.length = failure.empty() ? size_ * sizeof(Endpoint) : failure.size();
  const char *body = failure.empty() ? reinterpret_cast<const char *>(table.data())
                                     : failure.data();
  auto sendBy = Clock::now() + std::chrono::seconds(10);
  for (Socket &s : peers_) {
    std::string ignored;
    if (s.fd >= 0 && (!transferAll(s.fd, &reply, sizeof reply, true, sendBy, ignored) ||
                      !transferAll(s.fd, const_cast<char *>(body), reply.length, true,
                                   sendBy, ignored)) &&
        failure.empty())
      failure = "the rendezvous could not answer " + ignored;
  }
  peers_.resize(size_);
  ZRT_CHECK(failure.empty(), failure);
}

/// Rank > 0: says its rank to rank 0, receives the table, then connects to
/// each lower rank and accepts each higher one.
void TcpLinks::rendezvousAsPeer(uint32_t master, int port, Clock::duration timeout,
                                double timeoutSeconds) {
  std::string why;
  Socket root = connectBy(master, port, Clock::now() + timeout, why);
  ZRT_CHECK(root.fd >= 0, "rank 0's rendezvous at "
                              << where_ << " did not answer within " << timeoutSeconds
                              << " s (--rendezvous-timeout; last try: " << why
                              << "): is rank 0 running, with the same MASTER_ADDR and "
                              << "MASTER_PORT?");
  // This rank's own port, on the address by which it reaches rank 0 (the
  // network the job runs on), not on every interface.
  sockaddr_in self{};
  socklen_t selfLength = sizeof self;
  ZRT_CHECK(::getsockname(root.fd, reinterpret_cast<sockaddr *>(&self), &selfLength) == 0,
            "cannot read this rank's address: " << errnoText());
  Socket listener = listenAt(self.sin_addr.s_addr, 0, "a port of its own");
  Hello h{};
  std::memcpy(h.magic, kRendezvousMagic, sizeof h.magic);
  h.rank = rank_;
  h.worldSize = size_;
  h.port = boundPort(listener.fd);
  // Rank 0 answers within its own timeout, which began before this rank could
  // connect.
  auto answerBy = Clock::now() + timeout + std::chrono::seconds(10);
  Reply reply{};
  Start start = proveToAcceptor(root.fd, h, kRendezvousMagic, secret_, answerBy, why);
  ZRT_CHECK(start != Start::Impostor,
            "what listens at " << where_ << " is not this job's rank 0: " << why);
  bool ok = start == Start::Proven &&
            transferAll(root.fd, &reply, sizeof reply, false, answerBy, why);
  ZRT_CHECK(ok, "the rendezvous at " << where_ << " did not complete: " << why
                                     << " (rank 0 failed, or refused this rank: see its "
                                     << "error and warnings)");
  ZRT_CHECK(std::memcmp(reply.magic, kRendezvousMagic, sizeof reply.magic) == 0 &&
                reply.length <= (1u << 20),
            "what listens at " << where_ << " is not a zero-run rendezvous");
  std::string body(reply.length, '\0');
  ZRT_CHECK(transferAll(root.fd, body.data(), body.size(), false, answerBy, why),
            "the rendezvous at " << where_ << " did not complete: " << why);
  ZRT_CHECK(reply.status == 0, body);
  ZRT_CHECK(body.size() == size_ * sizeof(Endpoint),
            "the rendezvous at " << where_ << " sent a table of the wrong size");
  std::vector<Endpoint> table(size_);
  std::memcpy(table.data(), body.data(), body.size());
  peers_[0] = std::move(root);

  auto meshBy = Clock::now() + timeout;
  for (int p = 1; p < rank_; ++p) {
    std::string at = addressText(table[p].address, table[p].port);
    Socket s = connectBy(table[p].address, table[p].port, meshBy, why);
    ZRT_CHECK(s.fd >= 0, "cannot connect to rank " << p << " at " << at << ": " << why);
    Hello m{};
    std::memcpy(m.magic, kMeshMagic, sizeof m.magic);
    m.rank = rank_;
    m.worldSize = size_;
    ZRT_CHECK(proveToAcceptor(s.fd, m, kMeshMagic, secret_, meshBy, why) == Start::Proven,
              "cannot reach rank " << p << " at " << at << ": " << why);
    peers_[p] = std::move(s);
  }
  for (int accepted = 0; accepted < size_ - 1 - rank_; ++accepted) {
    sockaddr_in a{};
    Socket s = acceptBy(listener.fd, meshBy, a);
    ZRT_CHECK(s.fd >= 0, "ranks above " << rank_ << " did not connect within "
                                        << timeoutSeconds << " s of the rendezvous");
    Hello m{};
    std::string from = addressText(a.sin_addr.s_addr, ntohs(a.sin_port));
    why.clear();
    if (!transferAll(s.fd, &m, sizeof m, false, meshBy, why) ||
        std::memcmp(m.magic, kMeshMagic, sizeof m.magic) != 0 ||
        !checkInitiator(s.fd, m, kMeshMagic, secret_, meshBy, why)) {
      // Not a rank of this job: the ranks still to come may be.
      std::fprintf(stderr, "zero-run: warning: rank %d ignored a connection from %s: %s\n",
                   rank_, from.c_str(), why.empty() ? "it is not a zero-run rank" : why.c_str());
      --accepted;
      continue;
    }
    ZRT_CHECK(m.rank > rank_ && m.rank < size_ && peers_[m.rank].fd < 0,
              "a connection from " << from << " says it is rank " << m.rank
                                   << ", which is not a rank still to connect to rank "
                                   << rank_);
    peers_[m.rank] = std::move(s);
  }
}

/// Runs `sends` and `recvs` (at most one of each per peer) to completion.
void TcpLinks::exchange(Kind kind, std::vector<Transfer> &sends, std::vector<Transfer> &recvs) {
  std::lock_guard<std::mutex> lock(mutex_);
  WatchedWait watched(rank_, kindName(kind));
  ZRT_CHECK(!aborted_, "this rank's connections were closed after a failure");
  for (Transfer &s : sends)
    s.header = {kMessageMagic, (uint32_t)kind, s.bytes};
  constexpr size_t H = sizeof(MessageHeader);
  std::vector<pollfd> polled;
  std::vector<Transfer *> owner;
  // A peer found closed: the error, unless a peer's failure notice (naming the
  // rank that failed first) arrives within a moment.
  std::string closed;
  Clock::time_point graceEnd;
  while (true) {
    polled.clear();
    owner.clear();
    for (auto *list : {&sends, &recvs})
      for (Transfer &x : *list)
        if (x.done < H + x.bytes) {
          polled.push_back({peers_[x.peer].fd, (short)(list == &sends ? POLLOUT : POLLIN), 0});
          owner.push_back(&x);
        }
    if (!closed.empty() && (polled.empty() || Clock::now() >= graceEnd))
      failWith(closed);
    if (polled.empty())
      return;
    int n = ::poll(polled.data(), polled.size(),
                   closed.empty() ? 1000 : millisecondsLeft(graceEnd));
    ZRT_CHECK(n >= 0 || errno == EINTR, "poll failed: " << errnoText());
    ZRT_CHECK(!aborted_, "this rank's connections were closed after a failure");
    for (size_t k = 0; k < polled.size(); ++k) {
      if (!polled[k].revents)
        continue;
      Transfer &x = *owner[k];
      bool sending = polled[k].events == POLLOUT;
      // The header, then the data, as far as the socket takes them now.
      char *header = reinterpret_cast<char *>(&x.header);
      char *p = x.done < H ? header + x.done : x.data + (x.done - H);
      size_t want = x.done < H ? H - x.done : x.bytes - (x.done - H);
      ssize_t got = sending ? ::send(polled[k].fd, p, want, MSG_NOSIGNAL)
                            : ::recv(polled[k].fd, p, want, 0);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        continue;
      // A peer that ended with data unread resets the connection instead.
      if (got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE))) {
        if (closed.empty()) {
          std::ostringstream why;
          why << "rank " << x.peer << " closed its connection during " << kindName(kind)
              << ": it failed (its own error says why) or was killed";
          closed = why.str();
          graceEnd = Clock::now() + std::chrono::milliseconds(300);
        }
        x.done = H + x.bytes; // nothing more from or to it
        continue;
      }
      int err = errno;
      ZRT_CHECK(got > 0, "the connection to rank "
                             << x.peer << " failed during " << kindName(kind) << ": "
                             << errnoText(err)
                             << (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH
                                     ? " (rank " + std::to_string(x.peer) +
                                           "'s host is unreachable: it is down, or the "
                                           "network to it is cut)"
                                     : std::string()));
      x.done += got;
      if (sending)
        midMessage_[x.peer] = x.done < H + x.bytes;
      if (!sending && x.done == H)
        checkHeader(kind, x);
      if (!sending && x.done == H + x.bytes && x.header.kind == (uint32_t)Kind::Failure)
        failWith(x.notice);
    }
  }
}

/// Throws `why`, the failure that ends this rank, remembered for the notice
/// that abort() sends the peers.
void TcpLinks::failWith(const std::string &why) {
  firstFailure_ = why;
  throw Error(why);
}

/// A peer's message must be the one this rank waits for, or a notice that the
/// peer failed (then its text is read instead).
void TcpLinks::checkHeader(Kind kind, Transfer &x) {
  ZRT_CHECK(x.header.magic == kMessageMagic,
            "rank " << x.peer << " sent data that is not a zero-run message");
  if (x.header.kind == (uint32_t)Kind::Failure && x.header.bytes <= kMaxNoticeBytes) {
    x.notice.resize(x.header.bytes);
    x.data = x.notice.data();
    x.bytes = x.header.bytes;
    return;
  }
  ZRT_CHECK(x.header.kind == (uint32_t)kind && x.header.bytes == x.bytes,
            "rank " << x.peer << " sent " << kindName((Kind)x.header.kind) << " of "
                    << x.header.bytes << " bytes where this rank waits for "
                    << kindName(kind) << " of " << x.bytes
                    << " bytes: the ranks run different plans or options");
}

