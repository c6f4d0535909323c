//===- CompileOptions.h - What one compilation is asked for -----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Every option of a compile session, as values: the zero pipeline's
// (ZeroPipelineOptions.def) and the driver's own (CompileOptions.def). A tool
// fills it (zero-opt from its flags, tools/zero-opt/ZeroOptFlags.cpp); a
// DeepSpeed config then sets the ones not given (OptionSettings.cpp); the session
// reads only this. Nothing below tools/ reads a command-line flag.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_COMPILEOPTIONS_H
#define ZERO_DRIVER_COMPILEOPTIONS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace zero {

/// One option: its flag's name (for messages), its value, and whether it was
/// given (on the command line, or by a DeepSpeed config) rather than defaulted.
/// A string setting is a std::string, as LLVM's string flags are.
template <typename T, bool IsClass = std::is_class_v<T>> struct Setting;

template <typename T> struct Setting<T, false> {
  const char *name;
  T value;
  bool given = false;
  Setting(const char *name, T value) : name(name), value(value) {}
  operator T() const { return value; }
  T getValue() const { return value; }
  Setting &operator=(T v) {
    value = v;
    return *this;
  }
};

template <typename T> struct Setting<T, true> : T {
  const char *name;
  bool given = false;
  Setting(const char *name, const char *value) : T(value), name(name) {}
  const T &getValue() const { return *this; }
  Setting &operator=(const T &v) {
    T::operator=(v);
    return *this;
  }
};

struct CompileOptions {
#define ZERO_PIPELINE_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)    \
  Setting<TYPE> FIELD{NAME, DEFAULT};
#include "zero/Pipeline/ZeroPipelineOptions.def"
#define ZERO_DRIVER_FLAG(TYPE, FIELD, NAME, DEFAULT, GROUP, VALUES, DESCRIPTION)      \
  Setting<TYPE> FIELD{NAME, DEFAULT};
#include "zero/Driver/CompileOptions.def"

  /// --input-shape NAME=DxD..., --constant-input NAME=FILE.pb, each as given.
  std::vector<std::string> inputShapes, constantInputs;
  /// --report: given (with "", table or json) when a report is asked for.
  Setting<std::string> report{"report", ""};

  /// Where a DeepSpeed config's values came from, by flag name: the key and the
  /// value as the file gave them, for messages about them.
  struct ConfigOrigin {
    std::string key, value;
  };
  std::map<std::string, ConfigOrigin> configOrigins;

  /// By a flag's name without dashes ("lr"): whether there is such an option,
  /// whether it was given, and set(), which parses `value` as the flag would
  /// and marks it given; false (nothing changed) when there is no such option
  /// or `value` is not of its type.
  bool has(llvm::StringRef name) const;
  bool isGiven(llvm::StringRef name) const;
  bool set(llvm::StringRef name, llvm::StringRef value);
};

} // namespace zero

#endif // ZERO_DRIVER_COMPILEOPTIONS_H
