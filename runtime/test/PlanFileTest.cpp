//===- PlanFileTest.cpp - The plan loader rejects every bad plan ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/PlanFile.h"
#include "zplan/PlanFormat.h"

#include <gtest/gtest.h>

using namespace zrt;
using zero::zplan::Kernel;
using zero::zplan::Plan;

namespace {

/// x (input, f32[4]) -> relu -> y (temp), in a 128-byte arena.
Plan validPlan() {
  Plan p;
  p.set_version(kPlanVersion);
  p.set_world_size(1);
  p.set_arena_bytes(128);
  auto *x = p.add_buffers();
  x->set_offset(0);
  x->set_bytes(16);
  x->set_dtype(zero::zplan::F32);
  x->add_shape(4);
  x->set_role(zero::zplan::INPUT);
  x->set_index(0);
  auto *y = p.add_buffers();
  y->CopyFrom(*x);
  y->set_offset(64);
  y->set_role(zero::zplan::TEMP);
  auto *k = p.add_kernels();
  k->set_kind(Kernel::RELU);
  k->add_inputs(0);
  k->add_outputs(1);
  p.add_outputs()->set_buffer(1);
  return p;
}

std::string fileOf(const Plan &p) {
  std::string payload;
  p.SerializeToString(&payload);
  return encodePlanHeader(payload) + payload;
}

/// The message of the error that loading `bytes` throws ("" when none is thrown).
std::string loadError(const std::string &bytes) {
  try {
    parsePlanBytes(bytes, "test.zplan");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(PlanFile, ValidPlanLoads) {
  Plan p = parsePlanBytes(fileOf(validPlan()), "test.zplan");
  EXPECT_EQ(p.buffers_size(), 2);
  EXPECT_EQ(p.kernels(0).kind(), Kernel::RELU);
}

TEST(PlanFile, TruncatedPlans) {
  std::string good = fileOf(validPlan());
  EXPECT_NE(loadError("").find("truncated plan: 0 bytes"), std::string::npos);
  EXPECT_NE(loadError(good.substr(0, 20)).find("truncated plan"), std::string::npos);
  // Every cut inside the payload is caught by the length in the header.
  for (size_t cut = kPlanHeaderBytes; cut < good.size(); ++cut)
    EXPECT_NE(loadError(good.substr(0, cut)).find("header says"), std::string::npos)
        << "cut at " << cut;
}

TEST(PlanFile, BadMagicAndVersion) {
  std::string bytes = fileOf(validPlan());
  bytes[0] = 'X';
  EXPECT_NE(loadError(bytes).find("bad magic"), std::string::npos);
  bytes = fileOf(validPlan());
  bytes[8] = 7;
  EXPECT_NE(loadError(bytes).find("format version 7"), std::string::npos);
}

TEST(PlanFile, BadChecksum) {
  std::string bytes = fileOf(validPlan());
  bytes[bytes.size() - 3] ^= 0x20;
  EXPECT_NE(loadError(bytes).find("checksum mismatch"), std::string::npos);
}

TEST(PlanFile, OutOfRangeOffset) {
  Plan p = validPlan();
  p.mutable_buffers(1)->set_offset(120); // 16 bytes at 120 end past 128
  EXPECT_NE(loadError(fileOf(p)).find("lies outside the arena of 128 bytes"),
            std::string::npos);
  p = validPlan();
  p.mutable_buffers(0)->set_offset(-8);
  EXPECT_NE(loadError(fileOf(p)).find("lies outside the arena"), std::string::npos);
  p = validPlan();
  p.mutable_buffers(0)->set_offset(INT64_MAX - 4); // offset + bytes overflows
  EXPECT_NE(loadError(fileOf(p)).find("lies outside the arena"), std::string::npos);
}

// Optimizer offload: host buffers lie in the host arena, and only to_host and
// to_device read one memory and write the other.
TEST(PlanFile, HostBuffers) {
  Plan p = validPlan();
  p.mutable_buffers(1)->set_host(true); // the host arena has no bytes
  EXPECT_NE(loadError(fileOf(p)).find("lies outside the host arena of 0 bytes"),
            std::string::npos);
  p.set_host_arena_bytes(64);
  p.mutable_buffers(1)->set_offset(0);
  EXPECT_NE(loadError(fileOf(p)).find("reads device buffer 0 but writes host memory"),
            std::string::npos);
  p.mutable_kernels(0)->set_kind(Kernel::TO_HOST); // a device buffer into a host one
  EXPECT_EQ(loadError(fileOf(p)), "");
  p.mutable_kernels(0)->set_kind(Kernel::TO_DEVICE);
  EXPECT_NE(loadError(fileOf(p)).find("must copy a host buffer into a device buffer"),
            std::string::npos);
  p.mutable_kernels(0)->set_kind(Kernel::TO_HOST);
  p.mutable_buffers(1)->set_dtype(zero::zplan::I32);
  EXPECT_NE(loadError(fileOf(p)).find("copies 16 bytes of f32 into 16 bytes of i32"),
            std::string::npos);
}

// Host temporaries share bytes only behind a host kernel: it runs after the host
// kernels and copies before it, a copy to the host does not.
TEST(PlanFile, HostTemporariesReuseBytesOnlyBehindHostKernels) {
  Plan p = validPlan(); // x: device input at 0; y: device temp at 64
  p.set_host_arena_bytes(48);
  auto hostTemp = [&](int64_t offset) {
    auto *b = p.add_buffers();
    b->CopyFrom(p.buffers(1));
    b->set_host(true);
    b->set_offset(offset);
    return p.buffers_size() - 1;
  };
  int h0 = hostTemp(32), h1 = hostTemp(0), h2 = hostTemp(0);
  auto *z = p.add_buffers();
  z->CopyFrom(p.buffers(1));
  z->set_offset(96);
  int zi = p.buffers_size() - 1;
  p.clear_kernels();
  auto kernel = [&](Kernel::Kind kind, int in, int out) {
    auto *k = p.add_kernels();
    k->set_kind(kind);
    k->add_inputs(in);
    k->add_outputs(out);
  };
  kernel(Kernel::TO_HOST, 0, h0);
  kernel(Kernel::RELU, h0, h1);   // a host kernel writes h1 ...
  kernel(Kernel::TO_DEVICE, h1, 1); // ... and a copy reads it for the last time
  kernel(Kernel::RELU, h0, h2);   // h1's bytes again, behind a host kernel: fine
  kernel(Kernel::TO_DEVICE, h2, zi);
  p.add_outputs()->set_buffer(zi);
  EXPECT_EQ(loadError(fileOf(p)), "");
  p.mutable_kernels(3)->set_kind(Kernel::TO_HOST); // a copy writes them: refused
  p.mutable_kernels(3)->set_inputs(0, 0);
  EXPECT_NE(loadError(fileOf(p)).find("share bytes while both are alive"),
            std::string::npos);
}

// NVMe offload: an NVMe buffer is a block-aligned parameter, master or state buffer
// in the NVMe file; only nvme_read and nvme_write touch it, against a host buffer.
TEST(PlanFile, NvmeBuffers) {
  Plan p = validPlan(); // x: device input at 0 -> relu -> y: device temp at 64
  auto *m = p.add_buffers();
  m->CopyFrom(p.buffers(1));
  m->set_role(zero::zplan::STATE);
  m->set_name("m");
  m->set_nvme(true);
  int mi = p.buffers_size() - 1;
  EXPECT_NE(loadError(fileOf(p)).find("lies outside the NVMe arena of 0 bytes"),
            std::string::npos);
  p.set_nvme_arena_bytes(8192);
  m->set_offset(64);
  EXPECT_NE(loadError(fileOf(p)).find("not a multiple of 4096"), std::string::npos);
  m->set_offset(4096);
  EXPECT_EQ(loadError(fileOf(p)), "");
  m->set_role(zero::zplan::TEMP);
  EXPECT_NE(loadError(fileOf(p)).find("is not a parameter, master copy or optimizer state"),
            std::string::npos);
  m->set_role(zero::zplan::STATE);
  p.mutable_kernels(0)->set_inputs(0, mi); // relu reads it
  EXPECT_NE(loadError(fileOf(p)).find("reads NVMe buffer 2 (only nvme_read does)"),
            std::string::npos);
  p.mutable_kernels(0)->set_kind(Kernel::NVME_READ); // into a device buffer
  EXPECT_NE(loadError(fileOf(p)).find("must copy an NVMe buffer into a host buffer"),
            std::string::npos);
  p.set_host_arena_bytes(64);
  p.mutable_buffers(1)->set_host(true);
  p.mutable_buffers(1)->set_offset(0);
  EXPECT_EQ(loadError(fileOf(p)), "");
}

TEST(PlanFile, SizeShapeAndDtypeMustAgree) {
  Plan p = validPlan();
  p.mutable_buffers(0)->set_bytes(8);
  EXPECT_NE(loadError(fileOf(p)).find("says 8 bytes"), std::string::npos);
  p = validPlan();
  p.mutable_buffers(0)->set_dtype(zero::zplan::DTYPE_INVALID);
  EXPECT_NE(loadError(fileOf(p)).find("invalid dtype"), std::string::npos);
  p = validPlan();
  p.mutable_buffers(0)->set_shape(0, -4);
  EXPECT_NE(loadError(fileOf(p)).find("negative dimension"), std::string::npos);
  p = validPlan();
  p.mutable_buffers(0)->set_shape(0, INT64_MAX / 2);
  EXPECT_NE(loadError(fileOf(p)).find("overflows"), std::string::npos);
}

TEST(PlanFile, KernelAndOutputIndices) {
  Plan p = validPlan();
  p.mutable_kernels(0)->set_inputs(0, 9);
  EXPECT_NE(loadError(fileOf(p)).find("names buffer 9, the plan has 2"),
            std::string::npos);
  p = validPlan();
  p.mutable_kernels(0)->set_outputs(0, 0); // writes the input
  EXPECT_NE(loadError(fileOf(p)).find("not a temporary, parameter, master copy or state"),
            std::string::npos);
  p = validPlan();
  p.mutable_outputs(0)->set_buffer(-1);
  EXPECT_NE(loadError(fileOf(p)).find("output 0 names buffer -1"), std::string::npos);
}

TEST(PlanFile, ConstantsAndParameters) {
  Plan p = validPlan();
  p.mutable_buffers(0)->set_role(zero::zplan::CONSTANT);
  p.mutable_buffers(0)->set_data("abc");
  EXPECT_NE(loadError(fileOf(p)).find("holds 3 bytes"), std::string::npos);
  p = validPlan();
  p.mutable_buffers(0)->set_role(zero::zplan::PARAM);
  EXPECT_NE(loadError(fileOf(p)).find("parameter with no name"), std::string::npos);
}

TEST(PlanFile, MissingFile) {
  try {
    loadPlanFile("/nonexistent/plan.zplan");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot open plan"), std::string::npos);
  }
}

} // namespace
