//===- CheckpointManifestFuzzer.cpp - libFuzzer target: a checkpoint's manifest ===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each input is the text of a checkpoint's manifest.json. It goes through what
// resuming and consolidating do with one: first as it is (its checksum, which the
// fuzzer rarely gets right, must refuse it cleanly), then with its checksum written
// the way zero-run writes it, as a hostile edit would be. A manifest that passes
// its checks gets rank files made to its word (sizes, headers, chunk checksums;
// payloads of at most 1 MiB), and then every tensor is read and the checkpoint
// consolidated into safetensors, and its loss scaler restored into a dynamic one.
// Errors (zrt::Error) are fine; crashes, out-of-bounds accesses, leaks, undefined
// behaviour and other exceptions are findings. Built by utils/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "zrt/CheckpointManifest.h"
#include "zrt/CheckpointReader.h"
#include "zrt/Consolidate.h"
#include "zrt/Error.h"
#include "zrt/LossScaler.h"
#include "zplan/PlanFormat.h"

#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// One folder for the whole run, under the working directory utils/fuzz.sh gives.
const std::string &folder() {
  static const std::string path = [] {
    char name[] = "manifest-fuzz-XXXXXX";
    const char *made = ::mkdtemp(name);
    return std::string(made ? made : ".");
  }();
  return path;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Rank files as the manifest describes them (their checksums filled in), then
/// the manifest with its checksum; false when they would be too large.
bool writeCheckpoint(zero::zplan::CheckpointManifest m) {
  int64_t total = 0;
  for (const auto &f : m.files())
    total += f.bytes();
  if (total > (int64_t(1) << 20))
    return false;
  for (auto &f : *m.mutable_files()) {
    int64_t payloadBytes = f.bytes() - (int64_t)zrt::kPlanHeaderBytes;
    std::string payload(payloadBytes, '\0');
    for (int64_t i = 0; i < payloadBytes; ++i)
      payload[i] = (char)(i * 131 + f.rank() * 7); // arbitrary, deterministic values
    int64_t cb = m.chunk_bytes();
    for (int64_t c = 0; c < f.chunk_checksums_size(); ++c) {
      int64_t at = c * cb, n = std::min(cb, payloadBytes - at);
      f.set_chunk_checksums((int)c, zrt::hex64(zrt::fnv1a64(payload.data() + at, n)));
    }
    uint64_t sum = zrt::fnv1a64(payload.data(), payload.size());
    f.set_checksum(zrt::hex64(sum));
    std::string file(zrt::kCheckpointMagic, sizeof zrt::kCheckpointMagic);
    zrt::putLE(file, zrt::kCheckpointFormat, 4);
    zrt::putLE(file, 0, 4);
    zrt::putLE(file, payload.size(), 8);
    zrt::putLE(file, sum, 8);
    writeFile(folder() + "/" + f.name(), file + payload);
  }
  writeFile(folder() + "/manifest.json", zrt::encodeManifest(m));
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  // As written: the checksum (or the JSON) refuses almost every input.
  try {
    zrt::decodeManifest(text, "fuzz/manifest.json");
  } catch (const zrt::Error &) {
  }
  // As a hostile edit: the same values with a checksum that matches.
  zero::zplan::CheckpointManifest m;
  google::protobuf::util::JsonParseOptions options;
  if (!zrt::jsonNestingProblem(text).empty() ||
      !google::protobuf::util::JsonStringToMessage(text, &m, options).ok())
    return 0;
  try {
    zero::zplan::CheckpointManifest checked =
        zrt::decodeManifest(zrt::encodeManifest(m), "fuzz/manifest.json");
    if (!writeCheckpoint(checked))
      return 0;
    zrt::CheckpointReader reader(folder());
    std::vector<char> buffer;
    for (const auto &t : reader.manifest().tensors()) {
      int64_t n = 1;
      for (int64_t d : t.shape())
        n *= d;
      zrt::DType dtype = zrt::dtypeFromName(t.dtype());
      buffer.assign(n * zrt::dtypeSize(dtype), 0);
      reader.read(t.name(), 0, n, dtype, buffer.data());
    }
    reader.verifyUnread(0, 1);
    zrt::consolidateToSafetensors(folder(), folder() + "/out.safetensors", true);
    const auto &ls = reader.manifest().loss_scaler();
    zrt::LossScaler scaler(true, 65536.0, 1000, 2, 1.0);
    scaler.restore({ls.scale(), ls.hysteresis_counter(), ls.iteration(),
                    ls.last_overflow_iteration()},
                   "fuzz");
    scaler.update(false);
  } catch (const zrt::Error &) {
  }
  return 0;
}
