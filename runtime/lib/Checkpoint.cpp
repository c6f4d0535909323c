//===- Checkpoint.cpp - Sharded checkpoints of a training run -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Checkpoint.h"
#include "zrt/AtomicFile.h"
#include "zrt/Error.h"
#include "zrt/PlanFormat.h"

#include "checkpoint.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace zrt;
namespace fs = std::filesystem;
using zero::zplan::CheckpointManifest;

namespace {

constexpr char kMagic[8] = {'Z', 'E', 'R', 'O', 'C', 'K', 'P', 'T'};
constexpr uint32_t kFormat = 1;

/// What a checkpoint keeps: what the step updates and carries to the next.
bool persistent(const zero::zplan::Buffer &b) {
  return b.role() == zero::zplan::PARAM || b.role() == zero::zplan::MASTER ||
         b.role() == zero::zplan::STATE;
}

const char *roleName(zero::zplan::Role r) {
  return r == zero::zplan::PARAM ? "param" : r == zero::zplan::MASTER ? "master" : "state";
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
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
  return hex(fnv1a64(bytes.data(), bytes.size()));
}

std::string readWhole(const std::string &path, const char *what) {
  std::ifstream in(path, std::ios::binary);
  ZRT_CHECK(in, "cannot read the " << what << " " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  ZRT_CHECK(!in.bad(), "cannot read the " << what << " " << path);
  return ss.str();
}

/// The checkpoint folder `path` names: itself, or the one its `latest` names.
std::string checkpointFolder(const std::string &path) {
  fs::path latest = fs::path(path) / "latest";
  if (!fs::exists(latest))
    return path;
  std::string name = readWhole(latest.string(), "checkpoint pointer");
  while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
    name.pop_back();
  ZRT_CHECK(!name.empty() && name.find('/') == std::string::npos,
            latest.string() << " does not name a checkpoint folder");
  return (fs::path(path) / name).string();
}

/// The manifest's buffer list for `plan` (this rank's shapes; all ranks' agree).
void describeBuffers(const zero::zplan::Plan &plan, CheckpointManifest &m) {
  int64_t offset = 0;
  for (const auto &b : plan.buffers()) {
    if (!persistent(b))
      continue;
    auto *d = m.add_buffers();
    d->set_name(b.name());
    d->set_role(roleName(b.role()));
    d->set_dtype(dtypeName(b.dtype()));
    for (int64_t s : b.shape())
      d->add_shape(s);
    d->set_offset(offset);
    d->set_bytes(b.bytes());
    offset += b.bytes();
  }
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
  std::string payload;
  for (int i = 0; i < plan.buffers_size(); ++i)
    if (persistent(plan.buffers(i))) {
      HostTensor h = exec.read(i);
      payload.append(h.bytes.data(), h.bytes.size());
    }
  std::string file(kMagic, sizeof kMagic);
  putLE(file, kFormat, 4);
  putLE(file, 0, 4);
  putLE(file, payload.size(), 8);
  uint64_t sum = fnv1a64(payload.data(), payload.size());
  putLE(file, sum, 8);
  file += payload;
  std::string fileName = "rank-" + std::to_string(comm.rank()) + ".bin";
  writeFileAtomically((folder / fileName).string(), file);

  // Every rank's file is complete once rank 0 has every checksum.
  std::vector<int64_t> sums = comm.gatherInts((int64_t)sum);
  std::vector<int64_t> sizes = comm.gatherInts((int64_t)file.size());
  if (comm.rank() == 0) {
    CheckpointManifest m;
    m.set_format_version(kFormat);
    m.set_plan_fingerprint(fingerprint(plan));
    m.set_model(plan.source());
    m.set_world_size(plan.world_size());
    m.set_precision(plan.precision().empty() ? "fp32" : plan.precision());
    m.set_grad_accum_steps(std::max(1, plan.grad_accum_steps()));
    m.set_step(state.step);
    m.set_shuffle(state.shuffle);
    m.set_seed(state.seed);
    auto *ls = m.mutable_loss_scaler();
    ls->set_scale(state.scaler.scale);
    ls->set_hysteresis_counter(state.scaler.counter);
    ls->set_iteration(state.scaler.iter);
    ls->set_last_overflow_iteration(state.scaler.lastOverflowIter);
    m.set_schedule_iteration(state.scheduleIteration);
    describeBuffers(plan, m);
    for (int r = 0; r < comm.size(); ++r) {
      auto *f = m.add_files();
      f->set_rank(r);
      f->set_name("rank-" + std::to_string(r) + ".bin");
      f->set_bytes(sizes[r]);
      f->set_checksum(hex((uint64_t)sums[r]));
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

TrainerState zrt::loadCheckpoint(Executor &exec, const std::string &path) {
  const auto &plan = exec.plan();
  Communicator &comm = exec.comm();
  std::string folder = checkpointFolder(path);
  std::string manifestPath = (fs::path(folder) / "manifest.json").string();
  CheckpointManifest m;
  google::protobuf::util::JsonParseOptions options;
  ZRT_CHECK(google::protobuf::util::JsonStringToMessage(
                readWhole(manifestPath, "checkpoint manifest"), &m, options)
                .ok(),
            manifestPath << " is not a checkpoint manifest");
  ZRT_CHECK(m.format_version() == kFormat,
            manifestPath << " has format version " << m.format_version() << ", zero-run "
                         << "reads " << kFormat);
  ZRT_CHECK(m.world_size() == plan.world_size(),
            manifestPath << " was written by " << m.world_size() << " ranks; this plan "
                         << "runs on " << plan.world_size()
                         << " (resuming on another world size is not supported yet)");
  CheckpointManifest mine;
  describeBuffers(plan, mine);
  ZRT_CHECK(m.buffers_size() == mine.buffers_size(),
            manifestPath << " holds " << m.buffers_size() << " buffers per rank; this plan "
                         << "keeps " << mine.buffers_size());
  for (int i = 0; i < m.buffers_size(); ++i) {
    const auto &a = m.buffers(i), &b = mine.buffers(i);
    ZRT_CHECK(a.name() == b.name() && a.role() == b.role() && a.dtype() == b.dtype() &&
                  a.bytes() == b.bytes() && a.offset() == b.offset(),
              manifestPath << ": buffer " << i << " is " << a.role() << " '" << a.name()
                           << "' (" << a.dtype() << ", " << a.bytes()
                           << " bytes); this plan has " << b.role() << " '" << b.name()
                           << "' (" << b.dtype() << ", " << b.bytes() << " bytes)");
  }
  ZRT_CHECK(m.plan_fingerprint() == fingerprint(plan),
            manifestPath << " was written with another plan (fingerprint "
                         << m.plan_fingerprint() << ", this plan's " << fingerprint(plan)
                         << "); resuming needs the same plan");
  ZRT_CHECK(m.files_size() == plan.world_size(),
            manifestPath << " lists " << m.files_size() << " rank files, not "
                         << plan.world_size());
  const auto &entry = m.files(comm.rank());
  std::string filePath = (fs::path(folder) / entry.name()).string();
  ZRT_CHECK(entry.rank() == comm.rank() && entry.name().find('/') == std::string::npos,
            manifestPath << ": the entry for rank " << comm.rank() << " is wrong");
  ZRT_CHECK(fs::exists(filePath), filePath << " is missing");
  std::string file = readWhole(filePath, "checkpoint file");
  ZRT_CHECK((int64_t)file.size() == entry.bytes(),
            filePath << " has " << file.size() << " bytes; the manifest says "
                     << entry.bytes() << " (truncated?)");
  const auto *p = reinterpret_cast<const unsigned char *>(file.data());
  ZRT_CHECK(file.size() >= kPlanHeaderBytes &&
                std::equal(kMagic, kMagic + sizeof kMagic, file.data()),
            filePath << " is not a zero-run checkpoint file");
  uint64_t length = getLE(p + 16, 8), sum = getLE(p + 24, 8);
  std::string payload = file.substr(kPlanHeaderBytes);
  ZRT_CHECK(length == payload.size(),
            filePath << " says its payload has " << length << " bytes; it has "
                     << payload.size());
  int64_t expected = 0;
  for (const auto &b : mine.buffers())
    expected += b.bytes();
  ZRT_CHECK((int64_t)payload.size() == expected,
            filePath << " holds " << payload.size() << " bytes of buffers; the plan keeps "
                     << expected);
  ZRT_CHECK(fnv1a64(payload.data(), payload.size()) == sum && hex(sum) == entry.checksum(),
            filePath << " is corrupted: its checksum does not match");
  // Everything checked: restore.
  int64_t offset = 0;
  for (int i = 0; i < plan.buffers_size(); ++i)
    if (persistent(plan.buffers(i))) {
      exec.write(i, payload.data() + offset, plan.buffers(i).bytes());
      offset += plan.buffers(i).bytes();
    }
  TrainerState s;
  s.step = m.step();
  s.shuffle = m.shuffle();
  s.seed = m.seed();
  s.scaler = {m.loss_scaler().scale(), m.loss_scaler().hysteresis_counter(),
              m.loss_scaler().iteration(), m.loss_scaler().last_overflow_iteration()};
  s.scheduleIteration = m.schedule_iteration();
  return s;
}
