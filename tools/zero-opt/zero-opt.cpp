//===- zero-opt.cpp - The zero-opt compiler driver ------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Two ways in:
//   zero-opt model.onnx [--mode=train|inference] [--optimizer=adamw ...] -o step.zplan
//       imports the model and compiles its training step (or its forward pass)
//       down to a plan file, or prints the IR of the level named by --emit;
//   zero-opt file.mlir --some-pass ...
//       behaves as mlir-opt with the zero-opt dialects and passes (lit tests).
//
// The flags live here (ZeroOptFlags.cpp), the only place they are read: the
// second way in turns them into CompileOptions for a CompileSession, which with
// the DeepSpeed config, the budget, auto-tune and the compilation itself lives
// in lib/Driver.
//
//===----------------------------------------------------------------------===//

#include "ZeroOptFlags.h"

#include "zero/Driver/CompileSession.h"
#include "zero/Import/ONNX/ImportOnnx.h"
#include "zero/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace zero::flags;

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  for (int i = 1; i < argc; ++i) {
    StringRef a(argv[i]);
    if (a == "--help" || a == "-help" || a == "-h") {
      zero::flags::printHelp(llvm::outs());
      return 0;
    }
    if (a == "--list-onnx-ops") {
      for (const auto &[op, versions] : zero::supportedOnnxOps()) {
        llvm::outs() << op;
        for (int v : versions)
          llvm::outs() << " " << v;
        llvm::outs() << "\n";
      }
      return 0;
    }
  }
  DialectRegistry registry;
  zero::registerAllDialects(registry);
  zero::registerAllPasses();
  auto [inputFile, outputFile] =
      registerAndParseCLIOptions(argc, argv, "zero-opt: ZeRO training compiler\n",
                                 registry);

  if (!zero::isOnnxFile(inputFile) && emitLevel.empty() && !report.getNumOccurrences())
    return asMainReturnCode(MlirOptMain(argc, argv, inputFile, outputFile, registry));

  // MLIR's pass-manager flags (--mlir-timing, --mlir-print-ir-*) apply to the
  // pass manager that compiles the step.
  zero::CompileSession session(zero::flags::compileOptionsFromFlags(), registry,
                               [](PassManager &pm) { return applyPassManagerCLOptions(pm); });
  return session.run(inputFile, outputFile);
}
