//===- Launch.h - Which rank this process is, from its launcher -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Clusters start one process per rank with torchrun (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Slurm's srun (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID; the job script exports MASTER_ADDR and
// MASTER_PORT) or Kubernetes (torchrun's variables, set by the job's spec). Such
// ranks meet through a TCP rendezvous at MASTER_ADDR:MASTER_PORT
// (makeTcpCommunicator), without mpirun.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_LAUNCH_H
#define ZRT_LAUNCH_H

#include "zrt/Communicator.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace zrt {

/// The longest timeout a user may give, in seconds (about 31 years); "inf" (no
/// limit) waits this long. A steady clock's deadline that far ahead still fits its
/// 64-bit nanoseconds.
inline constexpr double kLongestTimeoutS = 1e9;

/// The most ranks a launch may have (WORLD_SIZE, SLURM_NTASKS).
inline constexpr int kMaxLaunchRanks = 1 << 20;

/// What a launcher's variables say about this process.
struct LaunchVariables {
  std::string launcher; ///< "torchrun" or "Slurm": which variables were read
  std::string worldSizeVariable; ///< WORLD_SIZE or SLURM_NTASKS
  int rank = 0, worldSize = 1;
  int localRank = -1; ///< rank among this host's processes; -1 when not given
  std::string masterAddress;
  int masterPort = 0;
  /// ZERO_RUN_SECRET: what every rank proves it holds when the ranks meet
  /// (lib/comm/JobSecret.h); at least kMinSecretBytes.
  std::string secret;
};

inline constexpr size_t kMinSecretBytes = 16;

/// The variables of torchrun or Slurm as `lookup` (getenv, say) gives them; none
/// when neither launcher's are set. Incomplete or invalid ones are an error that
/// names the variable; so is a launch of several ranks without ZERO_RUN_SECRET.
std::optional<LaunchVariables>
readLaunchVariables(const std::function<const char *(const char *)> &lookup);

/// The ranks of a launch by `v` (v.worldSize of them), met through a TCP
/// rendezvous: rank 0 listens at MASTER_ADDR:MASTER_PORT (that address only), the
/// others connect to it within `timeoutSeconds`, and every pair of ranks then
/// holds a connection, each end of each having proven it holds v.secret (one that
/// cannot is refused with a warning, and the rendezvous waits on). Collectives sum
/// on the host in rank order (as thread ranks do), so results do not depend on
/// the launcher. A rank that does not arrive in time is named in every waiting
/// rank's error.
std::unique_ptr<Communicator> makeTcpCommunicator(const LaunchVariables &v,
                                                  double timeoutSeconds);

/// The GPU a rank of `comm` uses among `deviceCount`: its local rank when its
/// launcher says it (LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK), its
/// rank modulo the count otherwise.
int localDeviceIndex(const Communicator &comm, int deviceCount);

} // namespace zrt

#endif // ZRT_LAUNCH_H
