//===- ZeroOptDriverTest.cpp - zero-opt's flags and compile session -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "ZeroOptFlags.h" // tools/zero-opt: the only reader of the flags

#include "zero/Driver/CompileOptions.h"
#include "zero/Driver/OptionSettings.h"
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

TEST(ZeroOptFlags, TheFlagsBecomeOptionsMarkedGiven) {
  ASSERT_TRUE(parseFlags({"--zero-stage=3", "--lr=0.01", "--report=json",
                          "--input-shape", "tokens=2x8", "--warmup-steps=5"}));
  CompileOptions o = flags::compileOptionsFromFlags();
  EXPECT_EQ(o.zeroStage, 3);
  EXPECT_TRUE(o.zeroStage.given);
  EXPECT_EQ(o.lr, 0.01);
  EXPECT_EQ(o.warmupSteps, 5);
  EXPECT_TRUE(o.warmupSteps.given);
  EXPECT_EQ(o.worldSize, 1); // the default, not given
  EXPECT_FALSE(o.worldSize.given);
  EXPECT_TRUE(o.report.given);
  EXPECT_EQ(o.report, "json");
  ASSERT_EQ(o.inputShapes.size(), 1u);
  EXPECT_EQ(o.inputShapes[0], "tokens=2x8");
  ASSERT_TRUE(parseFlags({}));
  EXPECT_FALSE(flags::compileOptionsFromFlags().report.given);
}

// The session's options are values: set by name as a DeepSpeed config sets them,
// parsed as LLVM's parsers parse the flags, no flag involved.
TEST(CompileOptions, SetByNameParsesAsTheFlagWould) {
  CompileOptions o;
  EXPECT_TRUE(o.set("zero-stage", "0x3")); // LLVM's integer parser takes a radix prefix
  EXPECT_EQ(o.zeroStage, 3);
  EXPECT_TRUE(o.zeroStage.given);
  EXPECT_TRUE(o.set("no-overlap", "True"));
  EXPECT_TRUE(o.noOverlap);
  EXPECT_TRUE(o.set("lr", "5e-4"));
  EXPECT_EQ(o.lr, 5e-4);
  EXPECT_TRUE(o.set("lr-schedule", "warmup"));
  EXPECT_EQ(o.lrSchedule, "warmup");
  EXPECT_FALSE(o.set("lr", "fast"));
  EXPECT_EQ(o.lr, 5e-4); // unchanged
  EXPECT_FALSE(o.set("no-overlap", "yes"));
  EXPECT_FALSE(o.set("warmup-steps", "1.5"));
  EXPECT_FALSE(o.set("no-such-option", "1"));
  EXPECT_FALSE(o.has("no-such-option"));
  EXPECT_TRUE(o.has("max-memory-gb"));
  EXPECT_FALSE(o.isGiven("max-memory-gb"));
}

TEST(OptionSettings, PipelineOptionsFollowTheOptions) {
  CompileOptions o;
  o.zeroStage = 3;
  o.worldSize = 4;
  o.optimizer = "sgd";
  o.recompute = "blocks";
  ZeroPipelineOptions p;
  pipelineOptionsFrom(o, p, "plan", {recomputeLevelOf(o), 7.0, 3});
  EXPECT_EQ(p.zeroStage, 3);
  EXPECT_EQ(p.worldSize, 4);
  EXPECT_EQ(p.optimizer, "sgd");
  EXPECT_EQ(p.level, "plan");
  EXPECT_EQ(p.recomputeLevel, 2); // blocks
  EXPECT_EQ(p.bucketSizeMb, 7.0); // the budget's or auto-tune's choice wins
  EXPECT_EQ(p.prefetchBuckets, 3);
  EXPECT_FALSE(findDriverProblem(o, p.lr));
}

TEST(OptionSettings, ProblemsNameTheFlagAndTheRule) {
  ASSERT_TRUE(parseFlags({"--lr-schedule=warmup", "--cos-min-ratio=0.5"}));
  auto p = findDriverProblem(flags::compileOptionsFromFlags(), 1e-3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->option, "cos-min-ratio");
  EXPECT_NE(p->rule.find("is not a parameter of --lr-schedule=warmup (WarmupLR"),
            std::string::npos)
      << p->rule;
  ASSERT_TRUE(parseFlags({"--loss-scale=128"}));
  p = findDriverProblem(flags::compileOptionsFromFlags(), 1e-3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->option, "loss-scale");
  EXPECT_NE(p->rule.find("goes with --precision=fp16"), std::string::npos);
  CompileOptions o;
  o.maxMemoryGb = -1;
  p = findDriverProblem(o, 1e-3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->option, "max-memory-gb");
}

TEST(OptionSettings, ADeepSpeedConfigSetsTheOptionsNotGiven) {
  std::string path = ::testing::TempDir() + "zero-opt-driver-test-config.json";
  std::ofstream(path) << R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2},
    "optimizer": {"type": "AdamW", "params": {"lr": 0.0005}}})";
  CompileOptions o;
  o.deepspeedConfig = path;
  o.worldSize = 2;
  o.worldSize.given = true;
  o.lr = 0.001;
  o.lr.given = true;
  std::optional<int64_t> micro;
  ASSERT_TRUE(applyDeepSpeedConfig(o, micro));
  EXPECT_EQ(micro, 2);
  ZeroPipelineOptions p;
  pipelineOptionsFrom(o, p, "plan", {0, 25.0, 2});
  EXPECT_EQ(p.zeroStage, 2);
  EXPECT_EQ(p.gradAccumSteps, 2);
  EXPECT_EQ(p.lr, 0.001); // the given value wins
  EXPECT_EQ(o.configOrigins.at("zero-stage").key, "zero_optimization.stage");
  std::remove(path.c_str());
}

} // namespace
