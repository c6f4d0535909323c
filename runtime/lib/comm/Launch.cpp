//===- Launch.cpp - Which rank this process is, from its launcher ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Launch.h"
#include "zrt/Error.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

using namespace zrt;

namespace {

/// The integer in variable `name`, within [lo, hi]; an error naming the variable
/// otherwise.
int integerVariable(const char *name, const char *text, long lo, long hi) {
  std::string s = text ? text : "";
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  ZRT_CHECK(!s.empty() && end && *end == 0 && errno == 0 && v >= lo && v <= hi,
            name << "='" << s << "' is not an integer in [" << lo << ", " << hi << "]");
  return (int)v;
}

} // namespace

std::optional<LaunchVariables>
zrt::readLaunchVariables(const std::function<const char *(const char *)> &lookup) {
  LaunchVariables v;
  const char *rankName, *worldName, *localName;
  // torchrun's first: torchrun inside a Slurm allocation sets its own, and they
  // are the ones that describe this process.
  if (lookup("RANK") || lookup("WORLD_SIZE")) {
    v.launcher = "torchrun";
    rankName = "RANK", worldName = "WORLD_SIZE", localName = "LOCAL_RANK";
  } else if (lookup("SLURM_PROCID") || lookup("SLURM_NTASKS")) {
    v.launcher = "Slurm";
    rankName = "SLURM_PROCID", worldName = "SLURM_NTASKS", localName = "SLURM_LOCALID";
  } else {
    return std::nullopt;
  }
  for (const char *name : {rankName, worldName})
    ZRT_CHECK(lookup(name), v.launcher << "'s variables are incomplete: " << name
                                       << " is not set (" << rankName << " and "
                                       << worldName << " go together)");
  v.worldSizeVariable = worldName;
  v.worldSize = integerVariable(worldName, lookup(worldName), 1, kMaxLaunchRanks);
  v.rank = integerVariable(rankName, lookup(rankName), 0, v.worldSize - 1);
  if (lookup(localName))
    v.localRank = integerVariable(localName, lookup(localName), 0, v.worldSize - 1);
  if (v.worldSize == 1)
    return v; // nobody to meet
  for (const char *name : {"MASTER_ADDR", "MASTER_PORT"})
    ZRT_CHECK(lookup(name) && *lookup(name),
              worldName << "=" << v.worldSize << " (" << v.launcher << ") and " << name
                        << " is not set: the ranks meet at MASTER_ADDR:MASTER_PORT, "
                        << "rank 0's host and a free TCP port"
                        << (v.launcher == "Slurm"
                                ? " (in the job script, for instance: export MASTER_ADDR="
                                  "$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | "
                                  "head -n 1) MASTER_PORT=29500)"
                                : ""));
  v.masterAddress = lookup("MASTER_ADDR");
  v.masterPort = integerVariable("MASTER_PORT", lookup("MASTER_PORT"), 1, 65535);
  // Anyone who reaches MASTER_PORT could otherwise join as a rank (and send the
  // others whatever values it likes).
  const char *secret = lookup("ZERO_RUN_SECRET");
  ZRT_CHECK(secret && *secret,
            worldName << "=" << v.worldSize << " (" << v.launcher
                      << ") and ZERO_RUN_SECRET is not set: the ranks prove to each other "
                         "that they belong to this job with a secret they share; export "
                         "the same random value to every rank, for instance "
                         "ZERO_RUN_SECRET=$(openssl rand -hex 16)");
  ZRT_CHECK(std::strlen(secret) >= kMinSecretBytes,
            "ZERO_RUN_SECRET has " << std::strlen(secret) << " characters; a secret of fewer "
                                   << "than " << kMinSecretBytes << " is too easy to guess "
                                   << "(openssl rand -hex 16 makes one of 32)");
  v.secret = secret;
  return v;
}

int zrt::localDeviceIndex(const Communicator &comm, int deviceCount) {
  ZRT_CHECK(deviceCount > 0, "no GPU found");
  for (const char *name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"})
    if (const char *text = std::getenv(name))
      return integerVariable(name, text, 0, INT_MAX) % deviceCount;
  return comm.rank() % deviceCount;
}
