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
