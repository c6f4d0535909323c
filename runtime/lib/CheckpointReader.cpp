//===- CheckpointReader.cpp - Reads tensors out of a checkpoint -----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/CheckpointReader.h"
#include "zrt/CheckpointLayout.h"
#include "zrt/CheckpointManifest.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/InputFile.h"
#include "zplan/PlanFormat.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace zrt;
namespace fs = std::filesystem;

namespace {

/// The checkpoint folder `path` names: itself, or the one its `latest` names.
std::string checkpointFolder(const std::string &path) {
  fs::path latest = fs::path(path) / "latest";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(latest, ec)))
    return path;
  std::string name = readInputFile(latest.string(), "checkpoint pointer", 4096);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
    name.pop_back();
  ZRT_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." &&
                name != ".." && name.find('\0') == std::string::npos,
            latest.string() << " does not name a checkpoint folder");
  return (fs::path(path) / name).string();
}


} // namespace

CheckpointReader::CheckpointReader(const std::string &path) {
  folder_ = checkpointFolder(path);
  manifestPath_ = (fs::path(folder_) / "manifest.json").string();
  m_ = decodeManifest(readInputFile(manifestPath_, "checkpoint manifest", kMaxManifestBytes),
                      manifestPath_);
  // Every rank file: a regular file of the size the manifest says, with its header.
  for (int q = 0; q < m_.world_size(); ++q) {
    const auto &f = m_.files(q);
    File file;
    file.path = (fs::path(folder_) / f.name()).string();
    file.input = std::make_unique<InputFile>(file.path, "checkpoint file", INT64_MAX);
    ZRT_CHECK(file.input->size() == f.bytes(),
              file.path << " has " << file.input->size() << " bytes; the manifest says "
                        << f.bytes() << " (truncated?)");
    file.payload = f.bytes() - (int64_t)kPlanHeaderBytes;
    unsigned char header[kPlanHeaderBytes];
    ZRT_CHECK(::pread(file.input->fd(), header, sizeof header, 0) == (ssize_t)sizeof header &&
                  std::memcmp(header, kCheckpointMagic, sizeof kCheckpointMagic) == 0,
              file.path << " is not a zero-run checkpoint file");
    ZRT_CHECK(getLE(header + 8, 4) == kCheckpointFormat &&
                  (int64_t)getLE(header + 16, 8) == file.payload &&
                  hex64(getLE(header + 24, 8)) == f.checksum(),
              file.path << " has a header that does not match the manifest");
    file.verified.assign(f.chunk_checksums_size(), false);
    files_.push_back(std::move(file));
  }
  // Where every tensor's elements are: each buffer, in each file that holds it
  // (checkManifest made sure they cover every tensor once).
  int world = m_.world_size();
  for (int k = 0; k < m_.tensors_size(); ++k)
    tensors_[m_.tensors(k).name()] = k;
  for (const auto &b : m_.buffers()) {
    DType t = dtypeFromName(b.dtype());
    for (int q = 0; q < world; ++q) {
      if (b.rank() >= 0 && b.rank() != q)
        continue;
      for (const TensorPiece &p : tensorPieces(b, q, world))
        sources_[p.tensor].push_back(
            {p.first, p.count, q, b.offset() + p.at * dtypeSize(t), t});
    }
  }
  for (auto &[name, list] : sources_)
    std::sort(list.begin(), list.end(),
              [](const Source &a, const Source &b) { return a.first < b.first; });
}

CheckpointReader::~CheckpointReader() = default;

int64_t CheckpointReader::totalBytes() const {
  int64_t total = 0;
  for (const File &f : files_)
    total += f.payload;
  return total;
}

const zero::zplan::CheckpointTensor *CheckpointReader::tensor(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &m_.tensors(it->second);
}

const char *CheckpointReader::chunk(int fileIndex, int64_t index, int64_t &size) {
  File &f = files_[fileIndex];
  int64_t cb = m_.chunk_bytes(), begin = index * cb;
  size = std::min(cb, f.payload - begin);
  if (f.cached == index)
    return f.cache.data();
  f.cache.resize(size);
  int64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(f.input->fd(), f.cache.data() + done, size - done,
                        (off_t)(kPlanHeaderBytes + begin + done));
    ZRT_CHECK(n > 0, "cannot read " << f.path << ": "
                                    << (n == 0 ? "it ends early" : std::strerror(errno)));
    done += n;
  }
  if (!f.verified[index])
    bytesRead_ += size;
  ZRT_CHECK(hex64(fnv1a64(f.cache.data(), size)) == m_.files(fileIndex).chunk_checksums(index),
            f.path << " is corrupted: payload bytes " << begin << ".." << begin + size - 1
                   << " do not match their checksum");
  f.cached = index;
  f.verified[index] = true;
  return f.cache.data();
}

void CheckpointReader::copy(int file, int64_t offset, int64_t bytes, char *dst) {
  int64_t cb = m_.chunk_bytes();
  while (bytes > 0) {
    int64_t size;
    const char *c = chunk(file, offset / cb, size);
    int64_t within = offset % cb, n = std::min(bytes, size - within);
    std::memcpy(dst, c + within, n);
    dst += n;
    offset += n;
    bytes -= n;
  }
}

void CheckpointReader::read(const std::string &name, int64_t first, int64_t count,
                            DType dtype, char *dst) {
  auto it = sources_.find(name);
  ZRT_CHECK(it != sources_.end(), manifestPath_ << " has no tensor '" << name << "'");
  int64_t next = first, end = first + count, dsize = dtypeSize(dtype);
  std::vector<char> staging;
  for (const Source &s : it->second) {
    int64_t from = std::max(next, s.first), to = std::min(end, s.first + s.count);
    if (from >= to)
      continue;
    ZRT_CHECK(from == next, manifestPath_ << ": no file holds elements " << next << ".."
                                          << from - 1 << " of '" << name << "'");
    int64_t ssize = dtypeSize(s.dtype), n = to - from;
    int64_t offset = s.offset + (from - s.first) * ssize;
    char *out = dst + (from - first) * dsize;
    if (s.dtype == dtype) {
      copy(s.file, offset, n * ssize, out);
    } else {
      ZRT_CHECK(isFloatDtype(s.dtype) && isFloatDtype(dtype),
                manifestPath_ << ": '" << name << "' is stored as " << dtypeName(s.dtype)
                              << "; the plan holds it as " << dtypeName(dtype));
      staging.resize(n * ssize);
      copy(s.file, offset, n * ssize, staging.data());
      for (int64_t i = 0; i < n; ++i)
        storeFloatValue(out + i * dsize, dtype, floatValue(staging.data() + i * ssize, s.dtype));
    }
    next = to;
  }
  ZRT_CHECK(next == end, manifestPath_ << ": no file holds elements " << next << ".."
                                       << end - 1 << " of '" << name << "'");
}

void CheckpointReader::verifyUnread(int rank, int world) {
  // Chunk c of file q falls to rank (q + c) mod world: the checking is spread.
  for (int q = 0; q < (int)files_.size(); ++q)
    for (int64_t c = 0; c < (int64_t)files_[q].verified.size(); ++c)
      if ((q + c) % world == rank && !files_[q].verified[c]) {
        int64_t size;
        chunk(q, c, size);
      }
}
