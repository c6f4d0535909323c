//===- TorchWeights.h - Weights by PyTorch name, in safetensors -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A Hugging Face checkpoint (what save_pretrained writes) names its tensors as the
// model's state_dict does; the exported ONNX model may hold some of them under
// other names (a Linear's weight the exporter folded into a transposed `val_N`; a
// tied weight under the other module's name). zrt/TorchNames.h says which.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TORCHWEIGHTS_H
#define ZRT_TORCHWEIGHTS_H

#include "zrt/Executor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace zrt {

/// Writes the plan's parameters to `path` as a safetensors file under their PyTorch
/// names (each tied name; folded weights transposed back), so that
/// `model.load_state_dict(safetensors.torch.load_file(path))` takes it as it is.
/// Initializers that are not parameters (lifted constants, buffers) are left out
/// where the model's graph signature says which are. Every rank must call it;
/// rank 0 writes. Throws, before anything is gathered, for a parameter with no
/// PyTorch name it could be written under.
void saveSafetensorsByName(const onnx::ModelProto &model, Executor &exec,
                           const std::string &path);

} // namespace zrt

#endif // ZRT_TORCHWEIGHTS_H
