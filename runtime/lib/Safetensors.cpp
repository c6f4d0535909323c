//===- Safetensors.cpp - Hugging Face's weight files ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Safetensors.h"
#include "zrt/AtomicFile.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

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

std::string jsonString(const std::string &s) {
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

void readAt(int fd, char *out, int64_t bytes, int64_t offset, const std::string &path) {
  while (bytes > 0) {
    ssize_t n = ::pread(fd, out, bytes, offset);
    ZRT_CHECK(n > 0, path << ": cannot read " << bytes << " bytes at offset " << offset);
    out += n;
    bytes -= n;
    offset += n;
  }
}

/// A JSON number that is a non-negative integer below 2^53 (exact in a double).
int64_t wholeNumber(const google::protobuf::Value &v, const std::string &where) {
  double d = v.number_value();
  ZRT_CHECK(v.kind_case() == google::protobuf::Value::kNumberValue && d >= 0 &&
                d < 9007199254740992.0 && std::floor(d) == d,
            where << " is not a non-negative integer");
  return (int64_t)d;
}

} // namespace

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
  std::string nesting = jsonNestingProblem(header);
  ZRT_CHECK(nesting.empty(), path << ": the header " << nesting);
  google::protobuf::Struct json;
  ZRT_CHECK(google::protobuf::util::JsonStringToMessage(header, &json).ok(),
            path << " is not a safetensors file: its header is not a JSON object");
  dataStart_ = 8 + headerBytes;
  int64_t dataBytes = file.size() - dataStart_;
  for (const auto &[name, value] : json.fields()) {
    if (name == "__metadata__")
      continue;
    std::string where = path + ": tensor '" + name + "'";
    ZRT_CHECK(value.kind_case() == google::protobuf::Value::kStructValue,
              where << " is not described by an object");
    const auto &fields = value.struct_value().fields();
    auto dtype = fields.find("dtype"), shape = fields.find("shape"),
         offsets = fields.find("data_offsets");
    ZRT_CHECK(dtype != fields.end() && shape != fields.end() && offsets != fields.end(),
              where << " lacks dtype, shape or data_offsets");
    SafetensorsEntry e;
    for (const auto &d : kDtypes)
      if (dtype->second.string_value() == d.name)
        e.dtype = d.dtype;
    ZRT_CHECK(e.dtype != zero::zplan::DTYPE_INVALID,
              where << " has dtype '" << dtype->second.string_value()
                    << "', which zero-run does not read");
    ZRT_CHECK(shape->second.kind_case() == google::protobuf::Value::kListValue &&
                  shape->second.list_value().values_size() <= 64,
              where << ": shape is not a list of at most 64 dimensions");
    int64_t numel = 1;
    for (const auto &d : shape->second.list_value().values()) {
      int64_t n = wholeNumber(d, where + ": a dimension");
      ZRT_CHECK(!__builtin_mul_overflow(numel, n, &numel), where << " is too large");
      e.shape.push_back(n);
    }
    ZRT_CHECK(offsets->second.kind_case() == google::protobuf::Value::kListValue &&
                  offsets->second.list_value().values_size() == 2,
              where << ": data_offsets is not [begin, end]");
    e.begin = wholeNumber(offsets->second.list_value().values(0), where + ": begin");
    e.end = wholeNumber(offsets->second.list_value().values(1), where + ": end");
    int64_t bytes;
    ZRT_CHECK(!__builtin_mul_overflow(numel, dtypeSize(e.dtype), &bytes) &&
                  e.begin <= e.end && e.end <= dataBytes && e.end - e.begin == bytes,
              where << ": bytes [" << e.begin << ", " << e.end
                    << ") are not its shape's size or lie outside the file's "
                    << dataBytes << " bytes of data");
    entries_[name] = std::move(e);
  }
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
