//===- RankProcesses.cpp - A plan's ranks as processes of this machine ----===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/RankProcesses.h"
#include "zrt/Error.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace zrt;

namespace {

/// A TCP port of 127.0.0.1 that nothing listens on now (the kernel's choice).
int freeLoopbackPort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  ZRT_CHECK(s >= 0, "cannot open a socket to find a free port: " << std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  bool ok = bind(s, (sockaddr *)&a, sizeof a) == 0 && getsockname(s, (sockaddr *)&a, &len) == 0;
  int err = errno;
  close(s);
  ZRT_CHECK(ok, "cannot find a free port of 127.0.0.1: " << std::strerror(err));
  return ntohs(a.sin_port);
}

/// 32 random bytes as hex, from /dev/urandom: the job's secret.
std::string freshSecret() {
  unsigned char bytes[32];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ZRT_CHECK(fd >= 0, "cannot open /dev/urandom for the ranks' secret: " << std::strerror(errno));
  ssize_t got = read(fd, bytes, sizeof bytes);
  close(fd);
  ZRT_CHECK(got == (ssize_t)sizeof bytes, "cannot read the ranks' secret from /dev/urandom");
  std::string hex;
  for (unsigned char b : bytes) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", b);
    hex += two;
  }
  return hex;
}

int exitStatusOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

} // namespace

int zrt::runRanksAsProcesses(int ranks, char **argv, const std::string &why, bool quiet) {
  int port = freeLoopbackPort();
  std::string secret = freshSecret();
  if (!quiet) {
    std::printf("running the %d ranks as processes of this machine (%s)\n", ranks,
                why.c_str());
    std::fflush(stdout);
  }
  pid_t parent = getpid();
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      int err = errno;
      for (pid_t c : children)
        kill(c, SIGKILL);
      ZRT_FAIL("cannot start rank " << r << " of " << ranks << ": " << std::strerror(err));
    }
    if (pid == 0) {
      // A child outlives no parent: a killed zero-run takes its ranks with it.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent)
        _exit(1);
      std::string rank = std::to_string(r), world = std::to_string(ranks);
      std::string portText = std::to_string(port);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", world.c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", portText.c_str(), 1);
      setenv("ZERO_RUN_SECRET", secret.c_str(), 1);
      execv("/proc/self/exe", argv);
      std::fprintf(stderr, "zero-run: error (rank %d): cannot start /proc/self/exe: %s\n", r,
                   std::strerror(errno));
      _exit(127);
    }
    children.push_back(pid);
  }
  // Wait for every child. After the first failure the others have 10 s to end
  // on their own (their communicator tells them, and each says why), then
  // SIGTERM, then SIGKILL 5 s later.
  using Clock = std::chrono::steady_clock;
  int rc = 0, left = ranks, signals = 0;
  auto next = Clock::time_point::max();
  while (left > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, rc ? WNOHANG : 0);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid < 0)
      break; // no child left
    if (pid == 0) { // after a failure, some still run
      if (Clock::now() >= next) {
        for (pid_t c : children)
          if (c > 0)
            kill(c, signals ? SIGKILL : SIGTERM);
        next = signals++ ? Clock::time_point::max() : Clock::now() + std::chrono::seconds(5);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    for (pid_t &c : children)
      if (c == pid)
        c = -1;
    --left;
    int code = exitStatusOf(status);
    if (code != 0 && rc == 0) {
      rc = code;
      next = Clock::now() + std::chrono::seconds(10);
    }
  }
  return rc;
}
