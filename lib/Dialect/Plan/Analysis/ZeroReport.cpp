//===- ZeroReport.cpp - Memory and traffic of a compiled step -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Dialect/Plan/Analysis/ZeroReport.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace zero;

namespace {

int64_t bytesOf(Value v) { return cast<plan::BufferOp>(v.getDefiningOp()).getSizeInBytes(); }

int64_t elementsOf(Value v) { return cast<MemRefType>(v.getType()).getNumElements(); }

/// Adds kernel `k` to the step's launches and, for a compute kernel, its work.
void countWork(ZeroReport &r, plan::KernelOp k) {
  using K = plan::KernelKind;
  K kind = plan::synchronousKind(k.getKernel());
  if (kind == K::wait)
    return; // a stream waits; nothing is launched
  ++r.stepKernels;
  if (kind == K::all_gather || kind == K::reduce_scatter || kind == K::all_reduce)
    return; // communication: the comm_elements_per_step figures
  if (kind == K::nvme_read || kind == K::nvme_write)
    return; // the disk's: the NVMe per-step figures
  ZeroReport::WorkClass c = kind == K::matmul ? ZeroReport::Gemm
                            : kind == K::attention || kind == K::attention_grad
                                ? ZeroReport::Attention
                                : ZeroReport::Other;
  r.stepFlops[c] += kernelFlops(k);
  r.stepBytes[c] += kernelBytes(k);
}

} // namespace

FailureOr<ZeroReport> zero::computeZeroReport(ModuleOp module, int64_t stage) {
  auto program = module.lookupSymbol<plan::ProgramOp>("main");
  if (!program)
    return module.emitError("no plan.program @main to report on"), failure();
  ZeroReport r;
  r.stage = stage;
  r.worldSize = program.getWorldSizeAttr().getInt();
  r.totalPeak = program.getArenaBytesAttr().getInt();
  if (auto host = program.getHostArenaBytes())
    r.hostPeak = *host;
  if (auto nvme = program.getNvmeArenaBytes())
    r.nvmeFile = *nvme;
  int64_t persistent = 0, optimizerGrads = 0, optimizerElements = 0;
  bool hostOptimizer = false; // offloaded: its gradients are host bytes
  DenseSet<Value> written;
  // The overflow count's and the clipping norm's all-reduces (fed by
  // nonfinite_count or sum_squares, through adds and reshapes) are communication,
  // not gradients.
  DenseMap<Value, plan::KernelOp> producer;
  auto isOverflowCount = [&](Value v) {
    SmallVector<Value> work = {v};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (Value root = v.getDefiningOp<plan::BufferOp>().getViewOf())
        v = root; // a view (a reshape read in place) of what its root's kernel wrote
      plan::KernelOp k = producer.lookup(v);
      if (!k)
        return false;
      using K = plan::KernelKind;
      K kind = k.getKernel();
      if (kind == K::nonfinite_count || kind == K::sum_squares)
        return true;
      // Counts summed by adds, one kernel each or fused into one.
      if (kind != K::reshape && kind != K::add && kind != K::fused)
        return false;
      llvm::append_range(work, k.getInputs());
    }
    return false;
  };
  if (auto level = module->getAttrOfType<IntegerAttr>(zops::attr::kRecomputeLevel))
    r.recomputeLevel = level.getInt();
  for (Operation &op : program.getBody().front())
    if (auto k = dyn_cast<plan::KernelOp>(op)) {
      r.recomputeKernels += k->hasAttr(zops::attr::kRecompute);
      for (Value v : k.getOutputs()) {
        written.insert(v);
        producer[v] = k;
      }
      // A started collective counts like its synchronous form.
      using K = plan::KernelKind;
      K kind = plan::synchronousKind(k.getKernel());
      countWork(r, k);
      if (kind == K::to_host)
        r.toHostBytes += bytesOf(k.getInputs()[0]);
      else if (kind == K::to_device)
        r.toDeviceBytes += bytesOf(k.getInputs()[0]);
      else if (kind == K::nvme_read)
        r.nvmeReadBytes += bytesOf(k.getInputs()[0]);
      else if (kind == K::nvme_write)
        r.nvmeWriteBytes += bytesOf(k.getInputs()[0]);
      if (auto block = k.getAttrs().getAs<IntegerAttr>("quantize_block")) {
        int passes = kind == K::all_reduce ? 2 : 1;
        Value full = kind == K::all_gather ? k.getOutputs()[0] : k.getInputs()[0];
        ++r.quantizedKernels;
        r.quantizeBlock = block.getInt();
        r.quantizedFullBytes += passes * bytesOf(full);
        r.quantizedWireBytes += passes * collectiveWireBytes(k, r.worldSize);
      }
      if (kind == K::all_gather)
        r.allGather += elementsOf(k.getOutputs()[0]);
      else if (kind == K::reduce_scatter) {
        r.reduceScatter += elementsOf(k.getInputs()[0]);
        r.grads += bytesOf(k.getInputs()[0]); // stages 2-3: replaced below
      } else if (kind == K::all_reduce) {
        r.allReduce += elementsOf(k.getInputs()[0]);
        if (isOverflowCount(k.getInputs()[0]))
          r.overflowCheck += elementsOf(k.getInputs()[0]);
        else
          r.grads += bytesOf(k.getInputs()[0]);
      } else if (kind == K::adamw || kind == K::sgd) {
        int64_t n = optimizerTensors(k);
        for (Value g : k.getInputs().slice(n, n)) {
          optimizerGrads += bytesOf(g);
          hostOptimizer |= g.getDefiningOp<plan::BufferOp>().getHost();
        }
        optimizerElements += zero::optimizerElements(k);
      }
    }
  // Activation offload: host copies that only copies back to the device read
  // (gradients go to the host optimizer; parameter slices stay there).
  {
    DenseMap<Value, int> readers, readersToDevice;
    for (Operation &op : program.getBody().front())
      if (auto k = dyn_cast<plan::KernelOp>(op))
        for (Value in : k.getInputs()) {
          ++readers[in];
          readersToDevice[in] += k.getKernel() == plan::KernelKind::to_device;
        }
    for (Operation &op : program.getBody().front())
      if (auto k = dyn_cast<plan::KernelOp>(op);
          k && k.getKernel() == plan::KernelKind::to_host) {
        Value out = k.getOutputs()[0];
        if (readers.lookup(out) > 0 && readers.lookup(out) == readersToDevice.lookup(out))
          r.hostActivations += bytesOf(out);
      }
  }
  // One rank, stage 0: no collective; the optimizer reads the full gradients.
  // Stages 2-3: what the optimizer reads, the reduced slices (with gradient
  // accumulation, the sharded accumulators: each micro-batch's reduce-scatter
  // output lives only until it is added in).
  if ((r.reduceScatter == 0 && r.allReduce == 0) || stage >= 2)
    r.grads = optimizerGrads;
  if (hostOptimizer) { // offloaded: the optimizer reads them in host memory
    r.hostGrads = optimizerGrads;
    r.grads = 0;
  }
  for (Operation &op : program.getBody().front()) {
    auto buf = dyn_cast<plan::BufferOp>(op);
    if (!buf)
      continue;
    plan::BufferRole role = buf.getRole();
    using plan::BufferRole;
    int64_t bytes = buf.getSizeInBytes();
    if (buf.getNvme()) { // NVMe offload: the same, in the NVMe file
      if (role == BufferRole::state || role == BufferRole::master)
        r.nvmeOptimizerState += bytes;
      if (role != BufferRole::param)
        continue;
      r.nvmeParams += bytes;
    } else if (buf.getHost()) { // offloaded: master weights, optimizer state, slices
      if (role == BufferRole::state || role == BufferRole::master)
        r.hostOptimizerState += bytes;
      if (role != BufferRole::param)
        continue;
      r.hostParams += bytes;
    } else {
      if (role != BufferRole::temp)
        persistent += bytes;
      // Optimizer state: moments, momentum, and (mixed precision) the f32 master
      // copy of the parameters: K = 12 bytes per parameter for AdamW.
      if (role == BufferRole::state || role == BufferRole::master)
        r.optimizerState += bytes;
      if (role != BufferRole::param)
        continue;
      r.params += bytes;
    }
    // Trainable: what a kernel updates (frozen parameters are only read).
    if (auto members = buf->getAttrOfType<ArrayAttr>("bucket_members")) {
      for (Attribute m : members) {
        int64_t n = 1;
        for (int64_t d : cast<DictionaryAttr>(m).getAs<DenseI64ArrayAttr>("shape")
                             .asArrayRef())
          n *= d;
        r.parameters += n;
      }
    } else if (written.contains(buf.getResult())) {
      r.parameters += elementsOf(buf.getResult());
    }
  }
  r.transientPeak = r.totalPeak - persistent;

  // Gathered buckets alive at once, walking the kernels in order (zero-run
  // measures the same walk as it runs).
  SmallVector<plan::KernelOp> kernels;
  for (Operation &op : program.getBody().front())
    if (auto k = dyn_cast<plan::KernelOp>(op))
      kernels.push_back(k);
  SmallVector<int64_t> from(kernels.size(), 0), until(kernels.size(), 0);
  for (auto [i, k] : llvm::enumerate(kernels)) {
    if (plan::synchronousKind(k.getKernel()) != plan::KernelKind::all_gather)
      continue;
    // Kernels read the bucket itself or views of it (the parameters in place).
    Value out = k.getOutputs()[0];
    size_t last = i;
    for (size_t j = i + 1; j < kernels.size(); ++j)
      for (Value in : kernels[j].getInputs())
        if (in == out || in.getDefiningOp<plan::BufferOp>().getViewOf() == out)
          last = j;
    from[i] += bytesOf(out);
    until[last] += bytesOf(out);
    r.gatheredBuckets.push_back(bytesOf(out));
  }
  int64_t live = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    live += from[i];
    r.gatheredPeak = std::max(r.gatheredPeak, live);
    live -= until[i];
  }
  // Above stage 0 each optimizer updates one bucket's slice; at stage 0 every
  // gradient bucket is all-reduced once (one rank: no reduction, no padding).
  r.paddedParameters = stage >= 1 ? optimizerElements * r.worldSize
                                  : r.allReduce - r.overflowCheck;
  if (r.paddedParameters == 0)
    r.paddedParameters = r.parameters;
  return r;
}

int64_t zero::ZeroReport::bucketsOverLiveLimit() const {
  if (liveLimitBytes <= 0)
    return 0;
  return llvm::count_if(gatheredBuckets, [&](int64_t b) { return b > liveLimitBytes; });
}

/// Whether the report has the live-parameter section: stage 3's gathers (stages
/// 1-2 gather updated slices after the optimizer, under no limit).
static bool hasLiveLimitSection(const zero::ZeroReport &r) {
  return r.stage == 3 && !r.gatheredBuckets.empty();
}

void zero::printReportTable(const ZeroReport &r, llvm::raw_ostream &os) {
  auto mib = [](int64_t b) { return (double)b / (1024.0 * 1024.0); };
  os << "ZeRO stage " << r.stage << " on " << r.worldSize << " rank"
     << (r.worldSize == 1 ? "" : "s") << ": " << r.parameters
     << " trainable parameters (" << r.paddedParameters << " padded)\n";
  if (!r.trainableSource.empty())
    os << "trainable set: " << r.trainableTensors << " tensors, " << r.trainableElements
       << " elements, from " << r.trainableSource << "\n";
  os << "per-rank memory            bytes          MiB\n";
  auto row = [&](const char *name, int64_t b) {
    os << llvm::format("  %-20s %14lld %12.2f\n", name, (long long)b, mib(b));
  };
  row("params", r.params);
  row("grads", r.grads);
  row("optimizer_state", r.optimizerState);
  row("model_states", r.modelStates());
  row("transient_peak", r.transientPeak);
  row("gathered_peak", r.gatheredPeak);
  row("total_peak", r.totalPeak);
  if (hasLiveLimitSection(r)) {
    int64_t largest = *llvm::max_element(r.gatheredBuckets);
    os << "live parameters (--max-live-mb; DeepSpeed's stage3_max_live_parameters)\n";
    if (r.liveLimitBytes > 0)
      row("limit", r.liveLimitBytes);
    else
      os << llvm::format("  %-20s %14s\n", "limit", "none");
    row("largest_bucket", largest);
    os << llvm::format("  %-20s %14lld of %lld gathered buckets", "over_limit",
                       (long long)r.bucketsOverLiveLimit(),
                       (long long)r.gatheredBuckets.size());
    if (r.bucketsOverLiveLimit())
      os << ": soft limit, each gathered where first read, none prefetched beside it";
    os << "\n";
  }
  if (r.hostPeak) {
    os << "host memory (offload)\n";
    if (r.hostParams)
      row("params", r.hostParams);
    if (r.hostActivations)
      row("activations", r.hostActivations);
    row("grads", r.hostGrads);
    row("optimizer_state", r.hostOptimizerState);
    row("host_peak", r.hostPeak);
    os << "copied per step            bytes          MiB\n";
    row("to_host", r.toHostBytes);
    row("to_device", r.toDeviceBytes);
  }
  if (r.nvmeFile) {
    os << "NVMe file (offload)\n";
    row("params", r.nvmeParams);
    row("optimizer_state", r.nvmeOptimizerState);
    row("file", r.nvmeFile);
    os << "NVMe per step              bytes          MiB\n";
    row("read", r.nvmeReadBytes);
    row("written", r.nvmeWriteBytes);
  }
  os << "communication per step     elements\n";
  auto crow = [&](const char *name, int64_t e) {
    os << llvm::format("  %-20s %14lld", name, (long long)e);
    if (r.parameters)
      os << llvm::format("   %5.2f x params", (double)e / r.parameters);
    os << "\n";
  };
  crow("all_gather", r.allGather);
  crow("reduce_scatter", r.reduceScatter);
  crow("all_reduce", r.allReduce);
  crow("volume", r.volume());
  if (r.quantizedKernels)
    os << llvm::format("quantized collectives: %lld, int8 blocks of %lld; %.3f MB per "
                       "step instead of %.3f MB (x%.4f); each value within "
                       "max|block|/254\n",
                       (long long)r.quantizedKernels, (long long)r.quantizeBlock,
                       r.quantizedWireBytes / 1e6, r.quantizedFullBytes / 1e6,
                       (double)r.quantizedWireBytes / r.quantizedFullBytes);
  os << "work per step: " << r.stepKernels << " kernels" << "\n";
  os << "                           GFLOP         GB moved\n";
  static const char *const classes[] = {"gemm", "attention", "other"};
  double flops = 0, bytes = 0;
  for (int c = 0; c < ZeroReport::kWorkClasses; ++c) {
    os << llvm::format("  %-20s %14.3f %14.3f\n", classes[c], r.stepFlops[c] / 1e9,
                       r.stepBytes[c] / 1e9);
    flops += r.stepFlops[c];
    bytes += r.stepBytes[c];
  }
  os << llvm::format("  %-20s %14.3f %14.3f\n", "total", flops / 1e9, bytes / 1e9);
  if (r.predicted) {
    const StepPrediction &p = *r.predicted;
    os << "predicted step on " << r.machine << "\n";
    os << llvm::format("  %-20s %12.3f ms\n", "step", p.stepS * 1e3);
    os << llvm::format("  %-20s %12.3f ms\n", "compute", p.computeS * 1e3);
    os << llvm::format("  %-20s %12.3f ms\n", "communication", p.commS * 1e3);
    os << llvm::format("  %-20s %12.3f ms\n", "exposed_comm", p.exposedCommS * 1e3);
    if (p.nvmeS > 0) {
      os << llvm::format("  %-20s %12.3f ms\n", "nvme", p.nvmeS * 1e3);
      os << llvm::format("  %-20s %12.3f ms\n", "exposed_nvme", p.exposedNvmeS * 1e3);
    }
    os << "link traffic per step, per node (" << p.nodes << " x " << p.ranksPerNode
       << " ranks; " << (p.directExchange ? "direct exchange" : "ring collectives")
       << ")\n";
    os << llvm::format("  %-20s %14.0f %12.3f GB\n", "intra_node", p.intraNodeBytes,
                       p.intraNodeBytes / 1e9);
    os << llvm::format("  %-20s %14.0f %12.3f GB\n", "inter_node", p.interNodeBytes,
                       p.interNodeBytes / 1e9);
  }
  if (r.recomputeLevel) {
    os << "recomputation (activation checkpointing, level " << r.recomputeLevel << ")\n";
    os << llvm::format("  %-20s %14lld\n", "kernels", (long long)r.recomputeKernels);
    if (r.predicted) {
      const StepPrediction &p = *r.predicted;
      os << llvm::format("  %-20s %14.4g   %5.1f%% of the step's FLOPs\n", "extra_flops",
                         p.recomputeFlops, p.flops ? 100 * p.recomputeFlops / p.flops : 0);
      os << llvm::format("  %-20s %12.3f ms  %5.1f%% of the predicted step\n",
                         "extra_time", p.recomputeS * 1e3,
                         p.stepS ? 100 * p.recomputeS / p.stepS : 0);
    }
    if (r.recomputeSavedBytes >= 0)
      os << llvm::format("  %-20s %14lld %12.2f MiB of total_peak\n", "saved_peak",
                         (long long)r.recomputeSavedBytes,
                         r.recomputeSavedBytes / 1048576.0);
  }
}

namespace {

/// The first number in `v` that is not finite (JSON has no inf or NaN), as the
/// path to it ("predicted.step_ms"); "" when all are.
std::string nonFiniteAt(const llvm::json::Value &v, const std::string &path) {
  if (auto d = v.getAsNumber(); d && !std::isfinite(*d))
    return path.empty() ? "the report" : path;
  if (const auto *o = v.getAsObject())
    for (const auto &[k, child] : *o)
      if (std::string at = nonFiniteAt(child, path.empty() ? k.str() : path + "." + k.str());
          !at.empty())
        return at;
  if (const auto *a = v.getAsArray())
    for (size_t i = 0; i < a->size(); ++i)
      if (std::string at = nonFiniteAt((*a)[i], path + "[" + std::to_string(i) + "]");
          !at.empty())
        return at;
  return "";
}

} // namespace

std::string zero::printReportJson(const ZeroReport &r, llvm::raw_ostream &os) {
  llvm::json::Object out{
      {"zero_stage", r.stage},
      {"world_size", r.worldSize},
      {"parameters", r.parameters},
      {"padded_parameters", r.paddedParameters},
      {"trainable_set", llvm::json::Object{{"tensors", r.trainableTensors},
                                           {"elements", r.trainableElements},
                                           {"source", r.trainableSource}}},
      {"per_rank_bytes",
       llvm::json::Object{{"params", r.params},
                          {"grads", r.grads},
                          {"optimizer_state", r.optimizerState},
                          {"model_states", r.modelStates()},
                          {"transient_peak", r.transientPeak},
                          {"gathered_peak", r.gatheredPeak},
                          {"total_peak", r.totalPeak}}},
      {"comm_elements_per_step",
       llvm::json::Object{{"all_gather", r.allGather},
                          {"reduce_scatter", r.reduceScatter},
                          {"all_reduce", r.allReduce},
                          {"volume", r.volume()}}},
  };
  llvm::json::Object flops, bytes;
  static const char *const classes[] = {"gemm", "attention", "other"};
  for (int c = 0; c < ZeroReport::kWorkClasses; ++c) {
    flops[classes[c]] = r.stepFlops[c];
    bytes[classes[c]] = r.stepBytes[c];
  }
  out["step"] = llvm::json::Object{
      {"kernels", r.stepKernels}, {"flops", std::move(flops)}, {"bytes", std::move(bytes)}};
  if (hasLiveLimitSection(r))
    out["live_parameters"] = llvm::json::Object{
        {"limit_bytes", r.liveLimitBytes},
        {"largest_bucket_bytes", *llvm::max_element(r.gatheredBuckets)},
        {"gathered_buckets", (int64_t)r.gatheredBuckets.size()},
        {"buckets_over_limit", r.bucketsOverLiveLimit()}};
  if (r.hostPeak)
    out["host_bytes"] = llvm::json::Object{{"params", r.hostParams},
                                           {"activations", r.hostActivations},
                                           {"grads", r.hostGrads},
                                           {"optimizer_state", r.hostOptimizerState},
                                           {"host_peak", r.hostPeak},
                                           {"to_host_per_step", r.toHostBytes},
                                           {"to_device_per_step", r.toDeviceBytes}};
  if (r.nvmeFile)
    out["nvme_bytes"] = llvm::json::Object{{"params", r.nvmeParams},
                                           {"optimizer_state", r.nvmeOptimizerState},
                                           {"file", r.nvmeFile},
                                           {"read_per_step", r.nvmeReadBytes},
                                           {"written_per_step", r.nvmeWriteBytes}};
  if (r.predicted)
    out["predicted"] = llvm::json::Object{
        {"machine", r.machine},
        {"step_ms", r.predicted->stepS * 1e3},
        {"compute_ms", r.predicted->computeS * 1e3},
        {"comm_ms", r.predicted->commS * 1e3},
        {"exposed_comm_ms", r.predicted->exposedCommS * 1e3},
        {"nvme_ms", r.predicted->nvmeS * 1e3},
        {"exposed_nvme_ms", r.predicted->exposedNvmeS * 1e3}};
  if (r.quantizedKernels)
    out["quantized_collectives"] = llvm::json::Object{
        {"kernels", r.quantizedKernels},
        {"block", r.quantizeBlock},
        {"full_bytes_per_step", r.quantizedFullBytes},
        {"wire_bytes_per_step", r.quantizedWireBytes},
        {"factor", (double)r.quantizedWireBytes / r.quantizedFullBytes},
        {"error_bound", "max|block|/254 per value per quantization"}};
  if (r.predicted)
    out["link_bytes_per_step"] = llvm::json::Object{
        {"nodes", r.predicted->nodes},
        {"ranks_per_node", r.predicted->ranksPerNode},
        {"algorithm", r.predicted->directExchange ? "direct" : "ring"},
        {"intra_node_per_node", r.predicted->intraNodeBytes},
        {"inter_node_per_node", r.predicted->interNodeBytes}};
  if (r.recomputeLevel) {
    llvm::json::Object rc{{"level", r.recomputeLevel}, {"kernels", r.recomputeKernels}};
    if (r.predicted) {
      rc["extra_flops"] = r.predicted->recomputeFlops;
      rc["step_flops"] = r.predicted->flops;
      rc["extra_ms"] = r.predicted->recomputeS * 1e3;
    }
    if (r.recomputeSavedBytes >= 0)
      rc["saved_peak_bytes"] = r.recomputeSavedBytes;
    out["recompute"] = std::move(rc);
  }
  llvm::json::Value value(std::move(out));
  if (std::string at = nonFiniteAt(value, ""); !at.empty())
    return "the report's " + at + " is not a finite number, which JSON cannot hold";
  os << llvm::formatv("{0:2}", value) << "\n";
  return "";
}
