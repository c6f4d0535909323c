//===- ExportZplan.cpp - Serialize a plan.program to a .zplan -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zero/Target/Zplan/ExportZplan.h"
#include "zero/Dialect/Zero/IR/ZeroAttributes.h"
#include "zero/Support/ElementBytes.h"
#include "zero/Dialect/Plan/IR/PlanDialect.h"

#include "zplan.pb.h"
#include "zplan/KernelKind.h"
#include "zplan/PlanFormat.h"
#include "zrt/PlanKernelCheck.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

using namespace mlir;

namespace {

/// The plan file's role for the plan dialect's: the same cases, named apart.
zero::zplan::Role roleOf(zero::plan::BufferRole role) {
  using zero::plan::BufferRole;
  switch (role) {
  case BufferRole::temp:
    return zero::zplan::TEMP;
  case BufferRole::param:
    return zero::zplan::PARAM;
  case BufferRole::input:
    return zero::zplan::INPUT;
  case BufferRole::constant:
    return zero::zplan::CONSTANT;
  case BufferRole::state:
    return zero::zplan::STATE;
  case BufferRole::master:
    return zero::zplan::MASTER;
  case BufferRole::runtime:
    return zero::zplan::RUNTIME;
  }
  llvm_unreachable("every BufferRole has a plan-file role");
}

/// The schema's kind of the same name (matmul -> MATMUL).
FailureOr<zero::zplan::Kernel::Kind> kindOf(zero::plan::KernelOp k) {
  StringRef name = zero::plan::stringifyKernelKind(k.getKernel());
  if (auto kind = zero::zplan::parseKernelKind(name))
    return *kind;
  return k.emitOpError("internal error: the plan file's schema has no kernel kind '")
         << name << "'";
}

FailureOr<zero::zplan::DType> dtypeOf(Location loc, Type t) {
  if (t.isF32())
    return zero::zplan::F32;
  if (t.isF64())
    return zero::zplan::F64;
  if (t.isBF16())
    return zero::zplan::BF16;
  if (t.isF16())
    return zero::zplan::F16;
  if (t.isInteger(1))
    return zero::zplan::BOOL;
  if (t.isUnsignedInteger(8))
    return zero::zplan::U8;
  if (t.isInteger(8))
    return zero::zplan::I8;
  if (t.isInteger(32))
    return zero::zplan::I32;
  if (t.isInteger(64))
    return zero::zplan::I64;
  return emitError(loc) << "element type " << t << " has no plan dtype";
}

/// Dense little-endian bytes of a constant, one byte per i1.
std::string constantBytes(ElementsAttr value) {
  std::string out;
  Type et = value.getElementType();
  if (auto ft = dyn_cast<FloatType>(et)) {
    for (APFloat f : value.getValues<APFloat>()) {
      if (ft.isF32()) {
        float x = f.convertToFloat();
        out.append(reinterpret_cast<const char *>(&x), sizeof(x));
      } else if (ft.getWidth() == 16) { // bf16, f16: their own bits
        zrt::putLE(out, f.bitcastToAPInt().getZExtValue(), 2);
      } else {
        double x = f.convertToDouble();
        out.append(reinterpret_cast<const char *>(&x), sizeof(x));
      }
    }
    return out;
  }
  int bytes = (int)zero::elementBytes(et);
  for (APInt v : value.getValues<APInt>())
    zrt::putLE(out, v.getZExtValue(), bytes);
  return out;
}

LogicalResult convertAttr(Location loc, StringRef name, Attribute a,
                          zero::zplan::Attr &out) {
  if (auto b = dyn_cast<BoolAttr>(a))
    out.set_i(b.getValue());
  else if (auto i = dyn_cast<IntegerAttr>(a))
    out.set_i(i.getInt());
  else if (auto f = dyn_cast<FloatAttr>(a))
    out.set_f(f.getValueAsDouble());
  else if (auto s = dyn_cast<StringAttr>(a))
    out.set_s(s.str());
  else if (auto arr = dyn_cast<DenseI64ArrayAttr>(a))
    for (int64_t v : arr.asArrayRef())
      out.mutable_ints()->add_values(v);
  else
    return emitError(loc) << "kernel attribute '" << name
                          << "' cannot be written to a plan";
  return success();
}

} // namespace

FailureOr<zero::zplan::Plan> zero::buildZplan(ModuleOp module, StringRef source) {
  auto program = module.lookupSymbol<plan::ProgramOp>("main");
  if (!program)
    return module.emitError("no plan.program @main to write; lower the module "
                            "with --convert-compute-to-plan first");
  zplan::Plan out;
  out.set_version(zrt::kPlanVersion);
  out.set_world_size(program.getWorldSize());
  out.set_arena_bytes(program.getArenaBytes());
  if (auto host = program.getHostArenaBytes())
    out.set_host_arena_bytes(*host);
  if (auto nvme = program.getNvmeArenaBytes())
    out.set_nvme_arena_bytes(*nvme);
  out.set_source(source.str());
  // Mixed precision: what zero-opt recorded on the module (--precision and the
  // loss-scaling flags), for zero-run's loss scaler.
  if (auto p = module->getAttrOfType<StringAttr>(zops::attr::kPrecision))
    out.set_precision(p.str());
  if (auto ls = module->getAttrOfType<DictionaryAttr>(zops::attr::kLossScaling)) {
    auto num = [&](StringRef key) {
      auto a = ls.getAs<FloatAttr>(key);
      return a ? a.getValueAsDouble() : 0.0;
    };
    zplan::LossScaling *l = out.mutable_loss_scaling();
    l->set_scale(num("scale"));
    l->set_initial_scale_power((int)num("initial_scale_power"));
    l->set_window((int64_t)num("window"));
    l->set_hysteresis((int)num("hysteresis"));
    l->set_min_scale(num("min_scale"));
  }
  if (auto stage = module->getAttrOfType<IntegerAttr>(zops::attr::kStage))
    out.set_zero_stage((int32_t)stage.getInt());
  if (auto every = module->getAttrOfType<IntegerAttr>(zops::attr::kPrintEvery))
    out.set_print_every(every.getInt());
  if (module->hasAttr(zops::attr::kProfile))
    out.set_profile(true);
  if (auto ls = module->getAttrOfType<DictionaryAttr>(zops::attr::kLrSchedule)) {
    auto num = [&](StringRef key) {
      auto a = ls.getAs<FloatAttr>(key);
      return a ? a.getValueAsDouble() : 0.0;
    };
    auto str = [&](StringRef key) {
      auto a = ls.getAs<StringAttr>(key);
      return a ? a.str() : std::string();
    };
    zplan::LrSchedule *l = out.mutable_lr_schedule();
    l->set_kind(str("kind"));
    l->set_min_lr(num("min_lr"));
    l->set_max_lr(num("max_lr"));
    l->set_warmup_steps((int64_t)num("warmup_steps"));
    l->set_warmup_type(str("warmup_type"));
    l->set_total_steps((int64_t)num("total_steps"));
    l->set_base_lr(num("base_lr"));
    l->set_cos_min_ratio(num("cos_min_ratio"));
    l->set_warmup_min_ratio(num("warmup_min_ratio"));
  }
  DenseMap<Value, int> index;
  for (Operation &op : program.getBody().front()) {
    if (auto buf = dyn_cast<plan::BufferOp>(op)) {
      index[buf.getResult()] = out.buffers_size();
      zplan::Buffer *pb = out.add_buffers();
      MemRefType t = buf.getResult().getType();
      auto dtype = dtypeOf(buf.getLoc(), t.getElementType());
      if (failed(dtype))
        return failure();
      pb->set_dtype(*dtype);
      pb->set_offset(buf.getOffset());
      pb->set_bytes(buf.getSizeInBytes());
      for (int64_t d : t.getShape())
        pb->add_shape(d);
      pb->set_role(roleOf(buf.getRole()));
      if (auto name = buf.getName())
        pb->set_name(name->str());
      if (Value root = buf.getViewOf())
        pb->set_view_of(index.lookup(root));
      pb->set_host(buf.getHost());
      pb->set_nvme(buf.getNvme());
      if (auto idx = buf.getIndex())
        pb->set_index(*idx);
      if (auto micro = buf->getAttrOfType<IntegerAttr>("micro_step")) {
        pb->set_micro_step((int32_t)micro.getInt());
        out.set_grad_accum_steps(std::max<int32_t>(out.grad_accum_steps(),
                                                   (int32_t)micro.getInt() + 1));
      }
      if (auto value = buf.getValue())
        pb->set_data(constantBytes(*value));
      if (auto members = buf->getAttrOfType<ArrayAttr>("bucket_members")) {
        zplan::BucketLayout *layout = pb->mutable_bucket();
        layout->set_elements(
            buf->getAttrOfType<IntegerAttr>("bucket_elements").getInt());
        for (Attribute a : members) {
          auto d = cast<DictionaryAttr>(a);
          zplan::BucketMember *m = layout->add_members();
          m->set_name(d.getAs<StringAttr>("name").str());
          m->set_offset(d.getAs<IntegerAttr>("offset").getInt());
          for (int64_t dim : d.getAs<DenseI64ArrayAttr>("shape").asArrayRef())
            m->add_shape(dim);
        }
      }
    } else if (auto k = dyn_cast<plan::KernelOp>(op)) {
      zplan::Kernel *pk = out.add_kernels();
      FailureOr<zplan::Kernel::Kind> kind = kindOf(k);
      if (failed(kind))
        return failure();
      pk->set_kind(*kind);
      for (Value v : k.getInputs())
        pk->add_inputs(index.lookup(v));
      for (Value v : k.getOutputs())
        pk->add_outputs(index.lookup(v));
      for (NamedAttribute a : k.getAttrs())
        if (failed(convertAttr(k.getLoc(), a.getName(), a.getValue(),
                               (*pk->mutable_attrs())[a.getName().str()])))
          return failure();
      std::string loc;
      llvm::raw_string_ostream ls(loc);
      k.getLoc().print(ls);
      pk->set_loc(loc);
    } else if (auto ret = dyn_cast<plan::ReturnOp>(op)) {
      auto names = ret.getNames();
      for (auto [i, v] : llvm::enumerate(ret.getResults())) {
        zplan::Output *o = out.add_outputs();
        o->set_buffer(index.lookup(v));
        if (names && i < names->size())
          o->set_name(cast<StringAttr>((*names)[i]).str());
      }
    }
  }
  // The runtime's own checks, every kernel bound: a plan zero-run would refuse is
  // a compiler bug, reported here rather than as a failed run.
  std::string problem = zrt::checkPlanKernels(out, "the plan");
  if (!problem.empty())
    return program.emitError("internal error, the plan fails zero-run's checks: ")
           << problem;
  return out;
}

LogicalResult zero::exportZplan(ModuleOp module, llvm::raw_ostream &os,
                                StringRef source) {
  FailureOr<zplan::Plan> built = buildZplan(module, source);
  if (failed(built))
    return failure();
  const zplan::Plan &out = *built;
  auto program = module.lookupSymbol<plan::ProgramOp>("main");
  std::string payload;
  // Deterministic: the same module gives the same bytes (kernel attributes are a
  // protobuf map, whose order is otherwise the hash table's).
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (out.ByteSizeLong() > (size_t)INT32_MAX || !out.SerializeToCodedStream(&coded))
      return program.emitError("plan does not serialize (over 2 GiB?)");
  }
  os << zrt::encodePlanHeader(payload) << payload;
  return success();
}
