//===- CheckpointManifest.h - A checkpoint's manifest, checked -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// manifest.json is the one file that says what a checkpoint's bytes are: which
// tensor every element belongs to, at which offset of which rank file, with which
// checksum, and where the run stood (step, samples, loss scale). Nothing in it is
// trusted as written. Its text carries its own checksum, and every value is checked
// against the manifest's invariants before any rank file is opened: buffers packed
// in the writer's order inside their files, every element of every tensor held
// exactly once, counters in range. What it must agree with in a plan is checked by
// the reader of that plan (zrt/Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_CHECKPOINTMANIFEST_H
#define ZRT_CHECKPOINTMANIFEST_H

#include "zrt/Tensor.h"

#include "checkpoint.pb.h"

#include <cstdint>
#include <string>

namespace zrt {

/// The checkpoint format version this runtime writes and reads (3: the manifest's
/// checksum).
inline constexpr uint32_t kCheckpointFormat = 3;
inline constexpr char kCheckpointMagic[8] = {'Z', 'E', 'R', 'O', 'C', 'K', 'P', 'T'};
/// The most ranks a checkpoint can have been written by, and the most samples a
/// run can have consumed (exact in a double; far beyond any run).
inline constexpr int kMaxCheckpointRanks = 65536;
inline constexpr int64_t kMaxSamples = int64_t(1) << 53;

/// manifest.json's text for `m`: protobuf's JSON form with `manifest_checksum`
/// set to the FNV-1a 64 of that text with its digits written as '0's.
std::string encodeManifest(zero::zplan::CheckpointManifest m);

/// Parses manifest.json's `text` (read from `path`, named in messages), verifies
/// its checksum and checks every invariant (checkManifest). Throws zrt::Error.
zero::zplan::CheckpointManifest decodeManifest(const std::string &text,
                                               const std::string &path);

/// Every invariant of a manifest, checksum aside: format version; world size, ZeRO
/// stage, accumulation, precision, chunk size; step <= samples <= kMaxSamples and
/// the schedule and loss scaler within them (a finite, positive scale); each
/// buffer's dtype, shape and bytes, bucket layout and file; buffers packed from
/// offset 0 of their file in the writer's order, without gaps or overlap; each rank
/// file's name, size and chunk checksums; every tensor covered exactly once, in its
/// dtype; the model fingerprint of the tensors listed. Throws zrt::Error naming
/// `path` and the value.
void checkManifest(const zero::zplan::CheckpointManifest &m, const std::string &path);

/// A dtype's name as the manifest writes it ("f32"), back; DTYPE_INVALID if none.
DType dtypeFromName(const std::string &name);

} // namespace zrt

#endif // ZRT_CHECKPOINTMANIFEST_H
