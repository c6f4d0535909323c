//===- CheckpointLayout.h - What a plan's persistent buffers hold -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A checkpoint is read by tensors, not by buffers: every element of a persistent
// buffer (a parameter, its f32 master copy, an optimizer state; whole, or one
// rank's slice of a flat ZeRO bucket) is an element of a named tensor ("wte.weight",
// "wte.weight.exp_avg", "optimizer.step"). Mapping a writer's buffers and a
// reader's buffers onto the same tensors is what lets N ranks at one stage write a
// checkpoint that M ranks at another stage read.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CHECKPOINTLAYOUT_H
#define ZRT_CHECKPOINTLAYOUT_H

#include "checkpoint.pb.h"
#include "zplan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zrt {

/// `count` consecutive elements of a buffer, from element `at`, that are elements
/// `first` .. `first + count - 1` of the row-major tensor `tensor`.
struct TensorPiece {
  std::string tensor;
  int64_t first = 0, count = 0, at = 0;
};

/// The pieces of buffer `b` as rank `rank` of `world` holds it: the whole tensor
/// named after it, or the rank's slice of its bucket (padding belongs to no
/// tensor). Throws zrt::Error for a bucket state whose name is not BUCKET.SUFFIX.
std::vector<TensorPiece> tensorPieces(const zero::zplan::CheckpointBuffer &b, int rank,
                                      int world);

/// True for the buffers a checkpoint keeps: what the step updates and carries.
bool persistentBuffer(const zero::zplan::Buffer &b);

/// A persistent buffer of a plan as the manifest describes it (offset and rank
/// not yet assigned).
zero::zplan::CheckpointBuffer describeBuffer(const zero::zplan::Buffer &b);

/// The checkpoint layout of `plan`: which persistent buffers are stored (16-bit
/// parameters with an f32 master copy are not: resuming rounds the master, as the
/// step does), at which payload offsets, in whose file; the tensors they hold;
/// the model's fingerprint. Fills `m`'s buffers, tensors and model_fingerprint;
/// `planIndex[k]` is the plan buffer of manifest buffer k.
void layoutCheckpoint(const zero::zplan::Plan &plan, zero::zplan::CheckpointManifest &m,
                      std::vector<int> &planIndex);

/// The model's identity in a manifest: FNV-1a 64 of its parameters' names and
/// shapes (the `param` tensors), in name order.
std::string modelFingerprint(
    const google::protobuf::RepeatedPtrField<zero::zplan::CheckpointTensor> &tensors);

/// Payload bytes of rank `rank`'s file under the layout `m`.
int64_t payloadBytes(const zero::zplan::CheckpointManifest &m, int rank);

/// The tensors every persistent buffer of `plan` covers, with their full shapes
/// (16-bit parameters included), for comparing a plan with a checkpoint.
std::vector<zero::zplan::CheckpointTensor> planTensors(const zero::zplan::Plan &plan);

} // namespace zrt

#endif // ZRT_CHECKPOINTLAYOUT_H
