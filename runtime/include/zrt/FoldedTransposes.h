//===- FoldedTransposes.h - Weights the TorchScript exporter transposed -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The TorchScript exporter (dynamo=False) folds constants by default: a
// Linear's Transpose(weight) becomes a new initializer `onnx::MatMul_N` holding
// the transposed values, with no record of where it came from. Trained as it is,
// such a copy is a tensor of its own: a tied weight (GPT-2's embedding, read
// again transposed by the output layer) would train as two. An anonymous
// initializer that is, bit for bit, a named 2-D initializer transposed is read
// as Transpose(named) instead: the graph that do_constant_folding=False writes.
// The compiler reads a model so, and so do zero-run's weights (--init,
// --save-weights, --consolidate), so that a written model never holds a stale
// copy of a trained weight.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_FOLDEDTRANSPOSES_H
#define ZRT_FOLDEDTRANSPOSES_H

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

namespace zrt {

struct TransposedCopies {
  /// Copy's name -> the named weight it is transposed from.
  std::map<std::string, std::string> sourceOf;
  /// Anonymous initializers (`onnx::...`) that are no named weight transposed: a
  /// copy whose source the exporter dropped (it had no other use), or one with
  /// two equal candidates. They train under their own names.
  std::vector<std::string> unmatched;
};

/// Replaces each initializer the TorchScript exporter's constant folding made
/// from a named 2-D f32 weight by a Transpose node reading the weight (ahead of
/// every use). External data is read from `modelDir`; throws zrt::Error when it
/// cannot be read.
TransposedCopies unfoldTransposedCopies(onnx::ModelProto &model, const std::string &modelDir);

} // namespace zrt

#endif // ZRT_FOLDEDTRANSPOSES_H
