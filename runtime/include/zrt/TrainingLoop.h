//===- TrainingLoop.h - zero-run's training steps ---------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What one rank does with a bound plan: train on --data for --steps (batches,
// the learning rate, loss scaling, checks, logs, checkpoints, saved weights), or
// run it once on --inputs.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_TRAININGLOOP_H
#define ZRT_TRAININGLOOP_H

#include "zrt/Executor.h"
#include "zrt/RunOptions.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <string>

namespace zrt {

class PretrainedWeights;

/// Trains the executor's plan on o.data; `model` is the --init model (for saved
/// weights), `pretrained` the --init checkpoint (--save-pretrained's config and
/// dtype) or null, `memoryBefore` the device memory in use before the run's own.
int runTraining(const RunOptions &o, Executor &exec, const onnx::ModelProto *model,
                const PretrainedWeights *pretrained, int64_t memoryBefore);

/// One run of the plan on o.inputs, printing or saving its outputs.
int runOnInputs(const RunOptions &o, Executor &exec);

/// The trace file of `rank`: FILE for rank 0, FILE.rankN for the others.
std::string traceFile(const std::string &path, int rank);

} // namespace zrt

#endif // ZRT_TRAININGLOOP_H
