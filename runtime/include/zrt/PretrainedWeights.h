//===- PretrainedWeights.h - A save_pretrained checkpoint, read by range -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What save_pretrained writes: a folder with model.safetensors, or shards named
// by model.safetensors.index.json (`weight_map`: tensor -> file), by PyTorch
// name, in the model's dtype (bf16, f16 or f32). zero-run reads it as the
// parameters' values (--init): each rank reads only the byte ranges of its own
// slices, converting to the plan's dtype as it reads, so no rank holds the model
// or a tensor it does not own. Which initializer holds which PyTorch tensor (a
// folded Linear weight transposed, a tied weight under the other name) is
// zrt/TorchNames.h's.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_PRETRAINEDWEIGHTS_H
#define ZRT_PRETRAINEDWEIGHTS_H

#include "zrt/Safetensors.h"
#include "zrt/Tensor.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zrt {

/// Where parameters' values come from instead of the model's initializers.
class ParameterSource {
public:
  virtual ~ParameterSource() = default;
  /// Fills elements [first, first + count) of parameter `name` (the initializer's
  /// name; shape `shape`, flattened) as `dtype` at `out`; false when the source
  /// does not hold it (the initializer's own value is used).
  virtual bool fill(const std::string &name, const std::vector<int64_t> &shape, DType dtype,
                    int64_t first, int64_t count, char *out) const = 0;
};

class PretrainedWeights : public ParameterSource {
public:
  /// Opens the checkpoint named by `paths`: one folder (its
  /// model.safetensors.index.json, else its model.safetensors), one index file,
  /// or safetensors files. Every file's header is read and checked; no tensor
  /// data is. Throws naming the problem (a shard the index names that is missing
  /// or not beside it, a tensor in two files, one the index puts in a file that
  /// lacks it).
  explicit PretrainedWeights(const std::vector<std::string> &paths);

  /// Matches the checkpoint's tensors to `model`'s float initializers by PyTorch
  /// name, from headers only: throws naming each parameter the checkpoint lacks or
  /// holds in another shape (every parameter of the graph signature or, without
  /// one, every name in `trained`). Returns how many initializers it will fill.
  int64_t bind(const onnx::ModelProto &model, const std::vector<std::string> &trained);

  bool fill(const std::string &name, const std::vector<int64_t> &shape, DType dtype,
            int64_t first, int64_t count, char *out) const override;

  /// The checkpoint's tensors no initializer takes (after bind).
  int64_t unused() const { return unused_; }
  /// Where its config.json would be: the folder of its files.
  const std::string &folder() const { return folder_; }
  /// "DIR (4 safetensors files, bf16)".
  std::string describe() const;
  /// The float dtype most of its elements have (what --save-pretrained writes by
  /// default).
  DType dtype() const { return dtype_; }
  /// A fingerprint of the checkpoint the ranks compare before they start: every
  /// header and size, and a sample of each file's bytes (reading it all on every
  /// rank would cost each the whole model's reading).
  uint64_t fingerprint() const;

private:
  struct Binding {
    const SafetensorsFile *file;
    std::string tensor;
    bool transposed;
  };
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile *> fileOf_; // tensor -> file
  std::map<std::string, Binding> bindings_;               // initializer -> tensor
  std::string folder_;
  int64_t unused_ = 0;
  DType dtype_ = zero::zplan::F32;
};

} // namespace zrt

#endif // ZRT_PRETRAINEDWEIGHTS_H
