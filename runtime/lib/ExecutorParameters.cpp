//===- ExecutorParameters.cpp - A plan's parameters, values and inputs ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What goes into and comes out of a loaded plan besides its kernels: parameters
// loaded from a model (or drawn), each rank's owned part of a sharded parameter,
// a trained parameter gathered whole, the runtime values (learning rate, step)
// and the step's inputs. The kernels and their run are Executor.cpp.
//
//===----------------------------------------------------------------------===//
#include "zrt/Executor.h"
#include "zrt/PretrainedWeights.h"
#include "zrt/ParameterInputs.h"
#include "zrt/RankGroups.h"
#include "zrt/AsyncCollectives.h"
#include "zrt/Error.h"
#include "zrt/Float16.h"
#include "zrt/HostWorker.h"
#include "zrt/NvmeFile.h"
#include "zrt/OnnxTensors.h"
#include "zrt/PlanFile.h"
#include "zrt/PlanVerifier.h"
#include "zrt/RandomInit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>

using namespace zrt;

namespace {

/// Parameters and master copies both come from the model's initializers.
bool isWeight(const zero::zplan::Buffer &b) {
  return b.role() == zero::zplan::PARAM || b.role() == zero::zplan::MASTER;
}

} // namespace

void Executor::loadParameters(const onnx::ModelProto &model, const std::string &modelDir,
                              std::optional<uint64_t> randomSeed,
                              const ParameterSource *source) {
  std::map<std::string, const onnx::TensorProto *> inits;
  for (const auto &t : model.graph().initializer())
    inits[t.name()] = &t;
  // Elements [first, first + count) of parameter `name`, flattened, in `dtype` at
  // `out`: read from the initializer (only that range of its external data) or
  // generated; a 16-bit buffer (mixed precision) takes the f32 value rounded.
  auto fill = [&](const std::string &name, const std::vector<int64_t> &shape,
                  DType dtype, int64_t first, int64_t count, char *out) {
    auto it = inits.find(name);
    ZRT_CHECK(it != inits.end(),
              "the model has no initializer '" << name << "' that the plan needs");
    const onnx::TensorProto &t = *it->second;
    std::string what = "initializer '" + name + "'";
    if (source && source->fill(name, shape, dtype, first, count, out))
      return;
    bool half = dtype == zero::zplan::BF16 || dtype == zero::zplan::F16;
    std::vector<float> wide;
    if (randomSeed) {
      std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
      TensorView have{nullptr, dtype, dims}, want{nullptr, dtype, shape};
      ZRT_CHECK(dims == shape, what << " has shape " << have.describe()
                                    << ", the plan expects " << want.describe());
      ZRT_CHECK(half || dtype == zero::zplan::F32,
                "--random-init generates floating-point parameters; " << what << " is "
                                                                     << dtypeName(dtype));
      wide.resize(count);
      randomInitRange(*randomSeed, name, shape, first, count, wide.data());
      if (!half)
        return (void)std::memcpy(out, wide.data(), count * sizeof(float));
    } else {
      // Converted as it is read where the stored type differs (a bf16 export
      // trained with f32 master weights; f32 weights into a 16-bit copy).
      try {
        copyTensorRangeInto(t, TensorView{nullptr, dtype, shape}, first, count, out, what,
                            modelDir);
      } catch (const Error &e) {
        if (t.data_location() != onnx::TensorProto::EXTERNAL || hasNoValues(t))
          throw;
        throw Error(std::string(e.what()) + " (a model whose weights were never written "
                                            "starts from generated values with "
                                            "--random-init SEED)");
      }
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      if (dtype == zero::zplan::BF16)
        reinterpret_cast<bf16 *>(out)[i] = bf16(wide[i]);
      else
        reinterpret_cast<f16 *>(out)[i] = f16(wide[i]);
    }
  };
  for (int i = 0; i < plan_.buffers_size(); ++i) {
    const auto &b = plan_.buffers(i);
    if (!isWeight(b))
      continue;
    TensorView dst = buffer(i);
    std::vector<char> staging(dst.bytes());
    if (!b.has_bucket()) {
      fill(b.name(), dst.shape, dst.dtype, 0, dst.numel(), staging.data());
      write(i, staging.data(), staging.size());
      continue;
    }
    // This rank owns elements [first, first + n) of the flat bucket; each member
    // contributes the part of it that falls in that range, and only that part is
    // read or generated.
    int64_t n = dst.numel(), first = shardComm().rank() * n, size = dtypeSize(dst.dtype);
    for (const auto &m : b.bucket().members()) {
      std::vector<int64_t> shape(m.shape().begin(), m.shape().end());
      int64_t elements = TensorView{nullptr, dst.dtype, shape}.numel();
      int64_t lo = std::max(first, m.offset());
      int64_t hi = std::min(first + n, m.offset() + elements);
      if (lo >= hi)
        continue;
      fill(m.name(), shape, dst.dtype, lo - m.offset(), hi - lo,
           staging.data() + (lo - first) * size);
    }
    write(i, staging.data(), staging.size());
  }
}

std::vector<std::string> Executor::parameterNames() const {
  return planParameterNames(plan_);
}

Executor::TrainedValue Executor::findTrainedValue(const std::string &name) const {
  // Mixed precision: the f32 master copy is the trained value, not its 16-bit
  // rounding; it lives in MASTER buffers (whole, or this rank's bucket slice).
  for (auto role : {zero::zplan::MASTER, zero::zplan::PARAM})
    for (int i = 0; i < plan_.buffers_size(); ++i) {
      const auto &b = plan_.buffers(i);
      if (b.role() != role)
        continue;
      if (!b.has_bucket() && b.name() == name)
        return {i, nullptr};
      for (const auto &m : b.bucket().members())
        if (m.name() == name)
          return {i, &m};
    }
  ZRT_FAIL("the plan has no parameter '" << name << "'");
}

std::vector<char> Executor::gatherParameter(const std::string &name, DType &dtype,
                                            std::vector<int64_t> &shape) {
  auto [i, m] = findTrainedValue(name);
  TensorView v = buffer(i);
  dtype = v.dtype;
  if (!m) {
    shape = v.shape;
    return read(i).bytes;
  }
  // The slices of the bucket are its shard group's (rank 0 is the first group's
  // first rank).
  Communicator &group = shardComm();
  std::vector<char> full(v.bytes() * group.size());
  HostTensor slice = read(i);
  group.gatherToRoot(slice.bytes.data(), full.data(), v.numel(), v.dtype);
  shape.assign(m->shape().begin(), m->shape().end());
  TensorView whole{nullptr, v.dtype, shape};
  int64_t size = dtypeSize(v.dtype);
  return std::vector<char>(full.begin() + m->offset() * size,
                           full.begin() + (m->offset() + whole.numel()) * size);
}

Executor::OwnedPart Executor::ownedPart(const std::string &name) {
  auto [i, m] = findTrainedValue(name);
  TensorView v = buffer(i);
  OwnedPart part;
  part.dtype = v.dtype;
  if (!m) {
    part.shape = v.shape;
    part.count = v.numel();
    part.writer = comm().rank() == 0;
    if (part.writer)
      part.bytes = read(i).bytes;
    return part;
  }
  part.shape.assign(m->shape().begin(), m->shape().end());
  int64_t n = TensorView{nullptr, v.dtype, part.shape}.numel();
  // This rank's slice is bucket elements [lo, lo + v.numel()); shard groups are
  // consecutive ranks, so the first group's ranks are those whose group rank is
  // their world rank.
  int64_t lo = shardComm().rank() * v.numel();
  int64_t from = std::max(lo, m->offset()), to = std::min(lo + v.numel(), m->offset() + n);
  part.writer = comm().rank() == shardComm().rank() && from < to;
  if (!part.writer)
    return part;
  part.first = from - m->offset();
  part.count = to - from;
  HostTensor slice = read(i);
  int64_t size = dtypeSize(v.dtype);
  part.bytes.assign(slice.bytes.begin() + (from - lo) * size,
                    slice.bytes.begin() + (to - lo) * size);
  return part;
}

bool Executor::hasRuntimeValue(const std::string &name) const {
  for (const auto &b : plan_.buffers())
    if (b.role() == zero::zplan::RUNTIME && b.name() == name)
      return true;
  return false;
}

void Executor::setRuntimeValue(const std::string &name, double value) {
  for (int i = 0; i < plan_.buffers_size(); ++i) {
    const auto &b = plan_.buffers(i);
    if (b.role() != zero::zplan::RUNTIME || b.name() != name)
      continue;
    if (b.dtype() == zero::zplan::F64) {
      write(i, &value, sizeof value);
    } else {
      float f = (float)value;
      write(i, &f, sizeof f);
    }
  }
}

std::vector<int> Executor::inputIndices() const {
  std::set<int> indices;
  for (const auto &b : plan_.buffers())
    if (b.role() == zero::zplan::INPUT)
      indices.insert(b.index());
  return {indices.begin(), indices.end()};
}

void Executor::setInput(int index, const onnx::TensorProto &t) {
  bool found = false;
  for (int i = 0; i < plan_.buffers_size(); ++i) {
    const auto &b = plan_.buffers(i);
    if (b.role() == zero::zplan::INPUT && b.index() == index) {
      TensorView dst = buffer(i);
      std::vector<char> staging(dst.bytes());
      copyTensorInto(t, TensorView{staging.data(), dst.dtype, dst.shape},
                     "input " + std::to_string(index) + " ('" + b.name() + "')");
      write(i, staging.data(), staging.size());
      found = true;
    }
  }
  ZRT_CHECK(found, "the plan has no input " << index);
}
