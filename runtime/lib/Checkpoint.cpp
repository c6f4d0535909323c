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
#include "zrt/InputFile.h"
#include "zrt/PlanFile.h"
#include "zplan/PlanFormat.h"

#include "checkpoint.pb.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
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

std::string precisionOf(const zero::zplan::Plan &plan) {
  return plan.precision().empty() ? "fp32" : plan.precision();
}

std::string shapeText(const zero::zplan::CheckpointTensor &t) {
  std::string s = "[";
  for (int i = 0; i < t.shape_size(); ++i)
    s += (i ? "x" : "") + std::to_string(t.shape(i));
  return s + "]";
}

/// Whether `name` is a file a checkpoint folder holds: the manifest, a rank file,
/// or one of them half written (AtomicFile's temporary name).
bool checkpointFileName(const std::string &name) {
  auto rankFile = [](const std::string &n) {
    if (n.rfind("rank-", 0) != 0 || n.size() < 10 || n.compare(n.size() - 4, 4, ".bin"))
      return false;
    std::string digits = n.substr(5, n.size() - 9);
    return !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
  };
  if (name == "manifest.json" || rankFile(name))
    return true;
  size_t tmp = name.find(".tmp-");
  if (name.empty() || name[0] != '.' || tmp == std::string::npos)
    return false;
  std::string target = name.substr(1, tmp - 1);
  return target == "manifest.json" || rankFile(target);
}

/// Throws when saving a checkpoint of `model` into `folder` would overwrite what
/// is not this model's checkpoint.
void checkTargetFolder(const fs::path &folder, const std::string &model) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(folder, ec)))
    return;
  ZRT_CHECK(fs::is_directory(fs::symlink_status(folder, ec)),
            "--save-checkpoint: " << folder.string()
                                  << " is not a folder: not writing a checkpoint there");
  std::vector<std::string> foreign;
  for (const auto &e : fs::directory_iterator(folder, ec))
    if (!checkpointFileName(e.path().filename().string()))
      foreign.push_back(e.path().filename().string());
  std::sort(foreign.begin(), foreign.end());
  if (!foreign.empty()) {
    std::string list;
    for (size_t i = 0; i < foreign.size() && i < 3; ++i)
      list += (i ? ", " : "") + foreign[i];
    ZRT_FAIL("--save-checkpoint: " << folder.string() << " holds files that no checkpoint "
                                   << "writes (" << list << (foreign.size() > 3 ? ", ..." : "")
                                   << "): not writing a checkpoint into it");
  }
  std::string path = (folder / "manifest.json").string();
  if (!fs::exists(fs::symlink_status(path, ec)))
    return;
  bool ours = false;
  try {
    ours = decodeManifest(readInputFile(path, "checkpoint manifest", kMaxManifestBytes), path)
               .model_fingerprint() == model;
  } catch (const Error &) {
    ours = true; // a damaged checkpoint of whichever model: saving replaces it whole
  }
  ZRT_CHECK(ours, "--save-checkpoint: " << folder.string()
                                        << " holds a checkpoint of another model: not "
                                        << "writing a checkpoint into it");
}

/// Keeps the newest `keep` checkpoints of this run in `dir` (after `latest`
/// moved). Only folders named step-S whose manifest is whole and of this model
/// are this run's; of those, only the files a checkpoint writes are removed, and
/// the folder with them when nothing else is in it: a user's own files stay.
void prune(const std::string &dir, int keep, const std::string &model) {
  std::vector<std::pair<long long, fs::path>> folders;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0 || e.is_symlink(ec) || !e.is_directory(ec))
      continue;
    char *end = nullptr;
    long long s = std::strtoll(name.c_str() + 5, &end, 10);
    if (!end || *end != '\0')
      continue;
    try {
      std::string path = (e.path() / "manifest.json").string();
      CheckpointManifest m = decodeManifest(
          readInputFile(path, "checkpoint manifest", kMaxManifestBytes), path);
      if (m.model_fingerprint() == model && m.step() == s)
        folders.push_back({s, e.path()});
    } catch (const Error &) {
      // Not a checkpoint of this model: not ours to remove.
    }
  }
  std::sort(folders.begin(), folders.end());
  for (size_t i = 0; i + keep < folders.size(); ++i) {
    const fs::path &folder = folders[i].second;
    std::vector<fs::path> ours;
    for (const auto &e : fs::directory_iterator(folder, ec)) {
      std::string name = e.path().filename().string();
      if (checkpointFileName(name) && name != "manifest.json" && !e.is_symlink(ec) &&
          e.is_regular_file(ec))
        ours.push_back(e.path());
    }
    for (const fs::path &p : ours)
      fs::remove(p, ec);
    // The manifest last: a folder half removed is no longer taken for a checkpoint.
    fs::remove(folder / "manifest.json", ec);
    fs::remove(folder, ec); // fails, leaving the folder, when a user's files are in it
  }
}

/// 16-bit parameters are not stored: the step keeps them the rounding of their
/// f32 master copies, and loading rounds the masters again. Checked where this rank
/// holds both, so that a plan breaking the rule could never lose them silently.
void checkDerivedParameters(Executor &exec, const std::vector<int> &stored) {
  const auto &plan = exec.plan();
  int rank = exec.shardComm().rank(), world = exec.shardComm().size();
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

void zrt::checkCheckpointTargets(const zero::zplan::Plan &plan, const std::string &dir,
                                 int64_t firstStep, int64_t lastStep, int64_t every) {
  CheckpointManifest m;
  std::vector<int> planIndex;
  layoutCheckpoint(plan, m, planIndex);
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0)
      continue;
    char *end = nullptr;
    long long s = std::strtoll(name.c_str() + 5, &end, 10);
    if (!end || *end != '\0' || name.size() == 5 || s <= firstStep || s > lastStep)
      continue;
    if (s == lastStep || (every > 0 && s % every == 0))
      checkTargetFolder(e.path(), m.model_fingerprint());
  }
}

void zrt::saveCheckpoint(Executor &exec, const std::string &dir, const TrainerState &state,
                         int keep) {
  const auto &plan = exec.plan();
  // The files are one shard group's (every rank's, without hybrid sharding): the
  // other groups hold the same slices and only meet the barriers.
  Communicator &all = exec.comm(), &comm = exec.shardComm();
  bool writes = all.rank() < comm.size();
  std::string name = "step-" + std::to_string(state.step);
  fs::path folder = fs::path(dir) / name;
  CheckpointManifest m;
  std::vector<int> planIndex;
  layoutCheckpoint(plan, m, planIndex);
  if (all.rank() == 0) {
    checkTargetFolder(folder, m.model_fingerprint());
    std::error_code ec;
    fs::create_directories(folder, ec);
    ZRT_CHECK(!ec, "cannot create the checkpoint folder " << folder.string() << ": "
                                                          << ec.message());
  }
  all.meanOf(0); // a barrier: the folder exists for every rank
  checkDerivedParameters(exec, planIndex);
  // This rank's payload (the sharded buffers, then the replicated ones it
  // stores), streamed to its file a buffer at a time with its checksums: one
  // buffer beyond the arena, never the whole file in memory. The header's
  // checksum of the whole is written last.
  const int64_t kChunkBytes = chunkBytes(m, comm.size());
  int64_t maxChunks = 0;
  for (int r = 0; r < comm.size(); ++r)
    maxChunks = std::max(maxChunks, (payloadBytes(m, r) + kChunkBytes - 1) / kChunkBytes);
  std::vector<int64_t> chunkSums(maxChunks, 0);
  uint64_t sum = kFnvOffsetBasis, chunkSum = kFnvOffsetBasis;
  int64_t total = payloadBytes(m, comm.rank()), at = 0;
  size_t c = 0;
  std::string fileName = "rank-" + std::to_string(comm.rank()) + ".bin";
  std::optional<AtomicFile> out;
  std::string header(kCheckpointMagic, sizeof kCheckpointMagic);
  putLE(header, kCheckpointFormat, 4);
  putLE(header, 0, 4);
  putLE(header, total, 8);
  size_t sumAt = header.size();
  putLE(header, 0, 8); // the payload's checksum, once known
  if (writes) {
    out.emplace((folder / fileName).string());
    out->write(header);
  }
  auto feed = [&](const char *p, int64_t n) {
    while (n > 0) {
      int64_t take = std::min(n, kChunkBytes - at % kChunkBytes);
      chunkSum = fnv1a64(p, take, chunkSum);
      sum = fnv1a64(p, take, sum);
      if (out)
        out->write(p, take);
      at += take;
      p += take;
      n -= take;
      if (at % kChunkBytes == 0) {
        chunkSums[c++] = (int64_t)chunkSum;
        chunkSum = kFnvOffsetBasis;
      }
    }
  };
  const std::vector<char> zeros(1 << 16, 0);
  auto feedZeros = [&](int64_t n) {
    for (; n > 0; n -= (int64_t)zeros.size())
      feed(zeros.data(), std::min<int64_t>(n, zeros.size()));
  };
  std::vector<std::pair<int64_t, int>> order; // this rank's buffers by offset
  for (int k = 0; k < m.buffers_size(); ++k) {
    const auto &b = m.buffers(k);
    if (b.rank() < 0 || b.rank() == comm.rank())
      order.emplace_back(b.offset(), k);
  }
  std::sort(order.begin(), order.end());
  for (const auto &[offset, k] : order) {
    ZRT_CHECK(offset >= at, "internal error: checkpoint buffers overlap");
    feedZeros(offset - at);
    HostTensor h = exec.read(planIndex[k]);
    feed(h.bytes.data(), (int64_t)h.bytes.size());
  }
  feedZeros(total - at);
  if (at % kChunkBytes)
    chunkSums[c++] = (int64_t)chunkSum;
  if (out) {
    std::string field;
    putLE(field, sum, 8);
    out->overwrite(sumAt, field.data(), field.size());
    out->commit();
  }

  // Every rank's file is complete once rank 0 has every checksum.
  std::vector<int64_t> allChunkSums(maxChunks * comm.size());
  comm.gatherToRoot(chunkSums.data(), allChunkSums.data(), maxChunks, zero::zplan::I64);
  std::vector<int64_t> sums = comm.gatherInts((int64_t)sum);
  if (all.rank() == 0) {
    m.set_format_version(kCheckpointFormat);
    m.set_plan_fingerprint(planFingerprint(plan));
    m.set_model(plan.source());
    m.set_world_size(comm.size());
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
    std::string json = encodeManifest(m);
    writeFileAtomically((folder / "manifest.json").string(), json);
    writeFileAtomically((fs::path(dir) / "latest").string(), name + "\n");
    if (keep > 0)
      prune(dir, keep, m.model_fingerprint());
  }
  all.meanOf(0); // a barrier: no rank goes on before `latest` names this checkpoint
}

TrainerState zrt::loadCheckpoint(Executor &exec, const std::string &path,
                                 std::string *summary) {
  const auto &plan = exec.plan();
  // A rank reads its slices as rank r of its shard group (of the world, without
  // hybrid sharding).
  Communicator &comm = exec.shardComm();
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
    bool same = m.plan_fingerprint() == planFingerprint(plan);
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
