//===- TorchWeights.cpp - Weights by PyTorch name, in safetensors ---------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/TorchWeights.h"
#include "zrt/Error.h"
#include "zrt/OnnxTensors.h"
#include "zrt/Safetensors.h"
#include "zrt/TorchNames.h"

#include <set>

using namespace zrt;

namespace {

std::string describeShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// `src` (dtype `from`, shape [r, c] when `transpose`) as dtype `to`, transposed
/// when asked.
std::vector<char> convert(const std::vector<char> &src, DType from, DType to,
                          const std::vector<int64_t> &srcShape, bool transpose) {
  int64_t n = (int64_t)src.size() / dtypeSize(from), in = dtypeSize(from),
          out = dtypeSize(to);
  std::vector<char> dst(n * out);
  int64_t rows = transpose ? srcShape[0] : 1, cols = transpose ? srcShape[1] : n;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t s = r * cols + c, d = transpose ? c * rows + r : s;
      storeFloatValue(dst.data() + d * out, to, floatValue(src.data() + s * in, from));
    }
  return dst;
}

} // namespace

int64_t zrt::loadSafetensorsByName(onnx::ModelProto &model, const std::string &path,
                                   const std::vector<std::string> &trained, int64_t &unused) {
  SafetensorsFile file(path);
  TorchNameMap map = torchNames(model);
  // The parameters the file must hold: the exporter's graph signature names them
  // where it is there (the plan may train lifted constants no state_dict has);
  // otherwise every initializer the plan trains.
  std::set<std::string> mustHave = map.hasSignature
                                       ? map.parameters
                                       : std::set<std::string>(trained.begin(), trained.end());
  std::set<std::string> used;
  std::vector<std::string> missing;
  int64_t replaced = 0;
  for (auto &init : *model.mutable_graph()->mutable_initializer()) {
    auto names = map.names.find(init.name());
    if (names == map.names.end())
      continue; // not a float initializer
    const TorchName *match = nullptr;
    const SafetensorsEntry *entry = nullptr;
    for (const TorchName &n : names->second)
      if ((entry = file.find(n.name))) {
        match = &n;
        break;
      }
    if (!entry) {
      // Not under its own name either: one folded in another way has no other.
      auto unmapped = map.unmapped.find(init.name());
      ZRT_CHECK(unmapped == map.unmapped.end(),
                "initializer '" << init.name() << "' was " << unmapped->second
                                << " (the exporter's optimizer computed it from the "
                                   "export's weights), so it cannot be read from "
                                << path << " by name; export with optimize=False");
      if (mustHave.count(init.name()))
        missing.push_back(names->second.back().name);
      continue;
    }
    DType to = dtypeFromOnnx(init.data_type());
    ZRT_CHECK(isFloatDtype(entry->dtype) && isFloatDtype(to),
              path << ": '" << match->name << "' is " << dtypeName(entry->dtype)
                   << ", initializer '" << init.name() << "' "
                   << (isFloatDtype(to) ? "is a float" : "is not a float"));
    std::vector<int64_t> want(init.dims().begin(), init.dims().end());
    if (match->transposed)
      std::swap(want[0], want[1]);
    ZRT_CHECK(entry->shape == want,
              path << ": '" << match->name << "' has shape " << describeShape(entry->shape)
                   << "; initializer '" << init.name() << "' needs "
                   << describeShape(want) << (match->transposed ? " (it holds it transposed)" : ""));
    std::vector<char> bytes =
        convert(file.read(match->name), entry->dtype, to, entry->shape, match->transposed);
    init.clear_external_data();
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    init.set_raw_data(bytes.data(), bytes.size());
    used.insert(match->name);
    ++replaced;
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t k = 0; k < missing.size() && k < 5; ++k)
      list += (k ? ", '" : "'") + missing[k] + "'";
    ZRT_FAIL(path << " has no tensor for " << missing.size() << " of the model's "
                  << "parameters: " << list << (missing.size() > 5 ? ", ..." : ""));
  }
  // A tied parameter is in the file once, under either name.
  std::set<std::string> known;
  for (const auto &[init, names] : map.names)
    if (std::any_of(names.begin(), names.end(),
                    [&](const TorchName &n) { return used.count(n.name); }))
      for (const TorchName &n : names)
        known.insert(n.name);
  unused = 0;
  for (const auto &[name, e] : file.entries())
    unused += !known.count(name);
  return replaced;
}

void zrt::saveSafetensorsByName(const onnx::ModelProto &model, Executor &exec,
                                const std::string &path) {
  TorchNameMap map = torchNames(model);
  std::vector<std::string> names;
  for (const std::string &name : exec.parameterNames()) {
    if (map.hasSignature && !map.parameters.count(name))
      continue; // a lifted constant or a buffer: not in the state_dict
    auto unmapped = map.unmapped.find(name);
    ZRT_CHECK(unmapped == map.unmapped.end(),
              "--save-weights " << path << ": initializer '" << name << "' was "
                                << unmapped->second
                                << ", so it has no PyTorch name to be written under; "
                                   "write ONNX (--save-weights X.onnx) instead");
    names.push_back(name);
  }
  std::vector<std::vector<char>> storage;
  std::vector<NamedTensor> tensors;
  storage.reserve(4 * names.size());
  for (const std::string &name : names) {
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<char> bytes = exec.gatherParameter(name, dtype, shape);
    if (exec.comm().rank() != 0)
      continue;
    const auto &torch = map.names.at(name);
    for (const TorchName &n : torch) {
      // Its own ONNX name (the first) only where that is a PyTorch name too.
      if (&n == &torch.front() && map.hasSignature && !map.ownNameIsTorch.count(name))
        continue;
      std::vector<int64_t> outShape = shape;
      if (n.transposed)
        std::swap(outShape[0], outShape[1]);
      storage.push_back(n.transposed
                            ? convert(bytes, dtype, dtype, shape, /*transpose=*/true)
                            : bytes);
      tensors.push_back({n.name, TensorView{storage.back().data(), dtype, outShape}});
    }
  }
  if (exec.comm().rank() != 0)
    return;
  writeSafetensors(path, tensors, {{"format", "pt"}});
}
