//===- PlanFile.cpp - Load and validate a .zplan --------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Nothing in a plan is trusted: every size, offset, index and dtype is checked here
// so that the executor can run kernels without bounds checks on buffers.
//
//===----------------------------------------------------------------------===//

#include "zrt/PlanFile.h"
#include "zrt/RankGroups.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zplan/KernelKind.h"
#include "zplan/PlanFormat.h"
#include "zrt/PlanVerifier.h"
#include "zrt/Tensor.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

using namespace zrt;
using zero::zplan::Kernel;
using zero::zplan::Plan;

namespace {

/// a * b, or failure on overflow past int64.
bool mulOk(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

} // namespace

void zrt::validatePlan(const Plan &plan, const std::string &what) {
  ZRT_CHECK(plan.version() == kPlanVersion,
            what << ": plan format version " << plan.version()
                 << " is not supported (this zero-run reads version " << kPlanVersion
                 << ")");
  ZRT_CHECK(plan.world_size() >= 1,
            what << ": world size " << plan.world_size() << " is not positive");
  ZRT_CHECK(plan.arena_bytes() >= 0 && plan.arena_bytes() <= (int64_t(1) << 46),
            what << ": arena size " << plan.arena_bytes() << " bytes is out of range");
  ZRT_CHECK(plan.host_arena_bytes() >= 0 && plan.host_arena_bytes() <= (int64_t(1) << 46),
            what << ": host arena size " << plan.host_arena_bytes()
                 << " bytes is out of range");
  int64_t maxInput = -1;
  // Bucket slices are 1/world of their bucket, or 1/G of it with hybrid
  // sharding's groups of G ranks.
  int64_t shardGroup = planShardGroupSize(plan, what);
  int64_t shards = shardGroup ? shardGroup : plan.world_size();
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const auto &b = plan.buffers(i);
    std::string name = "buffer " + std::to_string(i) +
                       (b.name().empty() ? "" : " ('" + b.name() + "')");
    int64_t esize = dtypeSize(b.dtype());
    ZRT_CHECK(esize > 0, what << ": " << name << " has invalid dtype " << b.dtype());
    int64_t numel = 1;
    for (int64_t d : b.shape()) {
      ZRT_CHECK(d >= 0, what << ": " << name << " has negative dimension " << d);
      ZRT_CHECK(mulOk(numel, d, numel),
                what << ": " << name << " has a shape whose size overflows");
    }
    int64_t bytes;
    ZRT_CHECK(mulOk(numel, esize, bytes),
              what << ": " << name << " has a shape whose size overflows");
    ZRT_CHECK(bytes == b.bytes(),
              what << ": " << name << " says " << b.bytes()
                   << " bytes, its shape and dtype need " << numel * esize);
    ZRT_CHECK(!(b.host() && b.nvme()),
              what << ": " << name << " lies in both host memory and the NVMe file");
    int64_t arena = b.nvme()   ? plan.nvme_arena_bytes()
                    : b.host() ? plan.host_arena_bytes()
                               : plan.arena_bytes();
    ZRT_CHECK(b.offset() >= 0 && b.offset() <= arena && b.bytes() <= arena - b.offset(),
              what << ": " << name << " at offset " << b.offset() << " with "
                   << b.bytes() << " bytes lies outside the "
                   << (b.nvme() ? "NVMe " : b.host() ? "host " : "") << "arena of "
                   << arena << " bytes");
    if (b.nvme()) {
      ZRT_CHECK(b.role() == zero::zplan::PARAM || b.role() == zero::zplan::MASTER ||
                    b.role() == zero::zplan::STATE,
                what << ": " << name << " lies in the NVMe file but is not a parameter, "
                     << "master copy or optimizer state");
      ZRT_CHECK(b.offset() % kNvmeAlignment == 0,
                what << ": " << name << " lies at offset " << b.offset()
                     << " of the NVMe file, not a multiple of " << kNvmeAlignment);
    }
    // A bucket slice (PARAM, MASTER, STATE above stage 0): 1/world of the bucket
    // (1/G with hybrid sharding's groups of G), every member inside it.
    auto checkBucket = [&] {
      if (!b.has_bucket())
        return;
      const auto &layout = b.bucket();
      ZRT_CHECK(b.shape_size() == 1 && layout.elements() == b.shape(0) * shards,
                what << ": " << name << " holds " << numel << " elements, not 1/"
                     << shards << " of its bucket of " << layout.elements());
      for (const auto &m : layout.members()) {
        int64_t n = 1;
        for (int64_t d : m.shape()) {
          ZRT_CHECK(d >= 0 && mulOk(n, d, n),
                    what << ": bucket member '" << m.name() << "' has a bad shape");
        }
        ZRT_CHECK(m.offset() >= 0 && m.offset() <= layout.elements() &&
                      n <= layout.elements() - m.offset(),
                  what << ": bucket member '" << m.name() << "' lies outside its "
                       << "bucket of " << layout.elements() << " elements");
      }
    };
    switch (b.role()) {
    case zero::zplan::TEMP:
      if (b.has_view_of()) {
        int root = b.view_of();
        ZRT_CHECK(root >= 0 && root < plan.buffers_size() && root != i &&
                      !plan.buffers(root).has_view_of(),
                  what << ": " << name << " is a view of buffer " << root
                       << ", which is not a buffer that views can read");
        const auto &r = plan.buffers(root);
        ZRT_CHECK(b.host() == r.host() && !b.nvme() && !r.nvme(),
                  what << ": " << name << " is a view of buffer " << root
                       << " in the other arena");
        ZRT_CHECK(b.offset() >= r.offset() && b.offset() + b.bytes() <= r.offset() + r.bytes(),
                  what << ": " << name << " [" << b.offset() << ", " << b.offset() + b.bytes()
                       << ") lies outside buffer " << root << " [" << r.offset() << ", "
                       << r.offset() + r.bytes() << "), which it is a view of");
      }
      break;
    case zero::zplan::PARAM:
    case zero::zplan::MASTER:
      ZRT_CHECK(!b.name().empty(), what << ": " << name << " is a parameter with no name");
      ZRT_CHECK(b.role() == zero::zplan::PARAM || b.dtype() == zero::zplan::F32 ||
                    b.dtype() == zero::zplan::F64,
                what << ": " << name << " is a master copy of dtype " << dtypeName(b.dtype())
                     << ", not f32");
      checkBucket();
      break;
    case zero::zplan::STATE:
      ZRT_CHECK(!b.name().empty(),
                what << ": " << name << " is optimizer state with no name");
      checkBucket();
      break;
    case zero::zplan::RUNTIME:
      ZRT_CHECK(numel == 1 && ((b.name() == "loss_scale" && b.dtype() == zero::zplan::F32) ||
                               (b.name() == "lr" && b.dtype() == zero::zplan::F64)),
                what << ": " << name << " is a runtime value other than the f32 "
                     << "loss_scale and the f64 lr");
      break;
    case zero::zplan::INPUT:
      ZRT_CHECK(b.index() >= 0 && b.index() < 4096,
                what << ": " << name << " has input index " << b.index());
      ZRT_CHECK(b.micro_step() >= 0 && b.micro_step() < std::max(1, plan.grad_accum_steps()),
                what << ": " << name << " is micro-batch " << b.micro_step() << " of a "
                     << std::max(1, plan.grad_accum_steps()) << "-micro-batch step");
      maxInput = std::max<int64_t>(maxInput, b.index());
      break;
    case zero::zplan::CONSTANT:
      ZRT_CHECK((int64_t)b.data().size() == b.bytes(),
                what << ": constant " << name << " holds " << b.data().size()
                     << " bytes, its shape needs " << b.bytes());
      break;
    default:
      ZRT_FAIL(what << ": " << name << " has invalid role " << b.role());
    }
  }
  auto checkIndex = [&](int idx, const std::string &where) {
    ZRT_CHECK(idx >= 0 && idx < plan.buffers_size(),
              what << ": " << where << " names buffer " << idx << ", the plan has "
                   << plan.buffers_size());
  };
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const auto &kern = plan.kernels(k);
    ZRT_CHECK(Kernel::Kind_IsValid(kern.kind()) && kern.kind() != Kernel::KIND_UNSPECIFIED,
              what << ": kernel " << k << " has "
                   << (kern.kind() ? "unknown kind " + std::to_string(kern.kind())
                                   : std::string("no kind")));
    std::string where =
        "kernel " + std::to_string(k) + " (" + zero::zplan::kernelKindName(kern.kind()) + ")";
    for (int idx : kern.inputs())
      checkIndex(idx, where);
    for (int idx : kern.outputs()) {
      checkIndex(idx, where);
      auto role = plan.buffers(idx).role();
      ZRT_CHECK(role == zero::zplan::TEMP || role == zero::zplan::PARAM ||
                    role == zero::zplan::STATE || role == zero::zplan::MASTER,
                what << ": " << where << " writes buffer " << idx
                     << ", which is not a temporary, parameter, master copy or state");
    }
    // A host kernel's buffers are host buffers, a device kernel's device buffers;
    // only the two copies cross (so no kernel touches memory its side cannot).
    bool toHost = kern.kind() == Kernel::TO_HOST, toDevice = kern.kind() == Kernel::TO_DEVICE;
    bool nvmeRead = kern.kind() == Kernel::NVME_READ,
         nvmeWrite = kern.kind() == Kernel::NVME_WRITE;
    // A copy between memories: one buffer into one of the same bytes and type,
    // `ok` saying whether the two lie where the kernel's kind says.
    auto checkCopy = [&](auto ok, const char *rule) {
      ZRT_CHECK(kern.inputs_size() == 1 && kern.outputs_size() == 1,
                what << ": " << where << " copies one buffer into one");
      const auto &in = plan.buffers(kern.inputs(0)), &out = plan.buffers(kern.outputs(0));
      ZRT_CHECK(ok(in, out), what << ": " << where << " must copy " << rule);
      ZRT_CHECK(in.bytes() == out.bytes() && in.dtype() == out.dtype(),
                what << ": " << where << " copies " << in.bytes() << " bytes of "
                     << dtypeName(in.dtype()) << " into " << out.bytes() << " bytes of "
                     << dtypeName(out.dtype()));
    };
    using Buf = zero::zplan::Buffer;
    if (nvmeRead || nvmeWrite) { // NVMe offload: between the file and host memory
      checkCopy(
          [&](const Buf &in, const Buf &out) {
            return nvmeRead ? in.nvme() && out.host() : in.host() && out.nvme();
          },
          nvmeRead ? "an NVMe buffer into a host buffer" : "a host buffer into an NVMe buffer");
      continue;
    }
    for (int idx : kern.inputs())
      ZRT_CHECK(!plan.buffers(idx).nvme(), what << ": " << where << " reads NVMe buffer "
                                                << idx << " (only nvme_read does)");
    for (int idx : kern.outputs())
      ZRT_CHECK(!plan.buffers(idx).nvme(), what << ": " << where << " writes NVMe buffer "
                                                << idx << " (only nvme_write does)");
    if (toHost || toDevice) {
      checkCopy(
          [&](const Buf &in, const Buf &out) {
            return in.host() == toDevice && out.host() == toHost;
          },
          toHost ? "a device buffer into a host buffer" : "a host buffer into a device buffer");
    } else if (kern.outputs_size() > 0) {
      bool host = plan.buffers(kern.outputs(0)).host();
      for (int idx : kern.inputs())
        ZRT_CHECK(plan.buffers(idx).host() == host,
                  what << ": " << where << " reads " << (host ? "device" : "host")
                       << " buffer " << idx << " but writes "
                       << (host ? "host" : "device") << " memory");
      for (int idx : kern.outputs())
        ZRT_CHECK(plan.buffers(idx).host() == host,
                  what << ": " << where << " writes both host and device buffers");
    }
  }
  for (int i = 0; i < plan.outputs_size(); ++i)
    checkIndex(plan.outputs(i).buffer(), "output " + std::to_string(i));
}

Plan zrt::parsePlanBytes(const std::string &bytes, const std::string &what) {
  ZRT_CHECK(bytes.size() >= kPlanHeaderBytes,
            what << ": truncated plan: " << bytes.size()
                 << " bytes, shorter than the " << kPlanHeaderBytes
                 << "-byte header");
  ZRT_CHECK(std::memcmp(bytes.data(), kPlanMagic, sizeof(kPlanMagic)) == 0,
            what << ": not a zero-opt plan (bad magic)");
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  uint32_t version = getLE(p + 8, 4);
  ZRT_CHECK(version == kPlanVersion,
            what << ": plan format version " << version
                 << " is not supported (this zero-run reads version " << kPlanVersion
                 << "); recompile it with this zero-opt");
  uint64_t length = getLE(p + 16, 8);
  uint64_t checksum = getLE(p + 24, 8);
  uint64_t have = bytes.size() - kPlanHeaderBytes;
  ZRT_CHECK(length == have, what << ": truncated or padded plan: header says "
                                 << length << " payload bytes, the file has "
                                 << have);
  uint64_t actual = fnv1a64(bytes.data() + kPlanHeaderBytes, have);
  ZRT_CHECK(actual == checksum, what << ": checksum mismatch (file says 0x" << std::hex
                                     << checksum << ", contents hash to 0x" << actual
                                     << "): the plan is corrupted");
  Plan plan;
  ZRT_CHECK(plan.ParseFromArray(bytes.data() + kPlanHeaderBytes, (int)have),
            what << ": the plan payload does not parse");
  validatePlan(plan, what);
  verifyPlan(plan, what);
  return plan;
}

Plan zrt::loadPlanFile(const std::string &path) {
  return parsePlanBytes(readInputFile(path, "plan", kMaxProtobufBytes + kPlanHeaderBytes),
                        path);
}

std::string zrt::planFingerprint(const Plan &plan) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  return hex64(fnv1a64(bytes.data(), bytes.size()));
}

std::vector<std::string> zrt::planBufferNames(const Plan &plan, zero::zplan::Role role) {
  std::vector<std::string> names;
  for (const auto &b : plan.buffers()) {
    if (b.role() != role)
      continue;
    if (!b.has_bucket())
      names.push_back(b.name());
    for (const auto &m : b.bucket().members())
      names.push_back(m.name());
  }
  return names;
}
