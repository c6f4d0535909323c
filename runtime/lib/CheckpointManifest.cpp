//===- CheckpointManifest.cpp - A checkpoint's manifest, checked ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/CheckpointManifest.h"
#include "zrt/CheckpointLayout.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zrt/Tensor.h"
#include "zplan/PlanFormat.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace zrt;
using zero::zplan::CheckpointBuffer;
using zero::zplan::CheckpointManifest;

namespace {

const char kChecksumKey[] = "\"manifest_checksum\": \"";
const char kZeroDigits[] = "0000000000000000";

/// Where the checksum's 16 digits are in `text`, or npos.
size_t checksumDigits(const std::string &text, const std::string &digits) {
  size_t at = text.find(kChecksumKey + digits + "\"");
  return at == std::string::npos ? at : at + sizeof(kChecksumKey) - 1;
}

bool isHex64(const std::string &s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/// The elements of `shape`, or -1 when a dimension is negative or the count
/// exceeds 2^48 (no tensor a checkpoint holds is larger).
int64_t elementsOf(const google::protobuf::RepeatedField<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 48))
      return -1;
  return n;
}

} // namespace

std::string zrt::encodeManifest(CheckpointManifest m) {
  m.set_manifest_checksum(kZeroDigits);
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  ZRT_CHECK(google::protobuf::util::MessageToJsonString(m, &json, options).ok(),
            "cannot write the checkpoint manifest");
  size_t at = checksumDigits(json, kZeroDigits);
  ZRT_CHECK(at != std::string::npos, "internal error: the manifest's JSON has no checksum");
  json.replace(at, 16, hex64(fnv1a64(json.data(), json.size())));
  return json;
}

CheckpointManifest zrt::decodeManifest(const std::string &text, const std::string &mp) {
  std::string deep = jsonNestingProblem(text);
  ZRT_CHECK(deep.empty(), mp << " is not a checkpoint manifest: " << deep);
  CheckpointManifest m;
  google::protobuf::util::JsonParseOptions options;
  ZRT_CHECK(google::protobuf::util::JsonStringToMessage(text, &m, options).ok(),
            mp << " is not a checkpoint manifest");
  // The version first: an older checkpoint says so, rather than that its
  // checksum is missing.
  ZRT_CHECK(m.format_version() == kCheckpointFormat,
            mp << " has format version " << m.format_version() << "; zero-run reads "
               << kCheckpointFormat);
  size_t at = isHex64(m.manifest_checksum()) ? checksumDigits(text, m.manifest_checksum())
                                             : std::string::npos;
  ZRT_CHECK(at != std::string::npos,
            mp << " has no checksum where zero-run writes it: it was edited");
  std::string zeroed = text;
  zeroed.replace(at, 16, kZeroDigits);
  ZRT_CHECK(hex64(fnv1a64(zeroed.data(), zeroed.size())) == m.manifest_checksum(),
            mp << " does not match its checksum: it was changed after zero-run wrote it");
  checkManifest(m, mp);
  return m;
}

void zrt::checkManifest(const CheckpointManifest &m, const std::string &mp) {
  ZRT_CHECK(m.format_version() == kCheckpointFormat,
            mp << " has format version " << m.format_version() << "; zero-run reads "
               << kCheckpointFormat);
  int world = m.world_size();
  ZRT_CHECK(world >= 1 && world <= kMaxCheckpointRanks,
            mp << ": world_size " << world << " is not 1 to " << kMaxCheckpointRanks);
  ZRT_CHECK(m.files_size() == world,
            mp << " lists " << m.files_size() << " rank files for " << world << " ranks");
  ZRT_CHECK(m.zero_stage() >= 0 && m.zero_stage() <= 3,
            mp << ": zero_stage " << m.zero_stage() << " is not 0, 1, 2 or 3");
  ZRT_CHECK(m.grad_accum_steps() >= 1 && m.grad_accum_steps() <= 4096,
            mp << ": grad_accum_steps " << m.grad_accum_steps() << " is not 1 to 4096");
  ZRT_CHECK(m.precision() == "fp32" || m.precision() == "bf16" || m.precision() == "fp16",
            mp << ": precision '" << m.precision() << "' is not fp32, bf16 or fp16");
  int64_t cb = m.chunk_bytes();
  ZRT_CHECK(cb >= 4096 && cb <= (4 << 20) && (cb & (cb - 1)) == 0,
            mp << ": chunk_bytes " << cb << " is not a power of two from 4096 to 4 MiB");
  ZRT_CHECK(isHex64(m.plan_fingerprint()) && isHex64(m.model_fingerprint()),
            mp << ": the plan and model fingerprints are not 16 hex digits");

  // Where the run stood: every optimizer step consumed at least one sample.
  ZRT_CHECK(m.step() >= 0 && m.samples() >= m.step() && m.samples() <= kMaxSamples &&
                (m.step() == 0) == (m.samples() == 0),
            mp << ": step " << m.step() << " and samples " << m.samples()
               << " do not go together (0 <= step <= samples <= 2^53, both 0 or neither)");
  ZRT_CHECK(m.schedule_iteration() >= 0 && m.schedule_iteration() <= m.step(),
            mp << ": schedule_iteration " << m.schedule_iteration()
               << " is not 0 to the step, " << m.step());
  const auto &ls = m.loss_scaler();
  ZRT_CHECK(std::isfinite(ls.scale()) && ls.scale() > 0,
            mp << ": loss_scaler.scale " << ls.scale() << " is not a finite positive scale");
  ZRT_CHECK(ls.hysteresis_counter() >= 1 && ls.iteration() >= 0 &&
                ls.iteration() <= m.step() &&
                ls.last_overflow_iteration() >= -1 &&
                ls.last_overflow_iteration() < ls.iteration(),
            mp << ": loss_scaler's counters (hysteresis_counter "
               << ls.hysteresis_counter() << ", iteration " << ls.iteration()
               << ", last_overflow_iteration " << ls.last_overflow_iteration()
               << ") are out of range");

  // The tensors: named once each, of known dtypes and sizes.
  std::map<std::string, int> tensors;
  std::vector<int64_t> tensorElements;
  for (int k = 0; k < m.tensors_size(); ++k) {
    const auto &t = m.tensors(k);
    ZRT_CHECK(!t.name().empty() && tensors.emplace(t.name(), k).second,
              mp << ": tensor " << k << " ('" << t.name() << "') is unnamed or listed twice");
    ZRT_CHECK(t.kind() == "param" || t.kind() == "state",
              mp << ": tensor '" << t.name() << "' has kind '" << t.kind()
                 << "', not param or state");
    ZRT_CHECK(dtypeFromName(t.dtype()) != zero::zplan::DTYPE_INVALID,
              mp << ": tensor '" << t.name() << "' has unknown dtype '" << t.dtype() << "'");
    int64_t n = elementsOf(t.shape());
    ZRT_CHECK(n >= 0, mp << ": tensor '" << t.name() << "' has an invalid shape");
    tensorElements.push_back(n);
  }
  ZRT_CHECK(modelFingerprint(m.tensors()) == m.model_fingerprint(),
            mp << ": model_fingerprint " << m.model_fingerprint()
               << " is not that of the parameters it lists");

  // The buffers: the sharded ones at the same offsets of every file from 0, then
  // each rank's replicated ones after them, each in the order listed.
  std::set<std::string> names;
  std::vector<int64_t> end(world, 0);
  bool replicatedSeen = false;
  int64_t shardedEnd = 0;
  // Every element of every tensor exactly once: pieces as (first, count) per tensor.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pieces(m.tensors_size());
  for (const CheckpointBuffer &b : m.buffers()) {
    std::string what = mp + ": buffer '" + b.name() + "'";
    ZRT_CHECK(!b.name().empty() && names.insert(b.name()).second,
              mp << ": a buffer is unnamed or listed twice ('" << b.name() << "')");
    ZRT_CHECK(b.role() == "param" || b.role() == "master" || b.role() == "state",
              what << " has role '" << b.role() << "', not param, master or state");
    DType t = dtypeFromName(b.dtype());
    ZRT_CHECK(t != zero::zplan::DTYPE_INVALID,
              what << " has unknown dtype '" << b.dtype() << "'");
    int64_t numel = elementsOf(b.shape()), bytes;
    ZRT_CHECK(numel >= 0 && !__builtin_mul_overflow(numel, dtypeSize(t), &bytes) &&
                  b.bytes() == bytes,
              what << " has " << b.bytes() << " bytes for its dtype and shape");
    bool sharded = b.rank() == -1;
    ZRT_CHECK(sharded == b.has_bucket() && b.rank() >= -1 && b.rank() < world,
              what << " has rank " << b.rank()
                   << (b.has_bucket() ? ": a bucket slice is in every file (-1)"
                                      : ": a whole buffer is in one rank's file"));
    if (sharded) {
      ZRT_CHECK(!replicatedSeen, what << " is a bucket slice listed after a whole buffer");
      ZRT_CHECK(b.offset() == shardedEnd,
                what << " is at offset " << b.offset() << "; the buffers before it end at "
                     << shardedEnd);
      shardedEnd += b.bytes();
      for (int64_t &e : end)
        e = shardedEnd;
      const auto &bucket = b.bucket();
      ZRT_CHECK(b.shape_size() == 1 && bucket.elements() / world == numel &&
                    bucket.elements() % world == 0,
                what << " is not 1/" << world << " of its bucket of " << bucket.elements());
      int64_t next = 0;
      for (const auto &member : bucket.members()) {
        int64_t size = elementsOf(member.shape());
        ZRT_CHECK(!member.name().empty() && size >= 0 && member.offset() >= next &&
                      member.offset() <= bucket.elements() - size,
                  what << ": bucket member '" << member.name()
                       << "' lies outside the bucket or over another");
        next = member.offset() + size;
      }
    } else {
      replicatedSeen = true;
      int64_t &e = end[b.rank()];
      ZRT_CHECK(b.offset() == e, what << " is at offset " << b.offset() << " of rank "
                                      << b.rank() << "'s file; the buffers before it end at "
                                      << e);
      e += b.bytes();
    }
    // The tensors it holds (one rank's slice of a bucket, or the whole buffer).
    for (int q = 0; q < (sharded ? world : 1); ++q)
      for (const TensorPiece &p : tensorPieces(b, sharded ? q : b.rank(), world)) {
        auto it = tensors.find(p.tensor);
        ZRT_CHECK(it != tensors.end(), what << " holds '" << p.tensor
                                            << "', which the manifest does not list");
        const auto &tensor = m.tensors(it->second);
        bool paramRole = b.role() != "state";
        ZRT_CHECK(tensor.dtype() == b.dtype() && (tensor.kind() == "param") == paramRole,
                  what << " holds '" << p.tensor << "' as " << b.role() << " "
                       << b.dtype() << "; the manifest lists it as " << tensor.kind()
                       << " " << tensor.dtype());
        pieces[it->second].push_back({p.first, p.count});
      }
  }
  for (int k = 0; k < m.tensors_size(); ++k) {
    auto &list = pieces[k];
    std::sort(list.begin(), list.end());
    int64_t next = 0;
    for (auto [first, count] : list) {
      ZRT_CHECK(first == next, mp << ": tensor '" << m.tensors(k).name() << "' has "
                                  << (first < next ? "elements stored twice"
                                                   : "elements no buffer holds")
                                  << " from element " << std::min(first, next));
      next = first + count;
    }
    ZRT_CHECK(next == tensorElements[k], mp << ": tensor '" << m.tensors(k).name()
                                            << "' has elements no buffer holds from "
                                            << next);
  }

  // The rank files: named as written, sized by their buffers, a checksum per chunk.
  for (int q = 0; q < world; ++q) {
    const auto &f = m.files(q);
    std::string name = "rank-" + std::to_string(q) + ".bin";
    ZRT_CHECK(f.rank() == q && f.name() == name && isHex64(f.checksum()),
              mp << ": the entry for rank " << q << " is wrong (it names '" << f.name()
                 << "', rank " << f.rank() << ")");
    ZRT_CHECK(f.bytes() == end[q] + (int64_t)kPlanHeaderBytes,
              mp << ": " << name << " has " << f.bytes() << " bytes; its buffers need "
                 << end[q] + (int64_t)kPlanHeaderBytes);
    int64_t chunks = (end[q] + cb - 1) / cb;
    ZRT_CHECK(f.chunk_checksums_size() == chunks,
              mp << ": " << name << " has " << f.chunk_checksums_size()
                 << " chunk checksums; its payload has " << chunks << " chunks");
    for (const std::string &c : f.chunk_checksums())
      ZRT_CHECK(isHex64(c), mp << ": " << name << " has a chunk checksum '" << c
                               << "' that is not 16 hex digits");
  }
}

DType zrt::dtypeFromName(const std::string &name) {
  for (DType t : {zero::zplan::F32, zero::zplan::F64, zero::zplan::I32, zero::zplan::I64,
                  zero::zplan::I8, zero::zplan::U8, zero::zplan::BOOL, zero::zplan::BF16,
                  zero::zplan::F16})
    if (name == dtypeName(t))
      return t;
  return zero::zplan::DTYPE_INVALID;
}
