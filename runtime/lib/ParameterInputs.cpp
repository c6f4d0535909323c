//===- ParameterInputs.cpp - Parameters exported as graph inputs ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/ParameterInputs.h"
#include "zrt/OnnxTypes.h"
#include "zrt/TorchNames.h"

#include <set>

using namespace zrt;

std::vector<std::string> zrt::parametersFromInputs(onnx::ModelProto &model) {
  std::vector<std::string> moved;
  std::string error;
  auto params = signatureParameters(model, error);
  if (!params)
    return moved;
  std::set<std::string> targets(params->begin(), params->end()), inits;
  auto *graph = model.mutable_graph();
  for (const auto &t : graph->initializer())
    inits.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (auto &in : *graph->mutable_input()) {
    bool param = targets.count(in.name()) && !inits.count(in.name()) &&
                 in.type().has_tensor_type() &&
                 isFloatOnnxType(in.type().tensor_type().elem_type()) &&
                 in.type().tensor_type().has_shape();
    std::vector<int64_t> dims;
    if (param)
      for (const auto &d : in.type().tensor_type().shape().dim()) {
        param &= d.has_dim_value() && d.dim_value() >= 0;
        dims.push_back(d.dim_value());
      }
    if (!param) {
      *kept.Add() = std::move(in);
      continue;
    }
    onnx::TensorProto *t = graph->add_initializer();
    t->set_name(in.name());
    t->set_data_type(in.type().tensor_type().elem_type());
    for (int64_t d : dims)
      t->add_dims(d);
    // Marked, and its values nowhere: reading them is an error that says why.
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto *mark = t->add_external_data();
    mark->set_key(kNoValuesKey);
    mark->set_value("exported without its weights");
    moved.push_back(in.name());
  }
  graph->mutable_input()->Swap(&kept);
  return moved;
}

bool zrt::hasNoValues(const onnx::TensorProto &t) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return false;
  for (const auto &kv : t.external_data())
    if (kv.key() == kNoValuesKey)
      return true;
  return false;
}
