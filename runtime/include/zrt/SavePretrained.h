//===- SavePretrained.h - Trained weights as save_pretrained writes them -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// --save-pretrained DIR: a folder Hugging Face's from_pretrained loads as it is.
// config.json (and generation_config.json) copied from the checkpoint the run
// started from; the parameters by PyTorch name (zrt/TorchNames.h: folded weights
// transposed back, tied weights under each name) in safetensors shards with
// model.safetensors.index.json, in a chosen dtype. Nothing is gathered: every
// rank converts and writes the elements it owns (Executor::ownedPart) into the
// shard files rank 0 laid out, so writing costs each rank one slice of one
// tensor beyond its arena. The ranks must see the same folder (one machine, or a
// shared file system); a rank that cannot see rank 0's files says so.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_SAVEPRETRAINED_H
#define ZRT_SAVEPRETRAINED_H

#include "zrt/Executor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace zrt {

struct SavePretrainedOptions {
  std::string dir;
  /// Where config.json is (the --init checkpoint's folder).
  std::string configFolder;
  DType dtype = zero::zplan::BF16;
  /// A shard holds at most this many bytes of tensors (save_pretrained's
  /// max_shard_size), unless one tensor alone is larger.
  int64_t maxShardBytes = int64_t(5) << 30;
  bool quiet = false;
};

struct SavePretrainedResult {
  int64_t tensors = 0, shards = 0;
  /// All the files' tensor bytes, and those this rank wrote.
  int64_t totalBytes = 0, bytes = 0;
  /// The largest staging buffer this rank used (one tensor's slice, converted).
  int64_t stagingBytes = 0;
  double seconds = 0;
};

/// Writes the plan's trained parameters to `o.dir` (created if absent). Every
/// rank must call it. Throws, on every rank, before anything is renamed into
/// place when any rank fails; the folder's earlier files stay as they were
/// until each new file is whole.
SavePretrainedResult savePretrained(const onnx::ModelProto &model, Executor &exec,
                                    const SavePretrainedOptions &o);

} // namespace zrt

#endif // ZRT_SAVEPRETRAINED_H
