//===- FusedProgram.cpp - compute.fused as a fused kernel's program -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Conversion/ComputeToPlan/FusedProgram.h"

#include "zplan/FusedProgram.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;
using namespace zero;
using FusedOpKind = zrt::fused::Op;

static std::optional<zrt::fused::Type> typeOf(Value v) {
  Type e = cast<RankedTensorType>(v.getType()).getElementType();
  if (e.isF32())
    return zrt::fused::Type::F32;
  if (e.isBF16())
    return zrt::fused::Type::BF16;
  if (e.isF16())
    return zrt::fused::Type::F16;
  return std::nullopt;
}

static FusedOpKind opOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, FusedOpKind>(op)
      .Case([](compute::ConstantOp) { return FusedOpKind::Const; })
#define ZERO_UNARY_OP(ID, ...) .Case([](compute::ID##Op) { return FusedOpKind::ID; })
#include "zplan/UnaryOps.def"
      .Case([](compute::AddOp) { return FusedOpKind::Add; })
      .Case([](compute::SubOp) { return FusedOpKind::Sub; })
      .Case([](compute::MulOp) { return FusedOpKind::Mul; })
      .Case([](compute::DivOp) { return FusedOpKind::Div; })
      .Case([](compute::PowOp) { return FusedOpKind::Pow; })
      .Case([](compute::CastOp) { return FusedOpKind::Cast; })
      .Case([](compute::WhereOp) { return FusedOpKind::Where; })
      .Case([](compute::ReluGradOp) { return FusedOpKind::ReluGrad; })
      .Case([](compute::GeluGradOp) { return FusedOpKind::GeluGrad; })
      .Case([](compute::GeluTanhGradOp) { return FusedOpKind::GeluTanhGrad; })
      .Default([](Operation *) { return FusedOpKind::Count; });
}

FailureOr<SmallVector<int64_t>> zero::encodeFusedProgram(compute::FusedOp fused) {
  Block &body = fused.getBody().front();
  DenseMap<Value, int64_t> id;
  for (BlockArgument arg : body.getArguments())
    id[arg] = arg.getArgNumber();
  if (body.getNumArguments() > (unsigned)zrt::fused::kMaxInputs)
    return fused.emitOpError("has ") << body.getNumArguments() << " inputs; a fused kernel "
                                     << "takes at most " << zrt::fused::kMaxInputs;
  SmallVector<int64_t> words;
  for (Operation &op : body.without_terminator()) {
    FusedOpKind kind = opOf(&op);
    std::optional<zrt::fused::Type> type = typeOf(op.getResult(0));
    if (kind == FusedOpKind::Count || !type)
      return op.emitOpError("has no fused kernel instruction");
    int64_t operands[3] = {0, 0, 0};
    if (auto cst = dyn_cast<compute::ConstantOp>(op)) {
      // The one element, as a double (exact for f32, bf16 and f16 values).
      auto values = cast<DenseElementsAttr>(cst.getValue());
      double v = (*values.getValues<APFloat>().begin()).convertToDouble();
      std::memcpy(&operands[0], &v, sizeof v);
    } else {
      for (auto [k, operand] : llvm::enumerate(op.getOperands()))
        operands[k] = id.lookup(operand);
    }
    id[op.getResult(0)] = body.getNumArguments() + words.size() / zrt::fused::kWords;
    words.append({(int64_t)kind, (int64_t)*type, operands[0], operands[1], operands[2]});
  }
  if (words.size() / zrt::fused::kWords > (size_t)zrt::fused::kMaxInstructions)
    return fused.emitOpError("has ") << words.size() / zrt::fused::kWords
                                     << " instructions; a fused kernel runs at most "
                                     << zrt::fused::kMaxInstructions;
  auto yield = cast<compute::YieldOp>(body.getTerminator());
  if (id.lookup(yield.getValue()) != (int64_t)(body.getNumArguments() +
                                               words.size() / zrt::fused::kWords - 1))
    return fused.emitOpError("must yield the value of its last op");
  return words;
}
