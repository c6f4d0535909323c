//===- Safetensors.cpp - Hugging Face's weight files ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Safetensors.h"
#include "zrt/AtomicFile.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zrt/StrictJson.h"

#include <algorithm>
#include <cmath>
#include <unistd.h>

using namespace zrt;

namespace {

/// The format's header is at most 100 MB (as the reference implementation says).
constexpr int64_t kMaxHeaderBytes = 100 << 20;

struct DtypeName {
  const char *name;
  DType dtype;
};
constexpr DtypeName kDtypes[] = {
    {"F32", zero::zplan::F32},  {"F64", zero::zplan::F64}, {"BF16", zero::zplan::BF16},
    {"F16", zero::zplan::F16},  {"I64", zero::zplan::I64}, {"I32", zero::zplan::I32},
    {"I8", zero::zplan::I8},    {"U8", zero::zplan::U8},   {"BOOL", zero::zplan::BOOL},
};

const char *nameOf(DType t) {
  for (const auto &d : kDtypes)
    if (d.dtype == t)
      return d.name;
  return nullptr;
}


void readAt(int fd, char *out, int64_t bytes, int64_t offset, const std::string &path) {
  while (bytes > 0) {
    ssize_t n = ::pread(fd, out, bytes, offset);
    ZRT_CHECK(n > 0, path << ": cannot read " << bytes << " bytes at offset " << offset);
    out += n;
    bytes -= n;
    offset += n;
  }
}

/// A field the format reads as an unsigned integer (Rust's usize): a JSON
/// integer, never 1.0 or 1e3, within int64.
int64_t wholeNumber(const JsonValue &v, const std::string &where) {
  std::optional<int64_t> n = v.integer();
  ZRT_CHECK(n && *n >= 0, where << " is not a non-negative integer (it is "
                                << (v.kind == JsonValue::Kind::Number
                                        ? "'" + v.text + "'"
                                        : std::string(JsonValue::kindName(v.kind)))
                                << ")");
  return *n;
}

} // namespace

std::string zrt::jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

// As strictly as the reference reader (safetensors' Metadata::validate): a JSON
// object without duplicate names; __metadata__, if present, an object of
// strings; each tensor's dtype, shape and data_offsets, integers where integers
// are; the tensors' bytes, in order of their offsets, one after another from the
// start of the data to its end: no overlap (one tensor reading another's bytes),
// no hole, nothing after the last.
SafetensorsFile::SafetensorsFile(const std::string &path) : path_(path) {
  InputFile file(path, "safetensors file", INT64_MAX);
  ZRT_CHECK(file.size() >= 8, path << " is not a safetensors file: shorter than its "
                                      "8-byte header length");
  unsigned char length[8];
  readAt(file.fd(), (char *)length, 8, 0, path);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | length[i];
  ZRT_CHECK(headerBytes <= (uint64_t)kMaxHeaderBytes &&
                (int64_t)headerBytes <= file.size() - 8,
            path << " is not a safetensors file: its header length " << headerBytes
                 << " exceeds the file or the format's 100 MB");
  std::string header(headerBytes, '\0');
  readAt(file.fd(), header.data(), headerBytes, 8, path);
  JsonValue json;
  std::string why;
  ZRT_CHECK(parseStrictJson(header, json, why),
            path << " is not a safetensors file: its header is not valid JSON: " << why);
  ZRT_CHECK(json.kind == JsonValue::Kind::Object,
            path << " is not a safetensors file: its header is "
                 << JsonValue::kindName(json.kind) << ", not a JSON object");
  dataStart_ = 8 + headerBytes;
  int64_t dataBytes = file.size() - dataStart_;
  std::vector<std::pair<std::string, const SafetensorsEntry *>> byOffset;
  for (const auto &[name, value] : json.members) {
    if (name == "__metadata__") {
      ZRT_CHECK(value.kind == JsonValue::Kind::Object,
                path << ": __metadata__ is " << JsonValue::kindName(value.kind)
                     << ", not an object of strings");
      for (const auto &[key, text] : value.members)
        ZRT_CHECK(text.kind == JsonValue::Kind::String,
                  path << ": __metadata__ '" << key << "' is "
                       << JsonValue::kindName(text.kind) << ", not a string");
      continue;
    }
    std::string where = path + ": tensor '" + name + "'";
    ZRT_CHECK(value.kind == JsonValue::Kind::Object, where << " is not described by an object");
    const JsonValue *dtype = value.find("dtype"), *shape = value.find("shape"),
                    *offsets = value.find("data_offsets");
    ZRT_CHECK(dtype && shape && offsets, where << " lacks dtype, shape or data_offsets");
    SafetensorsEntry e;
    for (const auto &d : kDtypes)
      if (dtype->kind == JsonValue::Kind::String && dtype->text == d.name)
        e.dtype = d.dtype;
    ZRT_CHECK(e.dtype != zero::zplan::DTYPE_INVALID,
              where << " has dtype '"
                    << (dtype->kind == JsonValue::Kind::String ? dtype->text
                                                               : JsonValue::kindName(dtype->kind))
                    << "', which zero-run does not read");
    ZRT_CHECK(shape->kind == JsonValue::Kind::Array && shape->items.size() <= 64,
              where << ": shape is not a list of at most 64 dimensions");
    int64_t numel = 1;
    for (const JsonValue &d : shape->items) {
      int64_t n = wholeNumber(d, where + ": a dimension");
      ZRT_CHECK(!__builtin_mul_overflow(numel, n, &numel), where << " is too large");
      e.shape.push_back(n);
    }
    ZRT_CHECK(offsets->kind == JsonValue::Kind::Array && offsets->items.size() == 2,
              where << ": data_offsets is not [begin, end]");
    e.begin = wholeNumber(offsets->items[0], where + ": begin");
    e.end = wholeNumber(offsets->items[1], where + ": end");
    int64_t bytes;
    ZRT_CHECK(!__builtin_mul_overflow(numel, dtypeSize(e.dtype), &bytes) &&
                  e.begin <= e.end && e.end <= dataBytes && e.end - e.begin == bytes,
              where << ": bytes [" << e.begin << ", " << e.end
                    << ") are not its shape's size or lie outside the file's "
                    << dataBytes << " bytes of data");
    byOffset.emplace_back(name, &(entries_[name] = std::move(e)));
  }
  std::sort(byOffset.begin(), byOffset.end(), [](const auto &a, const auto &b) {
    return std::make_pair(a.second->begin, a.second->end) <
           std::make_pair(b.second->begin, b.second->end);
  });
  int64_t covered = 0;
  std::string previous;
  for (const auto &[name, e] : byOffset) {
    ZRT_CHECK(e->begin >= covered,
              path << ": tensor '" << name << "' (bytes [" << e->begin << ", " << e->end
                   << ")) overlaps tensor '" << previous << "', which ends at " << covered
                   << ": each tensor's bytes are its own");
    ZRT_CHECK(e->begin == covered,
              path << ": bytes [" << covered << ", " << e->begin << ") of the data belong to "
                   << "no tensor (a hole before tensor '" << name << "')");
    covered = e->end;
    previous = name;
  }
  ZRT_CHECK(covered == dataBytes,
            path << ": the last " << (dataBytes - covered) << " of its " << dataBytes
                 << " bytes of data belong to no tensor (the format allows nothing after "
                 << "the last tensor's bytes)");
}

const SafetensorsEntry *SafetensorsFile::find(const std::string &name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<char> SafetensorsFile::read(const std::string &name) const {
  const SafetensorsEntry *e = find(name);
  ZRT_CHECK(e, path_ << " has no tensor '" << name << "'");
  InputFile file(path_, "safetensors file", INT64_MAX);
  ZRT_CHECK(file.size() >= dataStart_ + e->end, path_ << " changed while it was read");
  std::vector<char> bytes(e->end - e->begin);
  readAt(file.fd(), bytes.data(), bytes.size(), dataStart_ + e->begin, path_);
  return bytes;
}

void SafetensorsFile::readRuns(const std::string &name, int64_t offset, int64_t runBytes,
                               int64_t strideBytes, int64_t rows, char *out) const {
  const SafetensorsEntry *e = find(name);
  ZRT_CHECK(e, path_ << " has no tensor '" << name << "'");
  int64_t size = e->end - e->begin;
  ZRT_CHECK(rows >= 0 && runBytes >= 0 && offset >= 0 &&
                (rows == 0 || (offset <= size && runBytes <= size - offset &&
                               (rows == 1 || (strideBytes >= 0 &&
                                              (size - offset - runBytes) / std::max<int64_t>(strideBytes, 1) >=
                                                  rows - 1)))),
            path_ << ": bytes asked of tensor '" << name << "' lie outside it");
  InputFile file(path_, "safetensors file", INT64_MAX);
  ZRT_CHECK(file.size() >= dataStart_ + e->end, path_ << " changed while it was read");
  for (int64_t r = 0; r < rows; ++r)
    readAt(file.fd(), out + r * runBytes, runBytes, dataStart_ + e->begin + offset + r * strideBytes,
           path_);
}

std::string zrt::safetensorsHeader(const std::vector<std::string> &names,
                                   const std::vector<DType> &dtypes,
                                   const std::vector<std::vector<int64_t>> &shapes,
                                   const std::map<std::string, std::string> &metadata) {
  std::string json = "{\"__metadata__\": {";
  bool first = true;
  for (const auto &[k, v] : metadata) {
    json += (first ? "" : ", ") + jsonString(k) + ": " + jsonString(v);
    first = false;
  }
  json += "}";
  int64_t offset = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const char *dtype = nameOf(dtypes[k]);
    ZRT_CHECK(dtype, "tensor '" << names[k] << "' has a dtype safetensors has no name for");
    int64_t bytes = dtypeSize(dtypes[k]);
    json += ", " + jsonString(names[k]) + ": {\"dtype\": \"" + dtype + "\", \"shape\": [";
    for (size_t i = 0; i < shapes[k].size(); ++i) {
      json += (i ? ", " : "") + std::to_string(shapes[k][i]);
      bytes *= shapes[k][i];
    }
    json += "], \"data_offsets\": [" + std::to_string(offset) + ", " +
            std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' '); // the data starts 8-byte aligned
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += (char)((uint64_t)json.size() >> (8 * i) & 0xff);
  return out + json;
}

void zrt::writeSafetensors(const std::string &path, const std::vector<NamedTensor> &tensors,
                           const std::map<std::string, std::string> &metadata) {
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto &t : tensors) {
    names.push_back(t.name);
    dtypes.push_back(t.view.dtype);
    shapes.push_back(t.view.shape);
  }
  AtomicFile file(path);
  file.write(safetensorsHeader(names, dtypes, shapes, metadata));
  for (const auto &t : tensors)
    file.write(t.view.data, t.view.bytes());
  file.commit();
}
