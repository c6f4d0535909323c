//===- zero-run.cpp - Executes a compiled zero-opt plan -------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//   zero-run PLAN.zplan --init MODEL.onnx [--inputs DIR] [--save-outputs DIR]
//
// DIR follows the ONNX backend-test layout: input_K.pb / output_K.pb hold
// TensorProtos, matched to the graph's inputs and outputs by position.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/Executor.h"
#include "zrt/Kernels.h"
#include "zrt/OnnxTensors.h"
#include "zrt/PlanFile.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <sys/stat.h>

using namespace zrt;

namespace {

const char *kUsage =
    "usage: zero-run PLAN.zplan [--init MODEL.onnx] [--inputs DIR]\n"
    "                [--save-outputs DIR] [--quiet]\n"
    "\n"
    "Runs a plan compiled by zero-opt on the CPU.\n"
    "  --init MODEL.onnx    initial parameter values (the model's initializers,\n"
    "                       external data included, read from the model's folder)\n"
    "  --inputs DIR         graph inputs as DIR/input_K.pb (ONNX TensorProto)\n"
    "  --save-outputs DIR   writes graph outputs as DIR/output_K.pb\n"
    "  --quiet              prints nothing but errors\n";

struct Options {
  std::string plan, init, inputs, saveOutputs;
  bool quiet = false;
};

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag) -> std::string {
      std::string prefix = flag + "=";
      if (a.rfind(prefix, 0) == 0)
        return a.substr(prefix.size());
      ZRT_CHECK(i + 1 < argc, flag << " needs a value\n" << kUsage);
      return argv[++i];
    };
    auto is = [&](const std::string &flag) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (is("--init")) {
      o.init = value("--init");
    } else if (is("--inputs")) {
      o.inputs = value("--inputs");
    } else if (is("--save-outputs")) {
      o.saveOutputs = value("--save-outputs");
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      ZRT_FAIL("unknown option '" << a << "'\n" << kUsage);
    } else {
      ZRT_CHECK(o.plan.empty(), "more than one plan given ('" << o.plan << "', '" << a
                                                              << "')");
      o.plan = a;
    }
  }
  ZRT_CHECK(!o.plan.empty(), "no plan given\n" << kUsage);
  return o;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// A short human summary of a tensor: all values when few, else the first ones.
void printTensor(const std::string &name, const TensorView &v) {
  std::printf("%s: %s =", name.c_str(), v.describe().c_str());
  int64_t n = v.numel(), shown = std::min<int64_t>(n, 8);
  for (int64_t i = 0; i < shown; ++i) {
    switch (v.dtype) {
    case zero::zplan::F32:
      std::printf(" %.7g", v.as<float>()[i]);
      break;
    case zero::zplan::F64:
      std::printf(" %.15g", v.as<double>()[i]);
      break;
    case zero::zplan::I64:
      std::printf(" %lld", (long long)v.as<int64_t>()[i]);
      break;
    case zero::zplan::I32:
      std::printf(" %d", v.as<int32_t>()[i]);
      break;
    case zero::zplan::I8:
      std::printf(" %d", v.as<int8_t>()[i]);
      break;
    default:
      std::printf(" %u", v.as<uint8_t>()[i]);
    }
  }
  std::printf("%s\n", n > shown ? " ..." : "");
}

int run(const Options &o) {
  zero::zplan::Plan plan = loadPlanFile(o.plan);
  // Multi-rank plans need the MPI communicator, which this runtime does not have yet.
  ZRT_CHECK(plan.world_size() == 1,
            o.plan << " was compiled for " << plan.world_size()
                   << " ranks; this zero-run runs 1 rank");
  Executor exec(std::move(plan), cpuKernels());
  bool needsParams = false;
  for (const auto &b : exec.plan().buffers())
    needsParams |= b.role() == zero::zplan::PARAM;
  if (needsParams) {
    ZRT_CHECK(!o.init.empty(), "the plan has parameters; give their values with --init "
                               "MODEL.onnx");
    exec.loadParameters(readOnnxModel(o.init), dirOf(o.init));
  }
  std::vector<int> inputs = exec.inputIndices();
  ZRT_CHECK(inputs.empty() || !o.inputs.empty(),
            "the plan reads " << inputs.size()
                              << " graph inputs; give them with --inputs DIR");
  for (int i : inputs)
    exec.setInput(i, readTensorFile(o.inputs + "/input_" + std::to_string(i) + ".pb"));

  auto start = std::chrono::steady_clock::now();
  exec.run();
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!o.quiet) {
    for (int i = 0; i < exec.numOutputs(); ++i)
      printTensor(exec.outputName(i).empty() ? "output_" + std::to_string(i)
                                             : exec.outputName(i),
                  exec.output(i));
    std::printf("ran %d kernels in %.2f ms\n", exec.plan().kernels_size(), ms);
  }
  if (!o.saveOutputs.empty()) {
    ::mkdir(o.saveOutputs.c_str(), 0755);
    for (int i = 0; i < exec.numOutputs(); ++i) {
      std::string path = o.saveOutputs + "/output_" + std::to_string(i) + ".pb";
      std::ofstream out(path, std::ios::binary);
      ZRT_CHECK(out && tensorFromView(exec.output(i), exec.outputName(i))
                           .SerializeToOstream(&out),
                "cannot write '" << path << "'");
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const Error &e) {
    std::fprintf(stderr, "zero-run: error: %s\n", e.what());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "zero-run: error: %s\n", e.what());
  }
  return 1;
}
