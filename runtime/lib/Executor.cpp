//===- Executor.cpp - Runs a loaded plan on the CPU -----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Executor.h"
#include "zrt/Error.h"
#include "zrt/OnnxTensors.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

using namespace zrt;

Executor::Executor(zero::zplan::Plan plan, const KernelTable &table)
    : plan_(std::move(plan)) {
  // Rounded up so aligned_alloc accepts it; zeroed so no kernel ever reads garbage.
  size_t bytes = (plan_.arena_bytes() + 63) / 64 * 64 + 64;
  arena_ = static_cast<char *>(std::aligned_alloc(64, bytes));
  ZRT_CHECK(arena_, "cannot allocate the " << plan_.arena_bytes() << "-byte arena");
  std::memset(arena_, 0, bytes);
  for (int i = 0; i < plan_.buffers_size(); ++i) {
    const auto &b = plan_.buffers(i);
    if (b.role() == zero::zplan::CONSTANT)
      std::memcpy(arena_ + b.offset(), b.data().data(), b.bytes());
  }
  for (int k = 0; k < plan_.kernels_size(); ++k) {
    const auto &pk = plan_.kernels(k);
    auto it = table.find(pk.name());
    ZRT_CHECK(it != table.end(), "kernel " << k << " '" << pk.name() << "'"
                                           << (pk.loc().empty() ? "" : " at " + pk.loc())
                                           << " is not implemented by this runtime");
    KernelCall call;
    call.name = pk.name();
    call.loc = pk.loc();
    call.attrs = &pk.attrs();
    for (int idx : pk.inputs())
      call.ins.push_back(buffer(idx));
    for (int idx : pk.outputs())
      call.outs.push_back(buffer(idx));
    kernels_.push_back(it->second(call));
  }
}

Executor::~Executor() { std::free(arena_); }

TensorView Executor::buffer(int i) const {
  const auto &b = plan_.buffers(i);
  return TensorView{arena_ + b.offset(), b.dtype(),
                    std::vector<int64_t>(b.shape().begin(), b.shape().end())};
}

void Executor::loadParameters(const onnx::ModelProto &model,
                              const std::string &modelDir) {
  std::map<std::string, const onnx::TensorProto *> inits;
  for (const auto &t : model.graph().initializer())
    inits[t.name()] = &t;
  for (int i = 0; i < plan_.buffers_size(); ++i) {
    const auto &b = plan_.buffers(i);
    if (b.role() != zero::zplan::PARAM)
      continue;
    auto it = inits.find(b.name());
    ZRT_CHECK(it != inits.end(), "the model has no initializer '"
                                     << b.name() << "' that the plan needs");
    copyTensorInto(*it->second, buffer(i), "initializer '" + b.name() + "'", modelDir);
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
      copyTensorInto(t, buffer(i), "input " + std::to_string(index) + " ('" + b.name() + "')");
      found = true;
    }
  }
  ZRT_CHECK(found, "the plan has no input " << index);
}

void Executor::run() {
  for (auto &k : kernels_)
    k();
}

void Executor::runProfiled(std::map<std::string, double> &msByKernel) {
  for (size_t i = 0; i < kernels_.size(); ++i) {
    auto start = std::chrono::steady_clock::now();
    kernels_[i]();
    msByKernel[plan_.kernels(i).name()] +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                  start)
            .count();
  }
}
