//===- SaveWeights.cpp - Write trained parameters back as ONNX ------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/SaveWeights.h"
#include "zrt/Error.h"
#include "zrt/OnnxTensors.h"

#include <fstream>
#include <map>

using namespace zrt;

void zrt::saveWeights(const onnx::ModelProto &model, const Executor &exec,
                      const std::string &path) {
  onnx::ModelProto out = model;
  std::map<std::string, int> paramBuffer;
  for (int i = 0; i < exec.plan().buffers_size(); ++i)
    if (exec.plan().buffers(i).role() == zero::zplan::PARAM)
      paramBuffer[exec.plan().buffers(i).name()] = i;
  for (auto &init : *out.mutable_graph()->mutable_initializer()) {
    auto it = paramBuffer.find(init.name());
    if (it == paramBuffer.end())
      continue;
    init = tensorFromView(exec.buffer(it->second), init.name());
  }
  std::ofstream f(path, std::ios::binary);
  ZRT_CHECK(f && out.SerializeToOstream(&f), "cannot write '" << path << "'");
}
