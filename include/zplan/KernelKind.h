//===- KernelKind.h - A kernel kind's two spellings --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The schema's Kernel::Kind (MATMUL) is the plan dialect's KernelKind (matmul) in
// uppercase: the compiler maps one to the other by name, the runtime names kinds in
// its messages and profiles the way the dialect prints them.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_KERNELKIND_H
#define ZPLAN_KERNELKIND_H

#include "zplan.pb.h"

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace zero::zplan {

/// "matmul" for MATMUL; "kind 99" for a number the schema does not have.
inline std::string kernelKindName(int kind) {
  if (!Kernel::Kind_IsValid(kind))
    return "kind " + std::to_string(kind);
  std::string s = Kernel::Kind_Name(static_cast<Kernel::Kind>(kind));
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The kind spelled `name` in lowercase, if the schema has it.
inline std::optional<Kernel::Kind> parseKernelKind(std::string_view name) {
  std::string upper(name);
  for (char &c : upper) {
    if (std::isupper(static_cast<unsigned char>(c)))
      return std::nullopt; // the schema's spelling is not the dialect's
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  Kernel::Kind kind;
  if (Kernel::Kind_Parse(upper, &kind) && kind != Kernel::KIND_UNSPECIFIED)
    return kind;
  return std::nullopt;
}

/// The synchronous collective a split-phase kernel (ALL_GATHER_START, ...) begins;
/// any other kind as it is.
inline Kernel::Kind synchronousKind(Kernel::Kind kind) {
  switch (kind) {
  case Kernel::ALL_REDUCE_START:
    return Kernel::ALL_REDUCE;
  case Kernel::ALL_GATHER_START:
    return Kernel::ALL_GATHER;
  case Kernel::REDUCE_SCATTER_START:
    return Kernel::REDUCE_SCATTER;
  default:
    return kind;
  }
}

} // namespace zero::zplan

#endif // ZPLAN_KERNELKIND_H
