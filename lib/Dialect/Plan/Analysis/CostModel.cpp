//===- CostModel.cpp - Predicted step time of a plan ----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Plan/Analysis/CostModel.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zplan/AttentionViews.h"
#include "zplan/FusedProgram.h"
#include "zplan/MachineFile.h"
#include "zplan/QuantizedWire.h"
#include "zrt/InputFile.h"
#include "zrt/StrictJson.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace zero;

FailureOr<MachineModel> zero::loadMachineModel(StringRef nameOrPath,
                                               std::string &error) {
  MachineModel m;
  if (nameOrPath == "h100-nvlink") {
    // Published H100 SXM figures: TF32 tensor-core GEMM 495 TFLOP/s and BF16 989
    // (dense),
    // FP32 67 TFLOP/s, HBM3 3.35 TB/s. NCCL rings reach ~360 GB/s of NVLink 4's
    // 450 GB/s per direction inside a node of 8; between nodes one InfiniBand NDR
    // port (400 Gb/s = 50 GB/s) per GPU.
    m.name = "h100-nvlink";
    m.matmulFlops = 495e12;
    m.matmulFlops16 = 989e12; // dense BF16 tensor cores
    m.vectorFlops = 67e12;
    m.memoryBandwidth = 3.35e12;
    m.kernelOverheadS = 4e-6;
    m.alphaS = 5e-6;
    m.betaSPerByte = 1.0 / 360e9;
    m.ranksPerNode = 8;
    m.interAlphaS = 10e-6;
    m.interBetaSPerByte = 1.0 / 50e9;
    // One PCIe 4.0 NVMe drive per GPU (DGX H100: 8 x 3.84 TB U.2): ~6.5 GB/s
    // sequential reads, ~3.5 GB/s writes, as such drives' data sheets give.
    m.nvmeReadBandwidth = 6.5e9;
    m.nvmeWriteBandwidth = 3.5e9;
    return m;
  }
  if (nameOrPath == "cpu") {
    m.name = "cpu";
    return m;
  }
  std::string text, why;
  if (!zrt::readInputFile(nameOrPath.str(), "machine file", zrt::kMaxConfigBytes, text, why)) {
    error = "'" + nameOrPath.str() + "' is neither h100-nvlink, cpu nor a readable "
            "machine file (" + why + ")";
    return failure();
  }
  zrt::JsonValue json;
  std::string why2;
  if (!zrt::parseStrictJson(text, json, why2)) {
    error = "'" + nameOrPath.str() + "' is not a machine file: " + why2;
    return failure();
  }
  if (json.kind != zrt::JsonValue::Kind::Object) {
    error = "'" + nameOrPath.str() + "' is not a machine file: it holds " +
            zrt::JsonValue::kindName(json.kind) + ", not a JSON object";
    return failure();
  }
  namespace key = zplan::machine;
  // Each figure, with the range a machine can have: rates from 1 to 10^18 per
  // second, times from 0 to an hour, seconds per byte from 0 to 1. Outside them
  // the model's predictions overflow (1e-308 FLOP/s: an infinite step) or mean
  // nothing.
  struct Figure {
    const char *key;
    double *field;
    double lo, hi;
    const char *unit;
  };
  double unsetInterAlpha = -1, unsetInterBeta = -1;
  const Figure figures[] = {
      {key::kMatmulFlops, &m.matmulFlops, 1, 1e18, "FLOP/s"},
      {key::kMatmulFlops16, &m.matmulFlops16, 1, 1e18, "FLOP/s"},
      {key::kVectorFlops, &m.vectorFlops, 1, 1e18, "FLOP/s"},
      {key::kMemoryBandwidth, &m.memoryBandwidth, 1, 1e18, "bytes/s"},
      {key::kKernelOverheadS, &m.kernelOverheadS, 0, 3600, "s"},
      {key::kAlphaS, &m.alphaS, 0, 3600, "s"},
      {key::kBetaSPerByte, &m.betaSPerByte, 0, 1, "s per byte"},
      {key::kInterAlphaS, &unsetInterAlpha, 0, 3600, "s"},
      {key::kInterBetaSPerByte, &unsetInterBeta, 0, 1, "s per byte"},
      {key::kNvmeReadBandwidth, &m.nvmeReadBandwidth, 1, 1e18, "bytes/s"},
      {key::kNvmeWriteBandwidth, &m.nvmeWriteBandwidth, 1, 1e18, "bytes/s"},
  };
  const char *others[] = {key::kName, key::kRanksPerNode, key::kCollectiveAlgorithm};
  std::string file = "'" + nameOrPath.str() + "'";
  int figuresGiven = 0;
  for (const auto &[name, value] : json.members) {
    const Figure *f = nullptr;
    for (const Figure &g : figures)
      if (name == g.key)
        f = &g;
    bool other = llvm::is_contained(others, StringRef(name));
    if (!f && !other) {
      // The known key nearest in spelling, as a suggestion.
      std::string best;
      unsigned bestDistance = 4;
      auto consider = [&](StringRef known) {
        unsigned d = StringRef(name).edit_distance(known, true, bestDistance);
        if (d < bestDistance)
          bestDistance = d, best = known.str();
      };
      for (const Figure &g : figures)
        consider(g.key);
      for (const char *o : others)
        consider(o);
      error = file + ": unknown key '" + name + "'" +
              (best.empty() ? std::string(" (docs/UserGuide.md lists a machine file's keys)")
                            : " (did you mean '" + best + "'?)");
      return failure();
    }
    if (name != key::kName)
      ++figuresGiven;
    if (!f)
      continue;
    char range[96];
    std::snprintf(range, sizeof range, "a number from %g to %g (%s)", f->lo, f->hi, f->unit);
    if (value.kind != zrt::JsonValue::Kind::Number) {
      error = file + ": " + name + " is " + zrt::JsonValue::kindName(value.kind) + ", not " +
              range;
      return failure();
    }
    double v = std::strtod(value.text.c_str(), nullptr);
    if (!std::isfinite(v) || v < f->lo || v > f->hi) {
      error = file + ": " + name + " is " + value.text + ", not " + range;
      return failure();
    }
    *f->field = v;
  }
  if (const zrt::JsonValue *n = json.find(key::kName)) {
    if (n->kind != zrt::JsonValue::Kind::String) {
      error = file + ": " + key::kName + " is " + zrt::JsonValue::kindName(n->kind) +
              ", not a string";
      return failure();
    }
    m.name = n->text;
  } else {
    m.name = nameOrPath.str();
  }
  m.interAlphaS = unsetInterAlpha >= 0 ? unsetInterAlpha : m.alphaS;
  m.interBetaSPerByte = unsetInterBeta >= 0 ? unsetInterBeta : m.betaSPerByte;
  if (const zrt::JsonValue *a = json.find(key::kCollectiveAlgorithm)) {
    if (a->kind != zrt::JsonValue::Kind::String || (a->text != "ring" && a->text != "direct")) {
      error = file + ": " + key::kCollectiveAlgorithm + " must be \"ring\" or \"direct\"";
      return failure();
    }
    m.directExchange = a->text == "direct";
  }
  if (const zrt::JsonValue *r = json.find(key::kRanksPerNode)) {
    std::optional<int64_t> n = r->integer();
    if (!n || *n < 1 || *n > (int64_t(1) << 20)) {
      error = file + ": " + key::kRanksPerNode + " must be a whole number from 1 to 1048576";
      return failure();
    }
    m.ranksPerNode = *n;
  }
  if (figuresGiven == 0) {
    error = file + " gives none of a machine's figures (matmul_flops, memory_bandwidth, "
            "alpha_s, ...): it would predict the 'cpu' machine's step; zero-run "
            "--calibrate FILE measures and writes them";
    return failure();
  }
  return m;
}

namespace {

int64_t elementsOf(Value v) { return cast<MemRefType>(v.getType()).getNumElements(); }
int64_t bytesOf(Value v) {
  return zero::shapedBytes(cast<MemRefType>(v.getType()));
}

/// The ranks a collective runs among: `n` of them, `stride` apart (a hybrid
/// grid's replica group: the shard group size; otherwise 1), and how many such
/// groups the world holds. Ranks are placed node by node.
struct RankGroupShape {
  int64_t n = 1, stride = 1, groups = 1;
  /// Members on one node, and the nodes the group spans.
  int64_t perNode(const MachineModel &m) const {
    return std::min(n, std::max<int64_t>(1, m.ranksPerNode / stride));
  }
  int64_t nodes(const MachineModel &m) const { return (n + perNode(m) - 1) / perNode(m); }
};

/// Kernel `k`'s group (its `group` and `group_size`; none: the world of `world`).
RankGroupShape rankGroupOf(plan::KernelOp k, int64_t world) {
  RankGroupShape g{world, 1, 1};
  auto size = k.getAttrs().getAs<IntegerAttr>("group_size");
  auto group = k.getAttrs().getAs<IntegerAttr>("group");
  if (!size || !group || size.getInt() < 1 || world % size.getInt())
    return g;
  g.n = size.getInt();
  g.groups = world / g.n;
  g.stride = group.getInt() == 2 ? world / g.n : 1; // 2: a replica group; 1, 3:
                                                     // consecutive ranks
  return g;
}

/// A collective kernel's full tensor, `fraction` of it (an all-reduce of a
/// slice), on the wire of one pass among `ranks` ranks.
int64_t wireBytes(plan::KernelOp k, int64_t ranks, int64_t fraction = 1) {
  using K = plan::KernelKind;
  K kind = plan::synchronousKind(k.getKernel());
  Value full = kind == K::all_gather ? k.getOutputs()[0] : k.getInputs()[0];
  auto block = k.getAttrs().getAs<IntegerAttr>("quantize_block");
  if (!block || block.getInt() < 1)
    return bytesOf(full) / fraction;
  return zplan::quantizedCollectiveBytes(elementsOf(full) / fraction, ranks, block.getInt());
}

} // namespace

int64_t zero::collectiveWireBytes(plan::KernelOp k, int64_t world) {
  return wireBytes(k, rankGroupOf(k, world).n);
}

namespace {

/// Ring time of a collective moving `bytes` (the full tensor) over the group.
double ringSeconds(const MachineModel &m, const RankGroupShape &g, int64_t bytes,
                   int passes) {
  int64_t n = g.n;
  if (n <= 1)
    return 0;
  bool inter = g.nodes(m) > 1;
  double alpha = inter ? m.interAlphaS : m.alphaS;
  double beta = inter ? m.interBetaSPerByte : m.betaSPerByte;
  return passes * (alpha * (n - 1) + beta * bytes * (double)(n - 1) / n);
}

/// What a collective moving `bytes` (the full tensor) `passes` times among its
/// `n` ranks sends on each node's links. A ring: every rank
/// sends its successor passes * bytes * (n-1)/n, and the ring leaves each node
/// once (over the network), its other steps inside the node. Direct exchange:
/// every rank sends each peer its 1/n part, so a node of r ranks sends
/// r (n-r)/n of the tensor out and r (r-1)/n inside, per pass.
///
/// Over a group of the world (hybrid sharding), the same per group: its members
/// on one node stay inside it; every group's bytes add up, divided among the
/// world's nodes.
void addLinkBytes(StepPrediction &p, const MachineModel &m, const RankGroupShape &g,
                  int64_t bytes, int passes) {
  int64_t n = g.n;
  if (n <= 1)
    return;
  int64_t r = g.perNode(m), spanned = g.nodes(m);
  double moved = passes * (double)bytes, inter = 0, intra = 0;
  if (m.directExchange) {
    inter = moved * (n - r);
    intra = moved * (r - 1);
  } else {
    double sent = moved * (double)(n - 1) / n;
    int64_t crossings = spanned > 1 ? spanned : 0; // the ring leaves each node once
    inter = sent * crossings;
    intra = sent * (n - crossings);
  }
  p.interNodeBytes += inter * g.groups / p.nodes;
  p.intraNodeBytes += intra * g.groups / p.nodes;
}

/// The view name of input `i` of `k` (of output `i` with `output`), when its kind
/// may read (write) it as a view; nullptr otherwise.
const char *viewName(plan::KernelOp k, size_t i, bool output) {
  using K = plan::KernelKind;
  if (k.getKernel() == K::matmul)
    return output ? (i == 0 ? "out" : nullptr) : i == 0 ? "lhs" : i == 1 ? "rhs" : nullptr;
  if (k.getKernel() != K::attention && k.getKernel() != K::attention_grad)
    return nullptr;
  bool grad = k.getKernel() == K::attention_grad;
  return output ? ::zplan::attention::outputView(grad, i)
                : ::zplan::attention::inputView(grad, i);
}

/// The shape `k` reads input `i` (writes output `i`, with `output`) as: its view's
/// when it is a strided view of the buffer (a head of a QKV projection, one of
/// the three gradients written into it), else the buffer's.
SmallVector<int64_t> accessShape(plan::KernelOp k, size_t i, bool output = false) {
  Value buffer = output ? k.getOutputs()[i] : k.getInputs()[i];
  if (const char *name = viewName(k, i, output))
    if (auto view = k.getAttrs().getAs<DenseI64ArrayAttr>((Twine(name) + "_shape").str()))
      return SmallVector<int64_t>(view.asArrayRef());
  return SmallVector<int64_t>(cast<MemRefType>(buffer.getType()).getShape());
}

/// Roofline time of one compute kernel.
double kernelSeconds(const MachineModel &m, plan::KernelOp k) {
  int64_t bytes = kernelBytes(k);
  // Fused attention is matrix products, block by block.
  bool products = k.getKernel() == plan::KernelKind::matmul ||
                  k.getKernel() == plan::KernelKind::attention ||
                  k.getKernel() == plan::KernelKind::attention_grad;
  // 16-bit products (the output's type) run at the 16-bit GEMM rate.
  bool narrow = products &&
                cast<MemRefType>(k.getOutputs()[0].getType()).getElementTypeBitWidth() == 16;
  double peak = !products ? m.vectorFlops
                : narrow && m.matmulFlops16 > 0 ? m.matmulFlops16
                                                : m.matmulFlops;
  return m.kernelOverheadS + std::max(kernelFlops(k) / peak, bytes / m.memoryBandwidth);
}

} // namespace

int64_t zero::optimizerTensors(plan::KernelOp k) {
  if (auto seg = k.getAttrs().getAs<DenseI64ArrayAttr>("operand_segments"))
    return seg.asArrayRef().empty() ? 1 : std::max<int64_t>(seg[0], 1);
  return 1;
}

int64_t zero::optimizerElements(plan::KernelOp k, unsigned operand) {
  int64_t n = optimizerTensors(k), elements = 0;
  for (Value v : k.getInputs().slice(operand * n, n))
    elements += elementsOf(v);
  return elements;
}

int64_t zero::kernelBytes(plan::KernelOp k) {
  // A view is read or written as its own elements, not its whole buffer.
  auto accessed = [&](Value v, size_t i, bool output) {
    int64_t elements = 1;
    for (int64_t e : accessShape(k, i, output))
      elements *= e;
    return elements * (bytesOf(v) / std::max<int64_t>(elementsOf(v), 1));
  };
  int64_t bytes = 0;
  for (auto [i, v] : llvm::enumerate(k.getInputs())) {
    // A gather reads the rows it gives, not its whole table (an embedding's).
    if (i == 0 && k.getKernel() == plan::KernelKind::gather)
      bytes += std::min(bytesOf(v), bytesOf(k.getOutputs()[0]));
    else
      bytes += accessed(v, i, /*output=*/false);
  }
  for (auto [i, v] : llvm::enumerate(k.getOutputs()))
    bytes += accessed(v, i, /*output=*/true);
  return bytes;
}

// Work per element of the ops that cost more than one operation: a transcendental
// function; GELU (an erf or tanh and a few products); its gradient (an erf and an
// exp as well, or the tanh and a few more products). The kernel kinds and the fused program's instructions weigh them alike.
constexpr double kCheapFlops = 1, kTranscendentalFlops = 10, kGeluFlops = 14,
                 kGeluGradFlops = 28;

namespace {

/// A unary op's work per element, by its record's cost (zplan/UnaryOps.def): as a
/// fused program's instruction, and as a kernel (the record's name is its
/// kernel kind's).
std::optional<double> unaryFlops(zrt::fused::Op op) {
  switch (op) {
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, COST, ...)                                  \
  case zrt::fused::Op::ID:                                                              \
    return k##COST##Flops;
#include "zplan/UnaryOps.def"
  default:
    return std::nullopt;
  }
}
std::optional<double> unaryFlops(plan::KernelKind kind) {
  StringRef name = plan::stringifyKernelKind(kind);
#define ZERO_UNARY_OP(ID, NAME, KIND, OPCODE, COST, ...)                                  \
  if (name == NAME)                                                                     \
    return k##COST##Flops;
#include "zplan/UnaryOps.def"
  return std::nullopt;
}

} // namespace

double zero::kernelFlops(plan::KernelOp k) {
  using K = plan::KernelKind;
  double out = elementsOf(k.getOutputs()[0]);
  if (std::optional<double> unary = unaryFlops(k.getKernel()))
    return *unary * out;
  switch (k.getKernel()) {
  case K::matmul: {
    SmallVector<int64_t> shape = accessShape(k, 0);
    bool tl = false;
    if (auto a = k.getAttrs().getAs<BoolAttr>("transpose_lhs"))
      tl = a.getValue();
    int64_t kdim = shape.size() < 2 ? shape.back() : tl ? shape[shape.size() - 2] : shape.back();
    return 2.0 * out * kdim; // lhs_sums' adds aside: a GEMM's FLOPs, as MFU counts them
  }
  case K::attention:
  case K::attention_grad: {
    // Per query-key pair: the score's and the value's products (and for the
    // gradient, the recomputed score, dP, dV, dK and dQ), and the exponential;
    // a causal mask skips half the pairs. No T x T buffer: bytes stay linear.
    SmallVector<int64_t> q = accessShape(k, 0), key = accessShape(k, 1),
                         v = accessShape(k, 2);
    double pairs = (double)q[0] * q[1] * q[2] * key[2];
    if (auto causal = k.getAttrs().getAs<BoolAttr>("causal"); causal && causal.getValue())
      pairs /= 2;
    double d = q[3], dv = v[3];
    if (k.getKernel() == K::attention)
      return pairs * (2 * d + 2 * dv + kTranscendentalFlops);
    return pairs * (6 * d + 4 * dv + kTranscendentalFlops + 4);
  }
  case K::fused: {
    // Its instructions' work, weighted as the kernels they replace.
    auto program = k.getAttrs().getAs<DenseI64ArrayAttr>("program");
    double perElement = 0;
    using zrt::fused::Op;
    for (size_t i = 0; program && i + zrt::fused::kWords <= (size_t)program.size();
         i += zrt::fused::kWords) {
      Op op = Op(program[i]);
      std::optional<double> unary = unaryFlops(op);
      perElement += op == Op::Const                                ? 0
                    : unary                                        ? *unary
                    : op == Op::GeluGrad || op == Op::GeluTanhGrad ? kGeluGradFlops
                    : op == Op::Pow                                ? kTranscendentalFlops
                                                                   : 1;
    }
    return perElement * out;
  }
  // Floating-point work per output element (the unary ops' above); data
  // movement kernels have none.
  case K::pow:
    return kTranscendentalFlops * out;
  case K::gelu_grad:
  case K::gelu_tanh_grad:
    return kGeluGradFlops * out;
  case K::softmax:
  case K::softmax_grad:
  case K::log_softmax:
  case K::softmax_cross_entropy_grad:
    return 6 * out;
  // The loss comes first among the outputs: per score instead.
  case K::softmax_cross_entropy:
    return 6 * elementsOf(k.getInputs()[0]);
  case K::softmax_cross_entropy_with_grad: // both of the above
    return 12 * elementsOf(k.getInputs()[0]);
  case K::layer_norm:
  case K::layer_norm_grad:
    return 8 * out;
  case K::adamw:
    return 12 * optimizerElements(k);
  case K::sgd:
    return 4 * optimizerElements(k);
  case K::reshape:
  case K::copy:
  case K::transpose:
  case K::slice:
  case K::slice_grad:
  case K::concat:
  case K::expand:
  case K::gather:
  case K::gather_grad:
  case K::all_slice:
  case K::wait:
  case K::to_host:
  case K::to_device:
  case K::nvme_read:
  case K::nvme_write:
    return 0;
  default:
    return out;
  }
}

FailureOr<StepPrediction> zero::predictStep(ModuleOp module, const MachineModel &m,
                                            int64_t asShardGroupSize) {
  auto program = module.lookupSymbol<plan::ProgramOp>("main");
  if (!program)
    return module.emitError("no plan.program @main to predict"), failure();
  int64_t n = program.getWorldSizeAttr().getInt();
  StepPrediction p;
  p.ranksPerNode = std::min(n, m.ranksPerNode);
  p.nodes = (n + p.ranksPerNode - 1) / p.ranksPerNode;
  p.directExchange = m.directExchange;
  double now = 0, commFree = 0, nvmeFree = 0;
  DenseMap<int64_t, double> doneAt; // request -> when its collective ends
  DenseMap<Value, double> readAt;   // an NVMe read's result -> when it is in
  for (Operation &op : program.getBody().front()) {
    auto k = dyn_cast<plan::KernelOp>(op);
    if (!k)
      continue;
    for (Value in : k.getInputs())
      if (auto it = readAt.find(in); it != readAt.end() && it->second > now) {
        p.exposedNvmeS += it->second - now;
        now = it->second;
      }
    using K = plan::KernelKind;
    K kind = plan::synchronousKind(k.getKernel());
    bool started = kind != k.getKernel();
    int passes = kind == K::all_reduce ? 2 : 1;
    if (kind == K::all_gather || kind == K::reduce_scatter || kind == K::all_reduce) {
      RankGroupShape g = rankGroupOf(k, n);
      int64_t G = asShardGroupSize;
      bool regroup = G > 1 && G < n && n % G == 0 && g.n == n;
      if (regroup) // as a hybrid plan: within the shard groups
        g = RankGroupShape{G, 1, n / G};
      int64_t wire = wireBytes(k, g.n);
      double t = ringSeconds(m, g, wire, passes);
      p.commS += t;
      addLinkBytes(p, m, g, wire, passes);
      double begin = std::max(now, commFree);
      commFree = begin + t;
      if (regroup && kind == K::reduce_scatter) {
        // The slice's all-reduce across the groups, started right after it (the
        // schedule chains the two); the reduce-scatter's wait goes with its.
        RankGroupShape replicas{n / G, G, G};
        int64_t slice = wireBytes(k, replicas.n, G);
        double tr = ringSeconds(m, replicas, slice, 2);
        p.commS += tr;
        addLinkBytes(p, m, replicas, slice, 2);
        commFree += tr;
      }
      if (started) {
        doneAt[k.getAttrs().getAs<IntegerAttr>("request").getInt()] = commFree;
      } else { // synchronous: compute waits for all of it
        p.exposedCommS += commFree - now;
        now = commFree;
      }
      continue;
    }
    if (kind == K::wait) {
      double end = doneAt.lookup(k.getAttrs().getAs<IntegerAttr>("request").getInt());
      if (end > now) {
        p.exposedCommS += end - now;
        now = end;
      }
      continue;
    }
    if (kind == K::nvme_read || kind == K::nvme_write) {
      double t = bytesOf(k.getInputs()[0]) /
                 (kind == K::nvme_read ? m.nvmeReadBandwidth : m.nvmeWriteBandwidth);
      p.nvmeS += t;
      // A write's source is made by now: compute is one stream in this model.
      nvmeFree = std::max(now, nvmeFree) + t;
      if (kind == K::nvme_read)
        readAt[k.getOutputs()[0]] = nvmeFree;
      continue;
    }
    double t = kernelSeconds(m, k);
    double flops = kernelFlops(k);
    if (asShardGroupSize > 1 && asShardGroupSize < n && n % asShardGroupSize == 0 &&
        (kind == K::adamw || kind == K::sgd)) {
      // A hybrid plan's optimizer updates slices of 1/G, not 1/N, of each bucket.
      double more = (double)n / asShardGroupSize;
      t = m.kernelOverheadS + (t - m.kernelOverheadS) * more;
      flops *= more;
    }
    p.computeS += t;
    p.flops += flops;
    if (k->hasAttr(zops::attr::kRecompute)) { // activation checkpointing's extra work
      p.recomputeS += t;
      p.recomputeFlops += kernelFlops(k);
    }
    now += t;
  }
  if (nvmeFree > now) { // the writes behind end the step
    p.exposedNvmeS += nvmeFree - now;
    now = nvmeFree;
  }
  p.stepS = now;
  return p;
}
