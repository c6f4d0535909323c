//===- ZeroOptDriverTest.cpp - zero-opt's flags and compile session -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/FlagSettings.h"
#include "zero/Driver/ZeroOptFlags.h"
#include "zero/Pipeline/ZeroPipeline.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace zero;

namespace {

/// zero-opt's command line `args`, every flag back at its default first.
bool parseFlags(std::vector<const char *> args) {
  llvm::cl::ResetAllOptionOccurrences();
  args.insert(args.begin(), "zero-opt");
  std::string errors;
  llvm::raw_string_ostream os(errors);
  bool ok = llvm::cl::ParseCommandLineOptions((int)args.size(), args.data(), "", &os);
  EXPECT_EQ(errors, "");
  return ok;
}

TEST(ZeroOptFlags, HelpFitsOneHundredColumns) {
  std::string help;
  llvm::raw_string_ostream os(help);
  flags::printHelp(os);
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(help).split(lines, '\n');
  EXPECT_GT(lines.size(), 50u);
  for (llvm::StringRef line : lines)
    EXPECT_LE(line.size(), 100u) << line.str();
  for (const char *flag : {"--zero-stage=<N>", "--lr=<number>", "--deepspeed=<ds_config.json>",
                           "--no-overlap", "-o FILE"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  EXPECT_EQ(help.find("--mlir-print-ir-after-all"), std::string::npos);
}

TEST(ZeroOptFlags, LongFlagsAndWordsWrap) {
  std::string text;
  llvm::raw_string_ostream os(text);
  flags::printOptionHelp(os, "--a-flag-much-longer-than-the-column=<value>",
                         std::string(30, 'x') + " " + std::string(80, 'y') + " z");
  EXPECT_EQ(text, "  --a-flag-much-longer-than-the-column=<value>\n" + std::string(30, ' ') +
                      std::string(30, 'x') + "\n" + std::string(30, ' ') +
                      std::string(80, 'y') + "\n" + std::string(30, ' ') + "z\n");
}

TEST(FlagSettings, PipelineOptionsFollowTheFlags) {
  ASSERT_TRUE(parseFlags({"--zero-stage=3", "--world-size=4", "--optimizer=sgd",
                          "--recompute=blocks"}));
  ZeroPipelineOptions o;
  pipelineOptionsFromFlags(o, "plan", {recomputeLevelFromFlags(), 7.0, 3});
  EXPECT_EQ(o.zeroStage, 3);
  EXPECT_EQ(o.worldSize, 4);
  EXPECT_EQ(o.optimizer, "sgd");
  EXPECT_EQ(o.level, "plan");
  EXPECT_EQ(o.recomputeLevel, 2); // blocks
  EXPECT_EQ(o.bucketSizeMb, 7.0); // the budget's or auto-tune's choice wins
  EXPECT_EQ(o.prefetchBuckets, 3);
  EXPECT_FALSE(findDriverProblem(o.lr));
}

TEST(FlagSettings, ProblemsNameTheFlagAndTheRule) {
  ASSERT_TRUE(parseFlags({"--lr-schedule=warmup", "--cos-min-ratio=0.5"}));
  auto p = findDriverProblem(1e-3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->option, "cos-min-ratio");
  EXPECT_NE(p->rule.find("is not a parameter of --lr-schedule=warmup (WarmupLR"),
            std::string::npos)
      << p->rule;
  ASSERT_TRUE(parseFlags({"--loss-scale=128"}));
  p = findDriverProblem(1e-3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->option, "loss-scale");
  EXPECT_NE(p->rule.find("goes with --precision=fp16"), std::string::npos);
  ASSERT_TRUE(parseFlags({"--max-memory-gb=-1"}));
  p = findDriverProblem(1e-3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->option, "max-memory-gb");
}

TEST(FlagSettings, ADeepSpeedConfigSetsTheFlagsTheCommandLineLeft) {
  std::string path = ::testing::TempDir() + "zero-opt-driver-test-config.json";
  std::ofstream(path) << R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2},
    "optimizer": {"type": "AdamW", "params": {"lr": 0.0005}}})";
  std::string deepspeed = "--deepspeed=" + path;
  ASSERT_TRUE(parseFlags({deepspeed.c_str(), "--world-size=2", "--lr=0.001"}));
  std::optional<int64_t> micro;
  ASSERT_TRUE(applyDeepSpeedConfig(micro));
  EXPECT_EQ(micro, 2);
  ZeroPipelineOptions o;
  pipelineOptionsFromFlags(o, "plan", {0, 25.0, 2});
  EXPECT_EQ(o.zeroStage, 2);
  EXPECT_EQ(o.gradAccumSteps, 2);
  EXPECT_EQ(o.lr, 0.001); // the command line wins
  std::remove(path.c_str());
}

} // namespace
