//===- MpiCommunicatorTest.cpp - MPI's groups, under mpirun -np 4 ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Runs only under mpirun (ctest's runtime-mpi-groups: mpirun -np 4 ...
// --gtest_filter=MpiCommunicator.*); skipped otherwise.
//
//===----------------------------------------------------------------------===//

#include "CommunicatorGroups.h"
#include "CommunicatorQuantized.h"

#include "zrt/Communicator.h"

#include <gtest/gtest.h>

using namespace zrt;

TEST(MpiCommunicator, Groups) {
  std::unique_ptr<Communicator> world = makeMpiCommunicatorIfLaunched(nullptr, nullptr);
  if (!world)
    GTEST_SKIP() << "not under mpirun";
  test::checkGroupsOfFour(*world);
  test::checkQuantizedCollectives(*world);
  std::unique_ptr<Communicator> pair = world->split(world->rank() / 2, world->rank());
  test::checkQuantizedCollectives(*pair);
}
