//===- CompileOptions.cpp - Options by their flags' names -----------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A DeepSpeed config names the options it sets by their flags' names, with
// values written as on the command line: parsed here as LLVM's command-line
// parsers parse them (llvm/Support/CommandLine.cpp), so a config and a flag give
// the same value.
//
//===----------------------------------------------------------------------===//

#include "zero/Driver/CompileOptions.h"

#include "llvm/ADT/StringExtras.h"

using namespace zero;
using llvm::StringRef;

namespace {

bool parse(StringRef text, bool &v) {
  if (text == "true" || text == "TRUE" || text == "True" || text == "1")
    return v = true, true;
  if (text == "false" || text == "FALSE" || text == "False" || text == "0")
    return v = false, true;
  return false;
}
bool parse(StringRef text, int &v) { return !text.getAsInteger(0, v); }
bool parse(StringRef text, int64_t &v) { return !text.getAsInteger(0, v); }
bool parse(StringRef text, double &v) { return llvm::to_float(text, v); }
bool parse(StringRef text, std::string &v) { return v = text.str(), true; }

template <typename T> bool setFrom(Setting<T> &s, StringRef text) {
  T v{};
  if (!parse(text, v))
    return false;
  s = v;
  s.given = true;
  return true;
}

} // namespace

bool CompileOptions::has(StringRef name) const {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  if (name == NAME)                                                                    \
    return true;
#include "zero/Pipeline/ZeroPipelineOptions.def"
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  if (name == NAME)                                                                    \
    return true;
#include "zero/Driver/CompileOptions.def"
  return false;
}

bool CompileOptions::isGiven(StringRef name) const {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  if (name == NAME)                                                                    \
    return FIELD.given;
#include "zero/Pipeline/ZeroPipelineOptions.def"
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  if (name == NAME)                                                                    \
    return FIELD.given;
#include "zero/Driver/CompileOptions.def"
  return false;
}

bool CompileOptions::set(StringRef name, StringRef value) {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  if (name == NAME)                                                                    \
    return setFrom(FIELD, value);
#include "zero/Pipeline/ZeroPipelineOptions.def"
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  if (name == NAME)                                                                    \
    return setFrom(FIELD, value);
#include "zero/Driver/CompileOptions.def"
  return false;
}
