//===- Checkpoint.cpp - Sharded checkpoints of a training run -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Checkpoint.h"
#include "zrt/AtomicFile.h"
#include "zrt/CheckpointLayout.h"
#include "zrt/CheckpointReader.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zplan/PlanFormat.h"

#include "checkpoint.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

using namespace zrt;
namespace fs = std::filesystem;
using zero::zplan::CheckpointManifest;

namespace {

/// The checksummed unit of the rank files' payloads: about 1/64 of the largest,
/// 4 KiB to 4 MiB, so that a reader of a part reads little beyond it.
int64_t chunkBytes(const CheckpointManifest &m, int world) {
  int64_t largest = 0;
  for (int r = 0; r < world; ++r)
    largest = std::max(largest, payloadBytes(m, r));
  int64_t chunk = 4 << 10;
  while (chunk < (4 << 20) && chunk * 64 < largest)
    chunk *= 2;
  return chunk;
}

/// The plan's identity: its deterministic bytes, hashed.
std::string fingerprint(const zero::zplan::Plan &plan) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  return hex64(fnv1a64(bytes.data(), bytes.size()));
}

std::string precisionOf(const zero::zplan::Plan &plan) {
  return plan.precision().empty() ? "fp32" : plan.precision();
}

std::string shapeText(const zero::zplan::CheckpointTensor &t) {
  std::string s = "[";
  for (int i = 0; i < t.shape_size(); ++i)
    s += (i ? "x" : "") + std::to_string(t.shape(i));
  return s + "]";
}

/// Keeps the newest `keep` step-S folders of `dir` (after `latest` moved).
void prune(const std::string &dir, int keep) {
  std::vector<std::pair<long long, fs::path>> folders;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0)
      continue;
    char *end = nullptr;
    long long s = std::strtoll(name.c_str() + 5, &end, 10);
    if (end && *end == '\0')
      folders.push_back({s, e.path()});
  }
  std::sort(folders.begin(), folders.end());
  for (size_t i = 0; i + keep < folders.size(); ++i)
    fs::remove_all(folders[i].second, ec); // best effort: a stale folder is harmless
}

/// 16-bit parameters are not stored: the step keeps them the rounding of their
/// f32 master copies, and loading rounds the masters again. Checked where this rank
/// holds both, so that a plan breaking the rule could never lose them silently.
void checkDerivedParameters(Executor &exec, const std::vector<int> &stored) {
  const auto &plan = exec.plan();
  int rank = exec.comm().rank(), world = exec.comm().size();
  struct Run {
    int64_t first, count;
    const float *values;
  };
  std::vector<HostTensor> masters;
  std::map<std::string, std::vector<Run>> runs;
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const auto &b = plan.buffers(i);
    if (b.role() != zero::zplan::MASTER || b.dtype() != zero::zplan::F32)
      continue;
    masters.push_back(exec.read(i));
    const float *data = reinterpret_cast<const float *>(masters.back().bytes.data());
    for (const TensorPiece &p : tensorPieces(describeBuffer(b), rank, world))
      runs[p.tensor].push_back({p.first, p.count, data + p.at});
  }
  std::set<int> isStored(stored.begin(), stored.end());
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const auto &b = plan.buffers(i);
    if (b.role() != zero::zplan::PARAM || isStored.count(i))
      continue;
    HostTensor h = exec.read(i);
    const auto *bits = reinterpret_cast<const uint16_t *>(h.bytes.data());
    for (const TensorPiece &p : tensorPieces(describeBuffer(b), rank, world))
      for (const Run &r : runs[p.tensor]) {
        int64_t from = std::max(p.first, r.first);
        int64_t to = std::min(p.first + p.count, r.first + r.count);
        for (int64_t e = from; e < to; ++e) {
          float master = r.values[e - r.first];
          uint16_t want = b.dtype() == zero::zplan::BF16 ? bf16FromFloat(master)
                                                         : f16FromFloat(master);
          ZRT_CHECK(bits[p.at + e - p.first] == want,
                    "internal error: the " << dtypeName(b.dtype()) << " parameter '"
                                           << p.tensor << "' (element " << e
                                           << ") is not the rounding of its f32 master "
                                           << "copy; a checkpoint would lose it");
        }
      }
  }
}

/// The checkpoint can go into this plan: the same parameters (names, shapes),
/// the same optimizer state, a precision whose values carry over.
void checkCompatible(const CheckpointReader &reader, const zero::zplan::Plan &plan) {
  const auto &m = reader.manifest();
  const std::string &mp = reader.manifestPath();
  std::string from = m.precision(), to = precisionOf(plan);
  bool floatsCarry = (from == "fp32" || from == "bf16") && (to == "fp32" || to == "bf16");
  ZRT_CHECK(from == to || floatsCarry,
            mp << " was written in " << from << "; this plan trains in " << to
               << " (only fp32 and bf16 checkpoints carry over into each other: "
               << "fp16's loss scaler has no counterpart)");
  std::vector<zero::zplan::CheckpointTensor> mine = planTensors(plan);
  std::set<std::string> names;
  for (const auto &t : mine) {
    names.insert(t.name());
    const auto *theirs = reader.tensor(t.name());
    bool param = t.kind() == "param";
    ZRT_CHECK(theirs, mp << " has no " << (param ? "parameter" : "optimizer state")
                         << " '" << t.name() << "' that this plan "
                         << (param ? "has" : "keeps")
                         << (param ? " (another model?)" : " (another optimizer?)"));
    ZRT_CHECK(theirs->kind() == t.kind() && shapeText(*theirs) == shapeText(t),
              mp << ": '" << t.name() << "' is " << theirs->kind() << " "
                 << shapeText(*theirs) << " in the checkpoint and " << t.kind() << " "
                 << shapeText(t) << " in this plan");
  }
  for (const auto &t : m.tensors())
    ZRT_CHECK(names.count(t.name()),
              mp << " has " << (t.kind() == "param" ? "parameter" : "optimizer state")
                 << " '" << t.name() << "' that this plan does not "
                 << (t.kind() == "param" ? "have (another model?)"
                                         : "keep (another optimizer?)"));
}

} // namespace

void zrt::saveCheckpoint(Executor &exec, const std::string &dir, const TrainerState &state,
                         int keep) {
  const auto &plan = exec.plan();
  Communicator &comm = exec.comm();
  std::string name = "step-" + std::to_string(state.step);
  fs::path folder = fs::path(dir) / name;
  if (comm.rank() == 0) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    ZRT_CHECK(!ec, "cannot create the checkpoint folder " << folder.string() << ": "
                                                          << ec.message());
  }
  comm.meanOf(0); // a barrier: the folder exists for every rank
  CheckpointManifest m;
  std::vector<int> planIndex;
  layoutCheckpoint(plan, m, planIndex);
  checkDerivedParameters(exec, planIndex);
  // This rank's payload: the sharded buffers, then the replicated ones it stores.
  std::string payload(payloadBytes(m, comm.rank()), '\0');
  for (int k = 0; k < m.buffers_size(); ++k) {
    const auto &b = m.buffers(k);
    if (b.rank() >= 0 && b.rank() != comm.rank())
      continue;
    HostTensor h = exec.read(planIndex[k]);
    std::memcpy(payload.data() + b.offset(), h.bytes.data(), h.bytes.size());
  }
  // Checksums per chunk (a reader of a part checks what it reads) and whole.
  const int64_t kChunkBytes = chunkBytes(m, comm.size());
  int64_t maxChunks = 0;
  for (int r = 0; r < comm.size(); ++r)
    maxChunks = std::max(maxChunks, (payloadBytes(m, r) + kChunkBytes - 1) / kChunkBytes);
  std::vector<int64_t> chunkSums(maxChunks, 0);
  uint64_t sum = kFnvOffsetBasis;
  for (size_t at = 0, c = 0; at < payload.size(); at += kChunkBytes, ++c) {
    size_t n = std::min<size_t>(kChunkBytes, payload.size() - at);
    chunkSums[c] = (int64_t)fnv1a64(payload.data() + at, n);
    sum = fnv1a64(payload.data() + at, n, sum);
  }
  std::string file(kCheckpointMagic, sizeof kCheckpointMagic);
  putLE(file, kCheckpointFormat, 4);
  putLE(file, 0, 4);
  putLE(file, payload.size(), 8);
  putLE(file, sum, 8);
  file += payload;
  payload.clear();
  payload.shrink_to_fit();
  std::string fileName = "rank-" + std::to_string(comm.rank()) + ".bin";
  writeFileAtomically((folder / fileName).string(), file);

  // Every rank's file is complete once rank 0 has every checksum.
  std::vector<int64_t> allChunkSums(maxChunks * comm.size());
  comm.gatherToRoot(chunkSums.data(), allChunkSums.data(), maxChunks, zero::zplan::I64);
  std::vector<int64_t> sums = comm.gatherInts((int64_t)sum);
  if (comm.rank() == 0) {
    m.set_format_version(kCheckpointFormat);
    m.set_plan_fingerprint(fingerprint(plan));
    m.set_model(plan.source());
    m.set_world_size(plan.world_size());
    m.set_zero_stage(plan.zero_stage());
    m.set_precision(precisionOf(plan));
    m.set_grad_accum_steps(std::max(1, plan.grad_accum_steps()));
    m.set_step(state.step);
    m.set_samples(state.samples);
    m.set_shuffle(state.shuffle);
    m.set_seed(state.seed);
    auto *ls = m.mutable_loss_scaler();
    ls->set_scale(state.scaler.scale);
    ls->set_hysteresis_counter(state.scaler.counter);
    ls->set_iteration(state.scaler.iter);
    ls->set_last_overflow_iteration(state.scaler.lastOverflowIter);
    m.set_schedule_iteration(state.scheduleIteration);
    m.set_chunk_bytes(kChunkBytes);
    for (int r = 0; r < comm.size(); ++r) {
      auto *f = m.add_files();
      int64_t bytes = payloadBytes(m, r);
      f->set_rank(r);
      f->set_name("rank-" + std::to_string(r) + ".bin");
      f->set_bytes(bytes + (int64_t)kPlanHeaderBytes);
      f->set_checksum(hex64((uint64_t)sums[r]));
      for (int64_t c = 0; c < (bytes + kChunkBytes - 1) / kChunkBytes; ++c)
        f->add_chunk_checksums(hex64((uint64_t)allChunkSums[r * maxChunks + c]));
    }
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    options.preserve_proto_field_names = true;
    ZRT_CHECK(google::protobuf::util::MessageToJsonString(m, &json, options).ok(),
              "cannot write the checkpoint manifest");
    writeFileAtomically((folder / "manifest.json").string(), json);
    writeFileAtomically((fs::path(dir) / "latest").string(), name + "\n");
    if (keep > 0)
      prune(dir, keep);
  }
  comm.meanOf(0); // a barrier: no rank goes on before `latest` names this checkpoint
}

TrainerState zrt::loadCheckpoint(Executor &exec, const std::string &path,
                                 std::string *summary) {
  const auto &plan = exec.plan();
  Communicator &comm = exec.comm();
  CheckpointReader reader(path);
  const CheckpointManifest &m = reader.manifest();
  checkCompatible(reader, plan);
  // Every persistent buffer of this rank, piece by piece from whichever files
  // hold those elements; bucket padding is zero, as the step keeps it.
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const auto &b = plan.buffers(i);
    if (!persistentBuffer(b))
      continue;
    std::vector<char> staging(b.bytes(), 0);
    int64_t size = dtypeSize(b.dtype());
    for (const TensorPiece &p : tensorPieces(describeBuffer(b), comm.rank(), comm.size()))
      reader.read(p.tensor, p.first, p.count, b.dtype(), staging.data() + p.at * size);
    exec.write(i, staging.data(), staging.size());
  }
  // What no rank read (padding, copies) is checked too: a corrupted file is an
  // error however the checkpoint is resharded.
  reader.verifyUnread(comm.rank(), comm.size());
  if (summary) {
    bool same = m.plan_fingerprint() == fingerprint(plan);
    std::ostringstream s;
    s << (same ? "the same plan" : "resharded from " + std::to_string(m.world_size()) +
                                       " rank(s), ZeRO stage " +
                                       std::to_string(m.zero_stage()) + ", " +
                                       m.precision())
      << "; rank " << comm.rank() << " read " << reader.bytesRead() << " of "
      << reader.totalBytes() << " bytes";
    *summary = s.str();
  }
  TrainerState s;
  s.step = m.step();
  s.samples = m.samples();
  s.shuffle = m.shuffle();
  s.seed = m.seed();
  s.scaler = {m.loss_scaler().scale(), m.loss_scaler().hysteresis_counter(),
              m.loss_scaler().iteration(), m.loss_scaler().last_overflow_iteration()};
  s.scheduleIteration = m.schedule_iteration();
  return s;
}
