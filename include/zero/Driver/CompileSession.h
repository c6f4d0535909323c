//===- CompileSession.h - One zero-opt compilation --------------*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// What zero-opt does with a model once its flags are parsed: import it (ONNX) or
// read it (MLIR), pick the settings (auto-tune, the memory budget), run the
// pipeline down to the level asked for, print the report and write the plan or
// IR, whole or not at all.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DRIVER_COMPILESESSION_H
#define ZERO_DRIVER_COMPILESESSION_H

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringRef.h"

namespace zero {

/// Whether `path` names an ONNX model (by its suffix: .onnx, or .onnxtxt, the
/// text form the lit tests use).
bool isOnnxFile(llvm::StringRef path);

/// Compiles `input` as zero-opt's flags ask and writes `output` ("-": stdout);
/// the exit status (1 after printing what went wrong).
int compileWithFlags(llvm::StringRef input, llvm::StringRef output,
                     mlir::DialectRegistry &registry);

} // namespace zero

#endif // ZERO_DRIVER_COMPILESESSION_H
