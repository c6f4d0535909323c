//===- CudnnSdpaReference.cpp - cudnn-frontend's SDPA graphs, as a check ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// cuDNN's fused attention engines take a graph only in the form cudnn-frontend
// builds; a graph that differs (a virtual tensor of another type) finds no engine
// on a GPU, and the attention falls back to the project's kernels. The emulator's
// heuristic checks the same: each matmul's operands, their data types and whether
// they are virtual, against what the frontend builds. Written from cudnn-frontend's
// include/cudnn_frontend/node/scaled_dot_product_flash_attention.h (SDPANode and
// SDPABackwardNode, build functions; commit 3929da2): virtual tensors without a
// data type take the graph's intermediate type (float: Tensor_attributes::
// fill_from_context in include/cudnn_frontend/graph_properties.h), and the frontend
// sets the 16-bit I/O type on P (forward), on Pᵀ and dSᵀ (reshape_p, reshape_dS)
// and on a grouped head's dV and dK before their reductions; reshape_k (K read as
// [b, h, s_kv, d] for dQ = dS·K) has none, so it is float.
//
//===----------------------------------------------------------------------===//

#include "CudnnGraph.h"

#include <string>
#include <vector>

using namespace zero_cuda_emulator::detail;

namespace {

/// "h" 16-bit, "f" float, "?" another type; then "v" virtual or "n" given.
std::string operand(const Tensor &t) {
  std::string type = t.type == CUDNN_DATA_HALF || t.type == CUDNN_DATA_BFLOAT16 ? "h"
                     : t.type == CUDNN_DATA_FLOAT                                ? "f"
                                                                                 : "?";
  return type + (t.isVirtual ? "v" : "n");
}

std::string signature(const Op &op) {
  return operand(op.ins[0]) + " " + operand(op.ins[1]) + " -> " + operand(op.out);
}

/// One matmul of the frontend's graph: its name there and the signatures it may
/// have (alternatives: grouped heads, the dP-workspace variant).
struct Reference {
  const char *name;
  std::vector<const char *> signatures;
};

// SDPANode: S = Q·Kᵀ (float, virtual), O = P·V with P in the I/O type.
const std::vector<Reference> kForward = {
    {"matmul_Q_KT", {"hn hn -> fv"}},
    {"matmul_P_V", {"hv hn -> hn"}},
};

// SDPABackwardNode: dQ accumulates in float (dQ_accum, given) unless the dP
// workspace is used (dQ written directly); grouped heads' dV and dK full-head
// products are virtual, in the I/O type.
const std::vector<Reference> kBackward = {
    {"matmul_Q_KT", {"hn hn -> fv"}},
    {"matmul_pT_dO", {"hv hn -> hn", "hv hn -> hv"}},
    {"matmul_dO_VT", {"hn hn -> fv"}},
    {"matmul_dST_Q", {"hv hn -> hn", "hv hn -> hv"}},
    {"matmul_dS_K", {"fv fv -> fn", "fv fv -> hn"}},
};

} // namespace

std::string zero_cuda_emulator::detail::sdpaReferenceMismatch(const Graph &g) {
  std::vector<const Op *> matmuls;
  for (const Op &op : g.ops)
    if (op.kind == OpKind::Matmul)
      matmuls.push_back(&op);
  // An attention: Q·Kᵀ first, of two given 16-bit tensors into a float score.
  if (matmuls.size() < 2 || signature(*matmuls[0]) != "hn hn -> fv")
    return "";
  const std::vector<Reference> &ref = matmuls.size() == kForward.size() ? kForward : kBackward;
  if (matmuls.size() != ref.size())
    return "an attention graph of " + std::to_string(matmuls.size()) +
           " matmuls: cudnn-frontend's SDPA has " + std::to_string(kForward.size()) +
           " (forward) or " + std::to_string(kBackward.size()) + " (backward)";
  for (size_t i = 0; i < ref.size(); ++i) {
    std::string have = signature(*matmuls[i]);
    bool found = false;
    for (const char *s : ref[i].signatures)
      found = found || have == s;
    if (!found) {
      std::string want;
      for (const char *s : ref[i].signatures)
        want += (want.empty() ? "" : " or ") + std::string(s);
      return std::string("matmul ") + std::to_string(i + 1) + " (cudnn-frontend's " +
             ref[i].name + ") has operands " + have + "; the frontend's are " + want +
             " (h: 16-bit, f: float; v: virtual, n: given)";
    }
  }
  return "";
}
