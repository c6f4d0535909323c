//===- Watchdog.h - No rank waits for a collective forever -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A rank that waits for its peers (a collective, a started collective's wait, the
// GPU finishing NCCL work) marks the wait with a WatchedWait. When one lasts longer
// than the timeout (zero-run --collective-timeout), the watchdog's thread reports
// which wait and calls the stop hook, which ends the job (MPI_Abort under mpirun;
// the process otherwise, its thread ranks with it): a peer that died or hangs
// cannot stall the others.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_WATCHDOG_H
#define ZRT_WATCHDOG_H

#include <cstdint>
#include <functional>
#include <string>

namespace zrt {

/// Starts watching: waits longer than `timeoutSeconds` (> 0) call `stop` with a
/// message naming the wait; `stop` must not return (it ends the job). Once per
/// process; later calls change the timeout and hook.
void startWatchdog(double timeoutSeconds,
                   std::function<void(const std::string &message)> stop);

/// While alive, the calling thread is waiting in `what` (for rank `rank`).
class WatchedWait {
public:
  WatchedWait(int rank, const char *what, int64_t detail = -1);
  ~WatchedWait();
  WatchedWait(const WatchedWait &) = delete;
  WatchedWait &operator=(const WatchedWait &) = delete;

private:
  uint64_t id_;
};

} // namespace zrt

#endif // ZRT_WATCHDOG_H
