//===- Consolidate.cpp - One model file from a sharded checkpoint ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Consolidate.h"
#include "zrt/AtomicFile.h"
#include "zrt/CheckpointManifest.h"
#include "zrt/CheckpointReader.h"
#include "zrt/Error.h"
#include "zrt/ModelAsCompiled.h"
#include "zrt/OnnxTensors.h"
#include "zrt/Safetensors.h"
#include "zrt/TorchNames.h"
#include "zplan/PlanFormat.h"

#include <cstring>
#include <map>
#include <vector>

using namespace zrt;

namespace {

int64_t numelOf(const zero::zplan::CheckpointTensor &t) {
  int64_t n = 1;
  for (int64_t d : t.shape())
    n *= d;
  return n;
}

} // namespace

ConsolidateResult zrt::consolidateToSafetensors(const std::string &path,
                                                const std::string &out, bool withState,
                                                const onnx::ModelProto *model) {
  CheckpointReader reader(path);
  const auto &m = reader.manifest();
  // What goes out: each tensor under each of its names, transposed where the name's
  // parameter is the transpose of what the checkpoint holds (zrt/TorchNames.h).
  struct Entry {
    const zero::zplan::CheckpointTensor *tensor;
    std::string name;
    bool transposed;
  };
  std::vector<Entry> entries;
  TorchNameMap map;
  if (model)
    map = torchNames(*model);
  for (const auto &t : m.tensors()) {
    if (t.kind() != "param") {
      if (withState)
        entries.push_back({&t, t.name(), false});
      continue;
    }
    if (!model) {
      entries.push_back({&t, t.name(), false});
      continue;
    }
    auto names = map.names.find(t.name());
    ZRT_CHECK(names != map.names.end(), "the model has no float initializer '"
                                            << t.name() << "' that the checkpoint trained "
                                            << "(another model?)");
    if (map.hasSignature && !map.parameters.count(t.name()))
      continue; // a lifted constant or a buffer: not in the state_dict
    auto unmapped = map.unmapped.find(t.name());
    ZRT_CHECK(unmapped == map.unmapped.end(),
              "initializer '" << t.name() << "' was " << unmapped->second
                              << ", so it has no PyTorch name; consolidate to ONNX instead");
    for (const TorchName &n : names->second) {
      if (&n == &names->second.front() && map.hasSignature &&
          !map.ownNameIsTorch.count(t.name()))
        continue;
      ZRT_CHECK(!n.transposed || t.shape_size() == 2,
                "'" << t.name() << "' is not a matrix to transpose");
      entries.push_back({&t, n.name, n.transposed});
    }
  }
  // The header first: every tensor's place is known from the shapes alone.
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  int64_t offset = 0;
  for (const Entry &e : entries) {
    DType dtype = dtypeFromName(e.tensor->dtype());
    ZRT_CHECK(dtype != zero::zplan::DTYPE_INVALID,
              reader.manifestPath() << ": '" << e.tensor->name() << "' has unknown dtype "
                                    << e.tensor->dtype());
    std::vector<int64_t> shape(e.tensor->shape().begin(), e.tensor->shape().end());
    if (e.transposed)
      std::swap(shape[0], shape[1]);
    names.push_back(e.name);
    dtypes.push_back(dtype);
    shapes.push_back(shape);
    offset += numelOf(*e.tensor) * dtypeSize(dtype);
  }
  AtomicFile file(out);
  file.write(safetensorsHeader(names, dtypes, shapes,
                               {{"format", "pt"},
                                {"step", std::to_string(m.step())},
                                {"zero_stage", std::to_string(m.zero_stage())},
                                {"world_size", std::to_string(m.world_size())},
                                {"precision", m.precision()},
                                {"source", m.model()}}));
  // Then tensor by tensor, each read from whichever rank files hold its parts.
  std::vector<char> data;
  for (const Entry &e : entries) {
    DType dtype = dtypeFromName(e.tensor->dtype());
    int64_t n = numelOf(*e.tensor), size = dtypeSize(dtype);
    data = std::vector<char>(); // freed before the next is allocated: one at a time
    data.resize(n * size);
    reader.read(e.tensor->name(), 0, n, dtype, data.data());
    if (e.transposed) {
      int64_t rows = e.tensor->shape(0), cols = e.tensor->shape(1);
      std::vector<char> t(data.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          std::memcpy(t.data() + (c * rows + r) * size, data.data() + (r * cols + c) * size,
                      size);
      data.swap(t);
    }
    file.write(data.data(), data.size());
  }
  // A damaged checkpoint is an error even where the output does not use it.
  reader.verifyUnread(0, 1);
  file.commit();
  return {(int64_t)entries.size(), offset, m.step()};
}

ConsolidateResult zrt::consolidateToOnnx(const std::string &path, const std::string &model,
                                         const std::string &out) {
  CheckpointReader reader(path);
  const auto &m = reader.manifest();
  onnx::ModelProto proto = readModelAsCompiled(model);
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
