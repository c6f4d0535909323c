//===- Consolidate.cpp - One model file from a sharded checkpoint ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Consolidate.h"
#include "zrt/AtomicFile.h"
#include "zrt/CheckpointReader.h"
#include "zrt/Error.h"
#include "zrt/OnnxTensors.h"
#include "zplan/PlanFormat.h"

#include <map>
#include <vector>

using namespace zrt;

namespace {

const char *safetensorsDtype(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return "F32";
  case zero::zplan::F64:
    return "F64";
  case zero::zplan::BF16:
    return "BF16";
  case zero::zplan::F16:
    return "F16";
  case zero::zplan::I64:
    return "I64";
  case zero::zplan::I32:
    return "I32";
  case zero::zplan::I8:
    return "I8";
  case zero::zplan::U8:
    return "U8";
  default:
    return "BOOL";
  }
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

int64_t numelOf(const zero::zplan::CheckpointTensor &t) {
  int64_t n = 1;
  for (int64_t d : t.shape())
    n *= d;
  return n;
}

} // namespace

ConsolidateResult zrt::consolidateToSafetensors(const std::string &path,
                                                const std::string &out, bool withState) {
  CheckpointReader reader(path);
  const auto &m = reader.manifest();
  std::vector<const zero::zplan::CheckpointTensor *> tensors;
  for (const auto &t : m.tensors())
    if (t.kind() == "param" || withState)
      tensors.push_back(&t);
  // The header first: every tensor's place is known from the shapes alone.
  std::string header = "{\"__metadata__\": {\"format\": \"pt\", \"step\": " +
                       jsonString(std::to_string(m.step())) +
                       ", \"zero_stage\": " + jsonString(std::to_string(m.zero_stage())) +
                       ", \"world_size\": " + jsonString(std::to_string(m.world_size())) +
                       ", \"precision\": " + jsonString(m.precision()) +
                       ", \"source\": " + jsonString(m.model()) + "}";
  int64_t offset = 0;
  for (const auto *t : tensors) {
    DType dtype = dtypeFromName(t->dtype());
    ZRT_CHECK(dtype != zero::zplan::DTYPE_INVALID,
              reader.manifestPath() << ": '" << t->name() << "' has unknown dtype "
                                    << t->dtype());
    int64_t bytes = numelOf(*t) * dtypeSize(dtype);
    header += ", " + jsonString(t->name()) + ": {\"dtype\": \"" + safetensorsDtype(dtype) +
              "\", \"shape\": [";
    for (int i = 0; i < t->shape_size(); ++i)
      header += (i ? ", " : "") + std::to_string(t->shape(i));
    header += "], \"data_offsets\": [" + std::to_string(offset) + ", " +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' '); // the data starts 8-byte aligned
  AtomicFile file(out);
  std::string length;
  putLE(length, header.size(), 8);
  file.write(length);
  file.write(header);
  // Then tensor by tensor, each read from whichever rank files hold its parts.
  std::vector<char> data;
  for (const auto *t : tensors) {
    DType dtype = dtypeFromName(t->dtype());
    data = std::vector<char>(); // freed before the next is allocated: one at a time
    data.resize(numelOf(*t) * dtypeSize(dtype));
    reader.read(t->name(), 0, numelOf(*t), dtype, data.data());
    file.write(data.data(), data.size());
  }
  // A damaged checkpoint is an error even where the output does not use it.
  reader.verifyUnread(0, 1);
  file.commit();
  return {(int64_t)tensors.size(), offset, m.step()};
}

ConsolidateResult zrt::consolidateToOnnx(const std::string &path, const std::string &model,
                                         const std::string &out) {
  CheckpointReader reader(path);
  const auto &m = reader.manifest();
  onnx::ModelProto proto = readOnnxModel(model);
  std::map<std::string, onnx::TensorProto *> inits;
  for (auto &init : *proto.mutable_graph()->mutable_initializer())
    inits[init.name()] = &init;
  // The model must be the one the checkpoint trained: every trained parameter an
  // initializer of the same shape and type, checked before anything is written.
  for (const auto &t : m.tensors()) {
    if (t.kind() != "param")
      continue;
    auto it = inits.find(t.name());
    ZRT_CHECK(it != inits.end(), model << " has no initializer '" << t.name()
                                       << "' that the checkpoint trained (another model?)");
    const onnx::TensorProto &init = *it->second;
    std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    TensorView have{nullptr, dtypeFromOnnx(init.data_type()), dims};
    TensorView want{nullptr, dtypeFromName(t.dtype()), shape};
    ZRT_CHECK(dims == shape && have.dtype == want.dtype,
              model << ": initializer '" << t.name() << "' is " << have.describe()
                    << "; the checkpoint trained it as " << want.describe()
                    << " (another model?)");
  }
  ConsolidateResult r;
  r.step = m.step();
  std::vector<char> data;
  for (const auto &t : m.tensors()) {
    if (t.kind() != "param")
      continue;
    auto it = inits.find(t.name());
    DType dtype = dtypeFromName(t.dtype());
    TensorView v{nullptr, dtype, {t.shape().begin(), t.shape().end()}};
    data.assign(v.bytes(), 0);
    v.data = data.data();
    reader.read(t.name(), 0, v.numel(), dtype, data.data());
    *it->second = tensorFromView(v, t.name());
    r.tensors++;
    r.bytes += v.bytes();
  }
  reader.verifyUnread(0, 1);
  std::string bytes;
  ZRT_CHECK(proto.SerializeToString(&bytes),
            "cannot serialize the model for '" << out << "' (over 2 GiB? protobuf's limit)");
  writeFileAtomically(out, bytes);
  return r;
}
