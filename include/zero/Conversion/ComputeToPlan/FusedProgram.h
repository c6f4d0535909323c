//===- FusedProgram.h - compute.fused as a fused kernel's program -*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_CONVERSION_COMPUTETOPLAN_FUSEDPROGRAM_H
#define ZERO_CONVERSION_COMPUTETOPLAN_FUSEDPROGRAM_H

#include "zero/Dialect/Compute/IR/ComputeDialect.h"

namespace zero {

/// The `program` attribute of the `fused` kernel that runs `op`'s body
/// (zplan/FusedProgram.h): block argument i is value i, then one instruction per
/// op of the body in order. Fails with an error on `op` for what the format cannot
/// hold.
mlir::FailureOr<llvm::SmallVector<int64_t>> encodeFusedProgram(compute::FusedOp op);

} // namespace zero

#endif // ZERO_CONVERSION_COMPUTETOPLAN_FUSEDPROGRAM_H
