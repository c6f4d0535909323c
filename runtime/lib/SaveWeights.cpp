//===- SaveWeights.cpp - Write trained parameters back as ONNX ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/SaveWeights.h"
#include "zrt/AtomicFile.h"
#include "zrt/Error.h"
#include "zrt/ExternalData.h"
#include "zrt/OnnxTensors.h"

#include <map>

using namespace zrt;

void zrt::saveWeights(const onnx::ModelProto &model, const std::string &modelDir,
                      Executor &exec, const std::string &path) {
  onnx::ModelProto out = model;
  std::map<std::string, onnx::TensorProto *> inits;
  for (auto &init : *out.mutable_graph()->mutable_initializer())
    inits[init.name()] = &init;
  // Every rank takes part in the gathers; only rank 0 writes.
  for (const std::string &name : exec.parameterNames()) {
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<char> bytes = exec.gatherParameter(name, dtype, shape);
    auto it = inits.find(name);
    if (exec.comm().rank() != 0 || it == inits.end())
      continue;
    *it->second = tensorFromView(TensorView{bytes.data(), dtype, shape}, name);
  }
  if (exec.comm().rank() != 0)
    return;
  // The rest (constants, buffers) keep their values; those the model kept in
  // external data are read now, so that the file stands on its own wherever it
  // is written.
  for (auto &init : *out.mutable_graph()->mutable_initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    std::string raw = readExternalData(init, modelDir, "initializer '" + init.name() + "'");
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    init.set_raw_data(std::move(raw));
  }
  std::string bytes;
  ZRT_CHECK(out.SerializeToString(&bytes), "cannot serialize the trained model for '"
                                               << path << "' (over 2 GiB? protobuf's limit)");
  // Whole or not at all: a failed save leaves the previous file as it was.
  writeFileAtomically(path, bytes);
}
