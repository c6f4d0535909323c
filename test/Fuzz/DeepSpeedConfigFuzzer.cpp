//===- DeepSpeedConfigFuzzer.cpp - libFuzzer target: a DeepSpeed config ---===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each input is the text of a DeepSpeed JSON config. It goes through what
// `zero-opt --deepspeed` does with one: the bounded JSON parse, the key tables
// and the batch arithmetic (for a world size of 1 to 8 taken from the input's
// length), then the flags it sets become the zero pipeline's options and are
// checked by the same rules as zero-opt's flags (findOptionProblem). Errors are
// fine; crashes, hangs, leaks and undefined behaviour are findings. Built by
// utils/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/DeepSpeedConfig.h"

#include "zero/InitAll.h"
#include "zero/Pipeline/ZeroPipeline.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  zero::DeepSpeedConfig config;
  std::string error;
  int64_t world = 1 + (int64_t)(size % 8);
  if (!zero::readDeepSpeedConfigText(text, "fuzz.json", world, config, error))
    return 0;
  // The flags the config sets that are pipeline options, in the pipeline's syntax.
  std::string options;
  for (const zero::ConfigFlag &f : config.flags)
    if (f.value.find_first_of(" ={}'\"") == std::string::npos)
      options += f.flag + "=" + f.value + " ";
  zero::ZeroPipelineOptions parsed;
  std::string parseError;
  llvm::raw_string_ostream os(parseError);
  // Flags that are zero-opt's own (the schedule's, loss scaling's) are not
  // options of the pipeline: parsing fails on them, and each is tried alone.
  if (failed(parsed.parseFromString(options, os))) {
    for (const zero::ConfigFlag &f : config.flags) {
      zero::ZeroPipelineOptions one;
      std::string e;
      llvm::raw_string_ostream es(e);
      if (f.value.find_first_of(" ={}'\"") == std::string::npos &&
          succeeded(one.parseFromString(f.flag + "=" + f.value, es)))
        (void)zero::findOptionProblem(one);
    }
    return 0;
  }
  (void)zero::findOptionProblem(parsed);
  return 0;
}
