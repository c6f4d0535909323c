//===- PretrainedWeights.cpp - A save_pretrained checkpoint, read by range -===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/PretrainedWeights.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zrt/OnnxTensors.h"
#include "zrt/RunAgreement.h"
#include "zrt/StrictJson.h"
#include "zrt/TorchNames.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

using namespace zrt;
namespace fs = std::filesystem;

namespace {

const char *const kIndexName = "model.safetensors.index.json";
const char *const kSingleName = "model.safetensors";
// An index names every tensor of the largest models in a few MB.
constexpr int64_t kMaxIndexBytes = int64_t(64) << 20;

std::string describeShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

bool endsWith(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The shard files an index names, in the order first named, each checked to be
/// a plain name in the index's folder; `tensorsOf` gets each file's tensors.
std::vector<std::string> readIndex(const std::string &index,
                                   std::map<std::string, std::set<std::string>> &tensorsOf) {
  std::string text = readInputFile(index, "safetensors index", kMaxIndexBytes);
  JsonValue json;
  std::string why;
  ZRT_CHECK(parseStrictJson(text, json, why), index << " is not valid JSON: " << why);
  const JsonValue *map = json.kind == JsonValue::Kind::Object ? json.find("weight_map") : nullptr;
  ZRT_CHECK(map && map->kind == JsonValue::Kind::Object,
            index << " has no \"weight_map\" object (tensor name -> shard file), as "
                     "save_pretrained writes");
  ZRT_CHECK(!map->members.empty(), index << ": its weight_map names no tensor");
  std::vector<std::string> files;
  for (const auto &[tensor, file] : map->members) {
    ZRT_CHECK(file.kind == JsonValue::Kind::String,
              index << ": weight_map['" << tensor << "'] is " << JsonValue::kindName(file.kind)
                    << ", not a file name");
    const std::string &name = file.text;
    ZRT_CHECK(!name.empty() && name != "." && name != ".." &&
                  name.find('/') == std::string::npos && name.find('\0') == std::string::npos,
              index << ": weight_map['" << tensor << "'] is '" << name
                    << "'; a shard is a file beside the index, named without a folder");
    if (!tensorsOf.count(name))
      files.push_back(name);
    tensorsOf[name].insert(tensor);
  }
  return files;
}

} // namespace

PretrainedWeights::PretrainedWeights(const std::vector<std::string> &paths) {
  ZRT_CHECK(!paths.empty(), "no checkpoint files given");
  std::vector<std::string> files;
  std::map<std::string, std::set<std::string>> indexed; // file -> tensors the index puts there
  std::string index;
  if (paths.size() == 1 && fs::is_directory(paths[0])) {
    fs::path dir(paths[0]);
    if (fs::exists(dir / kIndexName))
      index = (dir / kIndexName).string();
    else {
      ZRT_CHECK(fs::exists(dir / kSingleName),
                "--init " << paths[0] << ": the folder has neither " << kIndexName
                          << " nor " << kSingleName << " (what save_pretrained writes)");
      files.push_back((dir / kSingleName).string());
    }
  } else if (paths.size() == 1 && endsWith(paths[0], ".json")) {
    index = paths[0];
  } else {
    for (const std::string &p : paths) {
      ZRT_CHECK(endsWith(p, ".safetensors"),
                "--init " << p << ": with other checkpoint files, each is a .safetensors "
                                  "file (or give the folder, or its index, alone)");
      files.push_back(p);
    }
  }
  if (!index.empty()) {
    fs::path dir = fs::path(index).parent_path();
    for (const std::string &name : readIndex(index, indexed))
      files.push_back((dir / name).string());
    std::map<std::string, std::set<std::string>> byPath;
    for (auto &[name, tensors] : indexed)
      byPath[(dir / name).string()] = std::move(tensors);
    indexed = std::move(byPath);
  }
  std::set<std::string> seenFiles;
  std::map<DType, int64_t> elementsOf;
  for (const std::string &path : files) {
    ZRT_CHECK(seenFiles.insert(fs::weakly_canonical(path).string()).second,
              "--init " << path << " is given twice");
    ZRT_CHECK(!index.empty() || fs::exists(path), "--init " << path << ": no such file");
    ZRT_CHECK(index.empty() || fs::exists(path),
              index << " names the shard " << fs::path(path).filename().string()
                    << ", which is not beside it (a partial download?)");
    files_.push_back(std::make_unique<SafetensorsFile>(path));
    const SafetensorsFile &f = *files_.back();
    for (const auto &[name, e] : f.entries()) {
      // With an index, a tensor is read from the file the index names for it.
      if (!index.empty() && !indexed[path].count(name))
        continue;
      auto [it, fresh] = fileOf_.emplace(name, &f);
      ZRT_CHECK(fresh, "tensor '" << name << "' is in both " << it->second->path() << " and "
                                  << path << "; a checkpoint holds each tensor once");
      if (isFloatDtype(e.dtype)) {
        int64_t n = 1;
        for (int64_t d : e.shape)
          n *= d;
        elementsOf[e.dtype] += n;
      }
    }
    if (!index.empty())
      for (const std::string &name : indexed[path])
        ZRT_CHECK(f.find(name), index << " puts tensor '" << name << "' in " << path
                                      << ", which has no tensor of that name");
  }
  folder_ = fs::path(files_.front()->path()).parent_path().string();
  if (folder_.empty())
    folder_ = ".";
  int64_t most = -1;
  for (const auto &[dtype, n] : elementsOf)
    if (n > most) {
      most = n;
      dtype_ = dtype;
    }
}

std::string PretrainedWeights::describe() const {
  std::string what = files_.size() == 1 ? files_[0]->path()
                                        : folder_ + " (" + std::to_string(files_.size()) +
                                              " safetensors files";
  if (files_.size() != 1)
    what += std::string(", ") + dtypeName(dtype_) + ")";
  return what;
}

int64_t PretrainedWeights::bind(const onnx::ModelProto &model,
                                const std::vector<std::string> &trained) {
  TorchNameMap map = torchNames(model);
  // The parameters the checkpoint must hold: the exporter's graph signature
  // names them where it is there (the plan may train lifted constants no
  // state_dict has); otherwise every initializer the plan trains.
  std::set<std::string> mustHave = map.hasSignature
                                       ? map.parameters
                                       : std::set<std::string>(trained.begin(), trained.end());
  std::set<std::string> used;
  std::vector<std::string> missing;
  for (const auto &init : model.graph().initializer()) {
    auto names = map.names.find(init.name());
    if (names == map.names.end())
      continue; // not a float initializer
    const TorchName *match = nullptr;
    const SafetensorsEntry *entry = nullptr;
    const SafetensorsFile *file = nullptr;
    for (const TorchName &n : names->second) {
      auto it = fileOf_.find(n.name);
      if (it != fileOf_.end()) {
        match = &n;
        file = it->second;
        entry = file->find(n.name);
        break;
      }
    }
    if (!entry) {
      // Not under its own name either: one folded in another way has no other.
      auto unmapped = map.unmapped.find(init.name());
      ZRT_CHECK(unmapped == map.unmapped.end(),
                "initializer '" << init.name() << "' was " << unmapped->second
                                << " (the exporter's optimizer computed it from the "
                                   "export's weights), so it cannot be read from "
                                << describe() << " by name; export with optimize=False");
      if (mustHave.count(init.name()))
        missing.push_back(names->second.back().name);
      continue;
    }
    DType to = dtypeFromOnnx(init.data_type());
    ZRT_CHECK(isFloatDtype(entry->dtype) && isFloatDtype(to),
              file->path() << ": '" << match->name << "' is " << dtypeName(entry->dtype)
                           << ", initializer '" << init.name() << "' "
                           << (isFloatDtype(to) ? "is a float" : "is not a float"));
    std::vector<int64_t> want(init.dims().begin(), init.dims().end());
    if (match->transposed)
      std::swap(want[0], want[1]);
    ZRT_CHECK(entry->shape == want,
              file->path() << ": '" << match->name << "' has shape "
                           << describeShape(entry->shape) << "; initializer '" << init.name()
                           << "' needs " << describeShape(want)
                           << (match->transposed ? " (it holds it transposed)" : ""));
    bindings_[init.name()] = Binding{file, match->name, match->transposed};
    used.insert(match->name);
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t k = 0; k < missing.size() && k < 5; ++k)
      list += (k ? ", '" : "'") + missing[k] + "'";
    ZRT_FAIL(describe() << " has no tensor for " << missing.size() << " of the model's "
                        << "parameters: " << list << (missing.size() > 5 ? ", ..." : ""));
  }
  // A tied parameter is in the checkpoint once, under either name.
  std::set<std::string> known;
  for (const auto &[init, names] : map.names)
    if (std::any_of(names.begin(), names.end(),
                    [&](const TorchName &n) { return used.count(n.name); }))
      for (const TorchName &n : names)
        known.insert(n.name);
  unused_ = 0;
  for (const auto &[name, file] : fileOf_)
    unused_ += !known.count(name);
  return (int64_t)bindings_.size();
}

bool PretrainedWeights::fill(const std::string &name, const std::vector<int64_t> &shape,
                             DType dtype, int64_t first, int64_t count, char *out) const {
  auto it = bindings_.find(name);
  if (it == bindings_.end())
    return false;
  const Binding &b = it->second;
  const SafetensorsEntry &e = *b.file->find(b.tensor);
  int64_t in = dtypeSize(e.dtype), outSize = dtypeSize(dtype);
  std::vector<char> stored;
  // The stored element of output element first + k.
  std::function<const char *(int64_t)> at;
  if (!b.transposed) {
    stored.resize(count * in);
    b.file->readRuns(b.tensor, first * in, count * in, 0, 1, stored.data());
    at = [&](int64_t k) { return stored.data() + k * in; };
  } else {
    // The initializer is W^T ([c, r]) of the stored W ([r, c]): its elements
    // [first, first + count) are columns i0..i1 of W, read row by row.
    int64_t r = e.shape[0], c = e.shape[1];
    int64_t i0 = first / r, i1 = (first + count - 1) / r, w = i1 - i0 + 1;
    stored.resize(r * w * in);
    b.file->readRuns(b.tensor, i0 * in, w * in, c * in, r, stored.data());
    at = [&, r, i0, w](int64_t k) {
      int64_t d = first + k, i = d / r, j = d % r;
      return stored.data() + (j * w + (i - i0)) * in;
    };
  }
  if (count && e.dtype == dtype && !b.transposed) {
    std::memcpy(out, stored.data(), count * in);
    return true;
  }
  for (int64_t k = 0; k < count; ++k) {
    if (e.dtype == dtype)
      std::memcpy(out + k * outSize, at(k), in);
    else
      storeFloatValue(out + k * outSize, dtype, floatValue(at(k), e.dtype));
  }
  return true;
}

uint64_t PretrainedWeights::fingerprint() const {
  uint64_t h = 0;
  for (const auto &f : files_) {
    std::string name = fs::path(f->path()).filename().string();
    h = contentHash(name.data(), name.size(), h);
    for (const auto &[tensor, e] : f->entries()) {
      h = contentHash(tensor.data(), tensor.size(), h);
      int64_t fields[3] = {(int64_t)e.dtype, e.begin, e.end};
      h = contentHash(fields, sizeof fields, h);
    }
    // 16 samples of 4 KiB spread over the file's tensors' bytes.
    int64_t total = 0;
    for (const auto &[tensor, e] : f->entries())
      total = std::max(total, e.end);
    std::vector<char> sample(4096);
    for (const auto &[tensor, e] : f->entries()) {
      int64_t bytes = e.end - e.begin;
      int64_t take = std::min<int64_t>(bytes, 4096);
      if (take == 0 || (total > 16 * 4096 && bytes < total / 16))
        continue; // the large tensors carry the samples
      f->readRuns(tensor, (bytes - take) / 2, take, 0, 1, sample.data());
      h = contentHash(sample.data(), take, h);
    }
  }
  return h;
}
