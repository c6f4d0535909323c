//===- RunOptionsTest.cpp - zero-run's command line -----------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/RunOptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace zrt;

namespace {

RunOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "zero-run");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  return parseRunOptions((int)argv.size(), argv.data());
}

std::string errorOf(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(RunOptions, TrainingFlags) {
  RunOptions o = parse({"step.zplan", "--init", "gpt.onnx", "--init=w.safetensors",
                        "--data", "tokens.u16", "--data-format=u16", "--steps", "7",
                        "--shuffle", "--seed=3", "--log-json", "log.json", "--threads", "2",
                        "--collective-timeout", "2.5", "--rendezvous-timeout=30",
                        "--test-fail-rank", "1:4", "--nvme-queue-depth", "16"});
  EXPECT_EQ(o.action, RunOptions::Action::Run);
  EXPECT_EQ(o.plan, "step.zplan");
  EXPECT_EQ(o.init, "gpt.onnx");
  EXPECT_EQ(o.initCheckpoint, std::vector<std::string>{"w.safetensors"});
  EXPECT_EQ(o.data, "tokens.u16");
  EXPECT_EQ(o.dataFormat, "u16");
  EXPECT_EQ(o.steps, 7);
  EXPECT_TRUE(o.shuffle);
  EXPECT_EQ(o.seed, 3u);
  EXPECT_EQ(o.logJson, "log.json");
  EXPECT_EQ(o.threads, 2);
  EXPECT_DOUBLE_EQ(o.collectiveTimeoutS, 2.5);
  EXPECT_DOUBLE_EQ(o.rendezvousTimeoutS, 30);
  EXPECT_EQ(o.testFail.rank, 1);
  EXPECT_EQ(o.testFail.step, 4);
  EXPECT_EQ(o.nvmeQueueDepth, 16);
}

TEST(RunOptions, AnswersAtOnce) {
  EXPECT_EQ(parse({"--help", "--bogus"}).action, RunOptions::Action::Help);
  EXPECT_EQ(parse({"--list-devices"}).action, RunOptions::Action::ListDevices);
  EXPECT_EQ(parse({"--check-cuda-libraries"}).action,
            RunOptions::Action::CheckCudaLibraries);
  EXPECT_NE(std::strstr(runUsage(), "--rendezvous-timeout"), nullptr);
  EXPECT_EQ(std::strstr(runUsage(), "--test-"), nullptr); // documented in the guide
}

TEST(RunOptions, BadValuesNameTheFlag) {
  EXPECT_EQ(errorOf({"p.zplan", "--steps", "-1"}), "--steps needs a non-negative integer, not '-1'");
  EXPECT_EQ(errorOf({"p.zplan", "--rendezvous-timeout", "0"}),
            "--rendezvous-timeout needs a positive number of seconds, or inf for no limit, "
            "not '0'");
  // inf is no limit; past about 31 years, NaN, hex and 1e400 are refused.
  EXPECT_TRUE(std::isinf(parse({"p.zplan", "--rendezvous-timeout", "inf"}).rendezvousTimeoutS));
  EXPECT_TRUE(std::isinf(parse({"p.zplan", "--collective-timeout=Infinity"}).collectiveTimeoutS));
  EXPECT_EQ(parse({"p.zplan", "--collective-timeout", "0"}).collectiveTimeoutS, 0);
  EXPECT_EQ(errorOf({"p.zplan", "--rendezvous-timeout", "1e10"}),
            "--rendezvous-timeout=1e10 is more than 1e+09 s (about 31 years); give inf for no "
            "limit");
  for (const char *bad : {"nan", "0x10", "1e400", "-1", ""})
    EXPECT_NE(errorOf({"p.zplan", "--collective-timeout", bad}).find("needs a non-negative"),
              std::string::npos)
        << bad;
  EXPECT_EQ(errorOf({"p.zplan", "--test-fail-rank", "3"}),
            "--test-fail-rank needs RANK:STEP, not '3'");
  EXPECT_EQ(errorOf({"p.zplan", "--nvme-queue-depth", "0"}),
            "--nvme-queue-depth=0: must be 1 to 1024");
  EXPECT_EQ(errorOf({"p.zplan", "--device=tpu"}), "--device=tpu is not one of cuda, cpu");
  EXPECT_EQ(errorOf({"a.zplan", "b.zplan"}), "more than one plan given ('a.zplan', 'b.zplan')");
  EXPECT_EQ(errorOf({"p.zplan", "--init", "a.onnx", "--init", "b.onnx"}),
            "--init takes one ONNX model; 'b.onnx' is a second one");
  EXPECT_EQ(errorOf({"p.zplan", "--data", "d", "--inputs", "i"}),
            "--data and --inputs exclude each other");
  EXPECT_EQ(errorOf({"p.zplan", "--steps"}).rfind("--steps needs a value\n", 0), 0u);
  EXPECT_EQ(errorOf({"p.zplan", "--frobnicate"}).rfind("unknown option '--frobnicate'", 0),
            0u);
  EXPECT_EQ(errorOf({}).rfind("no plan given", 0), 0u);
}

TEST(RunOptions, Consolidation) {
  RunOptions o = parse({"--consolidate", "ckpt", "-o", "w.safetensors",
                        "--with-optimizer-state"});
  EXPECT_EQ(o.consolidate, "ckpt");
  EXPECT_EQ(o.output, "w.safetensors");
  EXPECT_TRUE(o.withOptimizerState);
  EXPECT_EQ(errorOf({"--consolidate", "ckpt"}),
            "--consolidate needs -o OUT.safetensors or OUT.onnx");
  EXPECT_EQ(errorOf({"p.zplan", "-o", "x.onnx"}), "-o goes with --consolidate");
}

TEST(RunOptions, Paths) {
  EXPECT_EQ(folderOf("models/gpt.onnx"), "models");
  EXPECT_EQ(folderOf("gpt.onnx"), ".");
  EXPECT_TRUE(pathEndsWith("w.safetensors", ".safetensors"));
  EXPECT_FALSE(pathEndsWith("w.onnx", ".safetensors"));
}

} // namespace
