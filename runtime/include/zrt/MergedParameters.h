//===- MergedParameters.h - Parameters the exporter merged by value -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The torch.export-based exporter's optimizer replaces initializers of equal
// value by one: a freshly initialized model's LayerNorm weights (all ones) and
// zero biases become one tensor read by every module. PyTorch trains them apart,
// so training the survivor for all of them is another model. The exporter keeps
// each node's FX node (`pkg.torch.onnx.fx_node` metadata), which names the
// parameter placeholder PyTorch read ("%p_h_1_ln_1_weight"): a signature
// parameter with no initializer whose placeholder an FX node still reads was
// merged, and gets its own initializer back (a copy of the one read in its
// place) in the nodes of that FX node. A tied weight (GPT-2's embedding and
// output layer) is one placeholder in the FX graph too: torch.export reads the
// aliases through one of them, so the other is read by no FX node and stays
// shared, as PyTorch shares it. A zero bias the optimizer dropped (a Gemm that
// lost its C) gets a zero initializer and its place back.
//
// The compiler reads a model so, and so do zero-run's weights (--init,
// --save-weights, --consolidate): both see the same initializers.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_MERGEDPARAMETERS_H
#define ZRT_MERGEDPARAMETERS_H

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

namespace zrt {

/// Gives each parameter the exporter merged into another's initializer its own
/// initializer again (a copy of the shared one: inline bytes or the same external
/// data) and makes the nodes that read it in PyTorch's graph read it; restores
/// dropped zero biases. Returns parameter -> the initializer it had been merged
/// into ("" for a restored bias).
std::map<std::string, std::string> splitMergedParameters(onnx::ModelProto &model);

/// Whether some node's FX node (its `pkg.torch.onnx.fx_node` metadata) reads
/// placeholder `placeholder` ("p_x"). A signature parameter that no FX node reads
/// is an alias torch.export reads through another placeholder (a tied weight).
bool fxGraphReads(const onnx::ModelProto &model, const std::string &placeholder);

} // namespace zrt

#endif // ZRT_MERGEDPARAMETERS_H
