//===- SavePretrained.cpp - Trained weights as save_pretrained writes them ===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/SavePretrained.h"
#include "zrt/AtomicFile.h"
#include "zrt/Communicator.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zrt/Safetensors.h"
#include "zrt/TorchNames.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <map>
#include <random>
#include <unistd.h>

using namespace zrt;
namespace fs = std::filesystem;

namespace {

/// One tensor of the output: a PyTorch name of plan parameter `param`.
struct OutTensor {
  std::string name, param;
  bool transposed = false;
  std::vector<int64_t> shape; ///< as written (the parameter's, swapped if transposed)
  int shard = 0;
  int64_t offset = 0; ///< of its bytes in the shard's data
  int64_t bytes = 0;
};

std::string shardName(int k, int n) {
  if (n == 1)
    return "model.safetensors";
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", k + 1, n);
  return buf;
}

void pwriteAll(int fd, const char *data, int64_t bytes, int64_t offset, const std::string &path) {
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd, data, (size_t)std::min<int64_t>(bytes, 1 << 30), offset);
    if (n < 0 && errno == EINTR)
      continue;
    ZRT_CHECK(n > 0, "--save-pretrained: cannot write " << path << ": " << std::strerror(errno));
    data += n;
    bytes -= n;
    offset += n;
  }
}

} // namespace

SavePretrainedResult zrt::savePretrained(const onnx::ModelProto &model, Executor &exec,
                                         const SavePretrainedOptions &o) {
  auto start = std::chrono::steady_clock::now();
  Communicator &comm = exec.comm();
  bool root = comm.rank() == 0;
  // The layout, the same on every rank: each PyTorch name of each parameter,
  // shards filled in order up to the size limit.
  TorchNameMap map = torchNames(model);
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto &t : model.graph().initializer())
    dims[t.name()].assign(t.dims().begin(), t.dims().end());
  std::vector<OutTensor> tensors;
  for (const std::string &param : exec.parameterNames()) {
    if (map.hasSignature && !map.parameters.count(param))
      continue; // a lifted constant or a buffer: not in the state_dict
    auto unmapped = map.unmapped.find(param);
    ZRT_CHECK(unmapped == map.unmapped.end(),
              "--save-pretrained: initializer '" << param << "' was " << unmapped->second
                                                 << ", so it has no PyTorch name to be "
                                                    "written under");
    auto d = dims.find(param);
    ZRT_CHECK(d != dims.end(), "--save-pretrained: the model has no initializer '"
                                   << param << "' that the plan trains");
    const auto &torch = map.names.at(param);
    for (const TorchName &n : torch) {
      // Its own ONNX name (the first) only where that is a PyTorch name too.
      if (&n == &torch.front() && map.hasSignature && !map.ownNameIsTorch.count(param))
        continue;
      OutTensor t;
      t.name = n.name;
      t.param = param;
      t.transposed = n.transposed;
      t.shape = d->second;
      if (t.transposed)
        std::swap(t.shape[0], t.shape[1]);
      t.bytes = TensorView{nullptr, o.dtype, t.shape}.bytes();
      tensors.push_back(std::move(t));
    }
  }
  ZRT_CHECK(!tensors.empty(), "--save-pretrained: the plan has no parameter to write");
  int shards = 0;
  int64_t inShard = 0;
  for (OutTensor &t : tensors) {
    if (shards == 0 || (inShard > 0 && inShard + t.bytes > o.maxShardBytes)) {
      ++shards;
      inShard = 0;
    }
    t.shard = shards - 1;
    t.offset = inShard;
    inShard += t.bytes;
  }
  std::vector<std::string> names(shards), headers(shards), temps(shards);
  std::vector<int64_t> sizes(shards, 0);
  for (int k = 0; k < shards; ++k) {
    std::vector<std::string> n;
    std::vector<DType> dt;
    std::vector<std::vector<int64_t>> sh;
    for (const OutTensor &t : tensors)
      if (t.shard == k) {
        n.push_back(t.name);
        dt.push_back(o.dtype);
        sh.push_back(t.shape);
        sizes[k] += t.bytes;
      }
    names[k] = shardName(k, shards);
    headers[k] = safetensorsHeader(n, dt, sh, {{"format", "pt"}});
  }
  // Rank 0 lays the files out under temporary names (a token of its own, shared
  // with the others) at their full size; the others open them for writing only.
  uint64_t token = 0;
  std::string error;
  // Shard k's temporary name, the same on every rank once the token is shared.
  auto tempName = [&](int k) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".partial-%016llx", (unsigned long long)token);
    return (fs::path(o.dir) / ("." + names[k] + suffix)).string();
  };
  if (root) {
    token = std::random_device{}() ^ ((uint64_t)::getpid() << 32);
    try {
      std::error_code ec;
      fs::create_directories(o.dir, ec);
      ZRT_CHECK(!ec, "--save-pretrained: cannot create " << o.dir << ": " << ec.message());
      for (int k = 0; k < shards; ++k) {
        std::string temp = tempName(k);
        int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ZRT_CHECK(fd >= 0, "--save-pretrained: cannot create " << temp << ": "
                                                               << std::strerror(errno));
        bool ok = ::ftruncate(fd, (off_t)(headers[k].size() + sizes[k])) == 0;
        std::string why = ok ? "" : std::strerror(errno);
        ::close(fd);
        ZRT_CHECK(ok, "--save-pretrained: cannot size " << temp << ": " << why);
        temps[k] = temp;
        int wfd = ::open(temp.c_str(), O_WRONLY | O_CLOEXEC);
        ZRT_CHECK(wfd >= 0, "--save-pretrained: cannot open " << temp);
        try {
          pwriteAll(wfd, headers[k].data(), headers[k].size(), 0, temp);
        } catch (...) {
          ::close(wfd);
          throw;
        }
        ::close(wfd);
      }
    } catch (const Error &e) {
      error = e.what();
    }
  }
  auto removeTemps = [&] {
    if (!root)
      return;
    for (const std::string &t : temps)
      if (!t.empty())
        ::unlink(t.c_str());
  };
  comm.broadcast(&token, sizeof token);
  // Every rank learns of a failure on any: they stop together.
  auto agree = [&](const std::string &mine, const char *stage) {
    bool failed = comm.meanOf(mine.empty() ? 0.0 : 1.0) > 0;
    if (!failed)
      return;
    removeTemps();
    if (!mine.empty())
      throw Error(mine);
    throw Error(std::string("--save-pretrained: another rank failed while ") + stage);
  };
  agree(error, "laying out the files");
  for (int k = 0; k < shards; ++k)
    temps[k] = tempName(k);
  // Each rank writes the elements it owns, converted; one slice at a time.
  SavePretrainedResult r;
  r.tensors = (int64_t)tensors.size();
  r.shards = shards;
  std::vector<int> fds(shards, -1);
  auto last = start;
  try {
    int64_t done = 0, total = 0;
    for (const OutTensor &t : tensors)
      total += t.bytes;
    r.totalBytes = total;
    for (const OutTensor &t : tensors) {
      Executor::OwnedPart part = exec.ownedPart(t.param);
      done += t.bytes;
      if (!part.writer || part.count == 0)
        continue;
      int &fd = fds[t.shard];
      if (fd < 0) {
        fd = ::open(temps[t.shard].c_str(), O_WRONLY | O_CLOEXEC);
        ZRT_CHECK(fd >= 0, "--save-pretrained: rank " << comm.rank() << " cannot open "
                                                      << temps[t.shard]
                                                      << ", which rank 0 created: "
                                                      << std::strerror(errno)
                                                      << " (the ranks must share the folder)");
      }
      int64_t in = dtypeSize(part.dtype), out = dtypeSize(o.dtype);
      int64_t base = (int64_t)headers[t.shard].size() + t.offset;
      std::vector<char> staged(part.count * out);
      r.stagingBytes = std::max<int64_t>(r.stagingBytes, part.bytes.size() + staged.size());
      for (int64_t k = 0; k < part.count; ++k)
        if (part.dtype == o.dtype)
          std::memcpy(staged.data() + k * out, part.bytes.data() + k * in, out);
        else
          storeFloatValue(staged.data() + k * out, o.dtype,
                          floatValue(part.bytes.data() + k * in, part.dtype));
      if (!t.transposed) {
        pwriteAll(fd, staged.data(), staged.size(), base + part.first * out, temps[t.shard]);
      } else {
        // The parameter is W^T ([c, r]); the file holds W ([r, c]). Element d of
        // W^T is W[d % r][d / r]: per row j of W, the columns this rank owns.
        int64_t c = t.shape[1], rows = t.shape[0];
        int64_t first = part.first, end = part.first + part.count;
        std::vector<char> run;
        for (int64_t j = 0; j < rows; ++j) {
          int64_t i0 = (first - j + rows - 1) / rows; // smallest i with i*rows+j >= first
          if (first - j <= 0)
            i0 = 0;
          int64_t i1 = (end - 1 - j) >= 0 ? (end - 1 - j) / rows : -1; // largest i < end
          if (i1 < i0)
            continue;
          run.resize((i1 - i0 + 1) * out);
          for (int64_t i = i0; i <= i1; ++i)
            std::memcpy(run.data() + (i - i0) * out,
                        staged.data() + (i * rows + j - first) * out, out);
          pwriteAll(fd, run.data(), run.size(), base + (j * c + i0) * out, temps[t.shard]);
        }
      }
      r.bytes += (int64_t)staged.size();
      auto now = std::chrono::steady_clock::now();
      if (root && !o.quiet && now - last > std::chrono::seconds(5)) {
        std::printf("saving %s: %.0f%% (%.1f of %.1f MB)\n", o.dir.c_str(),
                    100.0 * done / total, done / 1e6, total / 1e6);
        std::fflush(stdout);
        last = now;
      }
    }
    for (int &fd : fds)
      if (fd >= 0) {
        int rc = ::fsync(fd);
        std::string why = rc == 0 ? "" : std::strerror(errno);
        ::close(fd);
        fd = -1;
        ZRT_CHECK(rc == 0, "--save-pretrained: cannot flush " << o.dir << ": " << why);
      }
  } catch (const Error &e) {
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
    error = e.what();
  }
  agree(error, "writing its part");
  // Rank 0 puts the whole files in place, then the index and the config.
  if (root) {
    try {
      for (int k = 0; k < shards; ++k) {
        std::string final_ = (fs::path(o.dir) / names[k]).string();
        ZRT_CHECK(::rename(temps[k].c_str(), final_.c_str()) == 0,
                  "--save-pretrained: cannot rename " << temps[k] << " to " << final_ << ": "
                                                      << std::strerror(errno));
        temps[k].clear();
      }
      fs::path index = fs::path(o.dir) / "model.safetensors.index.json";
      std::error_code ec;
      if (shards == 1) {
        fs::remove(index, ec); // an earlier sharded save's index would win
      } else {
        int64_t total = 0;
        for (int64_t s : sizes)
          total += s;
        std::vector<const OutTensor *> sorted;
        for (const OutTensor &t : tensors)
          sorted.push_back(&t);
        std::sort(sorted.begin(), sorted.end(),
                  [](const OutTensor *a, const OutTensor *b) { return a->name < b->name; });
        std::string json = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(total) +
                           "\n  },\n  \"weight_map\": {\n";
        for (size_t k = 0; k < sorted.size(); ++k)
          json += "    " + jsonString(sorted[k]->name) + ": " +
                  jsonString(names[sorted[k]->shard]) + (k + 1 < sorted.size() ? ",\n" : "\n");
        json += "  }\n}\n";
        writeFileAtomically(index.string(), json);
        fs::remove(fs::path(o.dir) / "model.safetensors", ec); // an earlier single file
      }
      for (const char *config : {"config.json", "generation_config.json"}) {
        fs::path from = fs::path(o.configFolder) / config;
        if (o.configFolder.empty() || !fs::exists(from))
          continue;
        writeFileAtomically((fs::path(o.dir) / config).string(),
                            readInputFile(from.string(), config, kMaxConfigBytes));
      }
    } catch (const Error &e) {
      error = e.what();
    }
  }
  agree(error, "putting the files in place");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}
