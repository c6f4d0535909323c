//===- FoldedTransposes.cpp - Weights the TorchScript exporter transposed -===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/FoldedTransposes.h"
#include "zrt/Error.h"
#include "zrt/ExternalData.h"

#include <cstring>

using namespace zrt;

namespace {

bool isAnonymous(const onnx::TensorProto &t) { return t.name().rfind("onnx::", 0) == 0; }

bool isFloatMatrix(const onnx::TensorProto &t) {
  return t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() == 2 &&
         t.dims(0) >= 0 && t.dims(1) >= 0;
}

/// The f32 values of `t` as bit patterns (inline, typed or external data); the
/// stored size is checked against the shape before anything is allocated.
std::vector<uint32_t> floatBits(const onnx::TensorProto &t, const std::string &modelDir) {
  int64_t n = 0;
  ZRT_CHECK(!__builtin_mul_overflow(t.dims(0), t.dims(1), &n) && n <= (INT64_C(1) << 40),
            "initializer '" << t.name() << "' has too many elements");
  std::string external;
  const std::string *raw = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    external = readExternalData(t, modelDir, "initializer '" + t.name() + "'");
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  int64_t stored = raw ? (int64_t)raw->size() : (int64_t)t.float_data_size() * 4;
  ZRT_CHECK(stored == n * 4, "initializer '" << t.name() << "' holds " << stored
                                             << " bytes of data; its shape needs " << n * 4);
  std::vector<uint32_t> bits(n);
  if (n)
    std::memcpy(bits.data(), raw ? raw->data() : (const char *)t.float_data().data(), n * 4);
  return bits;
}

} // namespace

TransposedCopies zrt::unfoldTransposedCopies(onnx::ModelProto &model,
                                             const std::string &modelDir) {
  onnx::GraphProto &g = *model.mutable_graph();
  TransposedCopies result;
  // Values are read once each, and only for shapes that could match.
  std::map<std::string, std::vector<uint32_t>> values;
  auto valuesOf = [&](const onnx::TensorProto &t) -> const std::vector<uint32_t> & {
    auto it = values.find(t.name());
    if (it == values.end())
      it = values.emplace(t.name(), floatBits(t, modelDir)).first;
    return it->second;
  };
  for (const auto &copy : g.initializer()) {
    if (!isAnonymous(copy))
      continue;
    std::vector<std::string> matches;
    if (isFloatMatrix(copy)) {
      int64_t rows = copy.dims(0), cols = copy.dims(1);
      for (const auto &named : g.initializer()) {
        if (isAnonymous(named) || !isFloatMatrix(named) || named.dims(0) != cols ||
            named.dims(1) != rows)
          continue;
        const std::vector<uint32_t> &a = valuesOf(copy), &b = valuesOf(named);
        bool equal = true;
        for (int64_t i = 0; i < rows && equal; ++i)
          for (int64_t j = 0; j < cols && equal; ++j)
            equal = a[i * cols + j] == b[j * rows + i];
        if (equal)
          matches.push_back(named.name());
      }
    }
    // Two named weights with the same values: which one was transposed is not
    // known, so the copy stays as it is.
    if (matches.size() == 1)
      result.sourceOf[copy.name()] = matches[0];
    else
      result.unmatched.push_back(copy.name());
  }
  if (result.sourceOf.empty())
    return result;

  // The copies leave the initializers (and the graph inputs, where an old
  // exporter listed them) and come back as Transpose nodes ahead of every use.
  const auto &sourceOf = result.sourceOf;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto &t : *g.mutable_initializer())
    if (!sourceOf.count(t.name()))
      *kept.Add() = std::move(t);
  g.mutable_initializer()->Swap(&kept);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (auto &in : *g.mutable_input())
    if (!sourceOf.count(in.name()))
      *inputs.Add() = std::move(in);
  g.mutable_input()->Swap(&inputs);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto &[copy, source] : sourceOf) {
    onnx::NodeProto *n = nodes.Add();
    n->set_op_type("Transpose");
    n->set_name(copy);
    n->add_input(source);
    n->add_output(copy);
    onnx::AttributeProto *perm = n->add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto::INTS);
    perm->add_ints(1);
    perm->add_ints(0);
  }
  for (auto &n : *g.mutable_node())
    *nodes.Add() = std::move(n);
  g.mutable_node()->Swap(&nodes);
  return result;
}
