//===- CompileSession.h - One zero-opt compilation --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A compile session: an ONNX model (or MLIR at any level) compiled to the plan
// file, or the IR of a level, as its CompileOptions ask. It reads only those
// options (a tool fills them: zero-opt from its flags); a DeepSpeed config named
// in them sets the options not given, then every value is checked once.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_COMPILESESSION_H
#define ZERO_DRIVER_COMPILESESSION_H

#include "zero/Driver/CompileOptions.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <functional>

namespace zero {

bool isOnnxFile(llvm::StringRef path);

/// What a tool adds to the pass manager that compiles the step (zero-opt: MLIR's
/// own pass-manager flags, --mlir-timing, --mlir-print-ir-*).
using PassManagerSetup = std::function<mlir::LogicalResult(mlir::PassManager &)>;

class CompileSession {
public:
  CompileSession(CompileOptions options, mlir::DialectRegistry &registry,
                 PassManagerSetup setupPassManager = {});

  /// Compiles `input` to `output` ("-": stdout); messages go to stderr. Returns
  /// the exit status: 0, or 1 after a message that names the problem.
  int run(llvm::StringRef input, llvm::StringRef output);

  /// The options as compiled: after the DeepSpeed config, once run.
  const CompileOptions &compiledOptions() const { return options; }

private:
  CompileOptions options;
  mlir::DialectRegistry &registry;
  PassManagerSetup setupPassManager;
};

} // namespace zero

#endif // ZERO_DRIVER_COMPILESESSION_H
