//===- CudaBinders.cpp - The CUDA kernel table ----------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Each binder first binds the CPU kernel of the same kind: that checks every
// shape, dtype and attribute once, in one place for both backends (the host
// closure it returns is dropped). Then it returns a closure that launches on the
// compute stream.
//
//===----------------------------------------------------------------------===//

#include "CublasLoader.h"
#include "CudaContext.h"
#include "CudaLaunch.h"
#include "CudnnAttention.h"
#include "CudnnLoader.h"
#include "GeneratedKernels.h"
#include "QuantizeKernels.h"

#include "../cpu/KernelUtil.h"
#include "../kernels/MatMulGeometry.h"
#include "zrt/BlockQuantization.h"
#include "zrt/Communicator.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>

using namespace zrt;
using namespace zrt::cpu;
using namespace zrt::cuda;

namespace {

void validate(const KernelCall &call) { (void)cpuKernels().at(call.kind)(call); }

Elem elemOf(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return Elem::F32;
  case zero::zplan::F64:
    return Elem::F64;
  case zero::zplan::I32:
    return Elem::I32;
  case zero::zplan::I64:
    return Elem::I64;
  case zero::zplan::I8:
    return Elem::I8;
  case zero::zplan::BF16:
    return Elem::BF16;
  case zero::zplan::F16:
    return Elem::F16;
  case zero::zplan::U8:
  case zero::zplan::BOOL:
    return Elem::U8;
  default:
    ZRT_FAIL("the CUDA backend has no " << dtypeName(t) << " kernels");
  }
}

Strided stridedOf(const KernelCall &call, const Shape &shape, const Shape &strides) {
  ZRT_CHECK(shape.size() <= (size_t)kMaxRank,
            call.where() << ": rank " << shape.size() << " exceeds the CUDA backend's "
                         << kMaxRank);
  // Extents of 1 dropped and neighbours that step as one merged (a contiguous
  // block, a broadcast run): fewer divisions per element, the same offsets.
  int64_t dims[kMaxRank][2], elements = 1, maxOffset = 0;
  int rank = 0;
  bool nonNegative = true;
  for (int d = (int)shape.size() - 1; d >= 0; --d) {
    elements *= shape[d];
    maxOffset += (shape[d] - 1) * strides[d];
    nonNegative = nonNegative && strides[d] >= 0;
    if (shape[d] == 1)
      continue;
    if (rank && strides[d] == dims[rank - 1][1] * dims[rank - 1][0]) {
      dims[rank - 1][0] *= shape[d];
      continue;
    }
    dims[rank][0] = shape[d];
    dims[rank][1] = strides[d];
    ++rank;
  }
  Strided s;
  s.rank = rank;
  for (int i = 0; i < rank; ++i) { // outermost first
    s.shape[i] = dims[rank - 1 - i][0];
    s.stride[i] = dims[rank - 1 - i][1];
  }
  s.contiguous = isRowMajor(s);
  const int64_t k31 = int64_t(1) << 31;
  s.index32 = nonNegative && elements < k31 && maxOffset < k31;
  return s;
}

/// A device copy of a host array, freed with the closure that uses it.
template <typename T> std::shared_ptr<T> deviceArray(const std::vector<T> &host) {
  T *p = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(1, host.size()) * sizeof(T)));
  ZERO_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return std::shared_ptr<T>(p, [](T *q) { cudaFree(q); });
}

BoundKernel bindBinary(const KernelCall &call, BinaryOp op) {
  validate(call);
  TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  Shape shape = out.shape;
  Strided sa = stridedOf(call, shape, broadcastStrides(a.shape, shape));
  Strided sb = stridedOf(call, shape, broadcastStrides(b.shape, shape));
  Elem t = elemOf(a.dtype);
  int64_t n = out.numel();
  return [=] {
    binary(context().compute, op, t, a.data, sa, b.data, sb, out.data, n,
           context().errorFlag);
  };
}

BoundKernel bindPow(const KernelCall &call) {
  validate(call);
  TensorView a = call.ins[0], b = call.ins[1], out = call.outs[0];
  Strided sa = stridedOf(call, out.shape, broadcastStrides(a.shape, out.shape));
  Strided sb = stridedOf(call, out.shape, broadcastStrides(b.shape, out.shape));
  Elem ta = elemOf(a.dtype), tb = elemOf(b.dtype);
  int64_t n = out.numel();
  return [=] { power(context().compute, ta, tb, a.data, sa, b.data, sb, out.data, n); };
}

BoundKernel bindUnary(const KernelCall &call, UnaryOp op) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  Elem t = elemOf(x.dtype);
  int64_t n = x.numel();
  return [=] { unary(context().compute, op, t, x.data, out.data, n); };
}

BoundKernel bindWhere(const KernelCall &call) {
  validate(call);
  TensorView c = call.ins[0], a = call.ins[1], b = call.ins[2], out = call.outs[0];
  Strided sc = stridedOf(call, out.shape, broadcastStrides(c.shape, out.shape));
  Strided sa = stridedOf(call, out.shape, broadcastStrides(a.shape, out.shape));
  Strided sb = stridedOf(call, out.shape, broadcastStrides(b.shape, out.shape));
  Elem t = elemOf(a.dtype);
  int64_t n = out.numel();
  return [=] { where(context().compute, t, c.data, sc, a.data, sa, b.data, sb, out.data, n); };
}

BoundKernel bindCast(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  Elem from = elemOf(x.dtype), to = elemOf(out.dtype);
  bool toBool = out.dtype == zero::zplan::BOOL;
  int64_t n = x.numel();
  return [=] { cast(context().compute, from, to, toBool, x.data, out.data, n); };
}

/// The CPU binder checked the program, the inputs' roles and their shapes.
BoundKernel bindFused(const KernelCall &call) {
  validate(call);
  std::vector<fused::Instruction> code;
  fused::decodeProgram(call.intsAttr("program"), (int)call.ins.size(), code);
  const TensorView out = call.outs[0];
  FusedArgs args;
  args.inputs = (int)call.ins.size();
  args.instructions = (int)code.size();
  for (int k = 0; k < args.inputs; ++k) {
    const TensorView &in = call.ins[k];
    args.in[k] = in.data;
    args.inType[k] = elemOf(in.dtype);
    args.view[k] = stridedOf(call, out.shape, broadcastStrides(in.shape, out.shape));
  }
  for (int j = 0; j < args.instructions; ++j) {
    const fused::Instruction &ins = code[j];
    int reads = fused::operandCount(ins.op);
    FusedArgs::Step &s = args.code[j];
    s.op = ins.op;
    s.type = ins.type;
    s.a = reads > 0 ? (int)ins.a : 0;
    s.b = reads > 1 ? (int)ins.b : 0;
    s.c = reads > 2 ? (int)ins.c : 0;
    double constant = 0;
    if (ins.op == fused::Op::Const)
      std::memcpy(&constant, &ins.a, sizeof constant);
    s.constant = (float)constant;
  }
  args.out = out.data;
  args.outType = elemOf(out.dtype);
  int64_t n = out.numel();
  std::shared_ptr<GeneratedKernels> generated = context().generated;
  if (!generated) {
    ++context().fallbacks["fused programs on the interpreter kernel"];
    return [=] { fusedElementwise(context().compute, args, n); };
  }

  // The program's own kernel: the arena's addresses are fixed, so their alignment
  // is known now.
  auto aligned = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  std::vector<FusedOperand> operands;
  std::vector<uint64_t> params;
  for (int k = 0; k < args.inputs; ++k) {
    operands.push_back({args.inType[k], args.view[k], aligned(args.in[k])});
    params.push_back(reinterpret_cast<uint64_t>(args.in[k]));
  }
  Strided outView = stridedOf(call, out.shape, stridesOf(out.shape));
  FusedKernelSource source =
      fusedKernelSource(code, operands, {args.outType, outView, aligned(out.data)}, n);
  params.push_back(reinterpret_cast<uint64_t>(out.data));
  params.push_back((uint64_t)n);
  std::shared_ptr<GeneratedKernels::Kernel> kernel = generated->add(source);
  return [=] { generated->launch(*kernel, context().compute, params.data()); };
}

/// One matmul kernel's GEMMs on cuBLASLt, set up once when the plan is bound: the
/// descriptor (transposes; the bias epilogue), the layouts of one group of
/// products (strided-batched), and the heuristic's algorithm for them. Row-major
/// C = A B is column-major C^T = B^T A^T: cuBLASLt's A is our B and its B our A.
/// 16-bit and f32 data accumulate in f32 (TF32 operands when allowed), f64 in f64.
class LtGemm {
public:
  /// `align`: the alignment in bytes (at most 256) of every matrix of A, B, the
  /// addend and the result, as the operands lie: the heuristic picks only
  /// algorithms that work at these (it assumes 256 when not told).
  struct Alignments {
    uint32_t a = 256, b = 256, c = 256, d = 256;
  };
  /// GELU in the epilogue (tanh form): `aux` is one call's pre-activation (the least
  /// aligned: the heuristic chooses its algorithm for that pointer; each call sets its own),
  /// which the forward writes (GELU_AUX, GELU_AUX_BIAS) and the gradient reads
  /// (`grad`: DGELU), lying as the result does.
  struct Gelu {
    const void *aux;
    bool grad;
  };
  /// `lhsSums` (one product only): cuBLASLt's bias-gradient epilogue writes there
  /// the rows of our op(A) summed over k (its B's columns: BGRADB). When the
  /// heuristic has no algorithm with it or with `gelu`, found() is false (the
  /// caller does that part itself); otherwise, that is an error.
  LtGemm(const kernels::MatMulGeometry &g, const kernels::MatMulGeometry::Groups &groups,
         Elem t, const void *bias, bool addend, Alignments align, const std::string &where,
         void *lhsSums = nullptr, Gelu gelu = {nullptr, false}) {
    const CublasLtApi &lt = cublasLt();
    cudaDataType type = t == Elem::BF16  ? CUDA_R_16BF
                        : t == Elem::F16 ? CUDA_R_16F
                        : t == Elem::F64 ? CUDA_R_64F
                                         : CUDA_R_32F;
    f64_ = t == Elem::F64;
    cublasComputeType_t compute = f64_ ? CUBLAS_COMPUTE_64F
                                  : t == Elem::F32 && context().allowTf32
                                      ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : CUBLAS_COMPUTE_32F;
    ZERO_CUBLAS_CHECK(lt.descCreate(&desc_, compute, f64_ ? CUDA_R_64F : CUDA_R_32F));
    int32_t opA = g.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t opB = g.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    ZERO_CUBLAS_CHECK(lt.descSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    ZERO_CUBLAS_CHECK(lt.descSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    ZRT_CHECK(!(bias && lhsSums) && !(gelu.aux && lhsSums) && !(gelu.grad && bias),
              where << ": epilogues cuBLASLt does not combine");
    if (bias || lhsSums || gelu.aux) { // bias: one value per row of C^T, per column of ours
      uint32_t epilogue = gelu.grad  ? CUBLASLT_EPILOGUE_DGELU
                          : gelu.aux ? (bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                             : CUBLASLT_EPILOGUE_GELU_AUX)
                          : bias     ? CUBLASLT_EPILOGUE_BIAS
                                     : CUBLASLT_EPILOGUE_BGRADB;
      ZERO_CUBLAS_CHECK(lt.descSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue));
      if (bias || lhsSums) {
        const void *vector = bias ? bias : lhsSums;
        ZERO_CUBLAS_CHECK(lt.descSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector,
                                              sizeof vector));
      }
    }
    if (gelu.aux) { // the pre-activation lies as D: C^T's leading dimension and stride
      aux_ = gelu.aux;
      int64_t ld = g.c.ld, stride = groups.strideC;
      ZERO_CUBLAS_CHECK(lt.descSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                            &aux_, sizeof aux_));
      ZERO_CUBLAS_CHECK(
          lt.descSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
      if (groups.size > 1)
        ZERO_CUBLAS_CHECK(lt.descSetAttribute(
            desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &stride, sizeof stride));
    }
    auto layout = [&](cublasLtMatrixLayout_t &l, int64_t rows, int64_t cols, int64_t ld,
                      int64_t stride) {
      ZERO_CUBLAS_CHECK(lt.layoutCreate(&l, type, rows, cols, ld));
      int32_t batch = (int32_t)groups.size;
      ZERO_CUBLAS_CHECK(
          lt.layoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
      ZERO_CUBLAS_CHECK(lt.layoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof stride));
    };
    // As stored, column-major: our B is n x k (k x n transposed), our A k x m (m x k).
    layout(a_, g.b.transpose ? g.k : g.n, g.b.transpose ? g.n : g.k, g.b.ld, groups.strideB);
    layout(b_, g.a.transpose ? g.m : g.k, g.a.transpose ? g.k : g.m, g.a.ld, groups.strideA);
    layout(c_, g.n, g.m, g.c.ld, groups.strideC);
    beta_ = addend ? 1 : 0;
    cublasLtMatmulPreference_t pref;
    ZERO_CUBLAS_CHECK(lt.preferenceCreate(&pref));
    uint64_t most = context().gemmWorkspaceBytes;
    ZERO_CUBLAS_CHECK(lt.preferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &most, sizeof most));
    // cuBLASLt's A is our B (see above), its B our A; C is the addend (or D).
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align.b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align.a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, addend ? align.c : align.d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align.d}};
    for (const auto &[attribute, bytes] : alignments)
      ZERO_CUBLAS_CHECK(lt.preferenceSetAttribute(pref, attribute, &bytes, sizeof bytes));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    ZERO_CUBLAS_CHECK(lt.algoGetHeuristic(context().blasLt, desc_, a_, b_, c_, c_, pref, 1,
                                          &result, &found));
    lt.preferenceDestroy(pref);
    found_ = found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (!found_ && (lhsSums || gelu.aux))
      return;
    ZRT_CHECK(found_,
              where << ": cuBLASLt has no algorithm for this product (m " << g.m << ", n "
                    << g.n << ", k " << g.k << ", " << groups.size << " per call"
                    << (bias ? ", a bias" : "") << ", operands aligned to " << align.a << "/"
                    << align.b << "/" << align.d << " bytes)");
    algo_ = result.algo;
  }
  ~LtGemm() {
    const CublasLtApi &lt = cublasLt();
    lt.layoutDestroy(a_);
    lt.layoutDestroy(b_);
    lt.layoutDestroy(c_);
    lt.descDestroy(desc_);
  }
  LtGemm(const LtGemm &) = delete;
  LtGemm &operator=(const LtGemm &) = delete;
  bool found() const { return found_; }

  /// One group: our a and b, the addend (or null), the result, and with a GELU
  /// epilogue its pre-activation.
  void run(const void *a, const void *b, const void *addend, void *out,
           const void *aux = nullptr) const {
    if (aux && aux != aux_) { // read when cublasLtMatmul is called, as the pointers are
      aux_ = aux;
      ZERO_CUBLAS_CHECK(cublasLt().descSetAttribute(
          desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux_, sizeof aux_));
    }
    float one = 1, beta = (float)beta_;
    double oneD = 1, betaD = beta_;
    const void *alpha = f64_ ? (const void *)&oneD : &one;
    const void *betaPtr = f64_ ? (const void *)&betaD : &beta;
    Context &ctx = context();
    ZERO_CUBLAS_CHECK(cublasLt().matmul(ctx.blasLt, desc_, alpha, b, a_, a, b_, betaPtr,
                                        addend ? addend : out, c_, out, c_, &algo_,
                                        ctx.gemmWorkspace, ctx.gemmWorkspaceBytes, ctx.compute));
  }

private:
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_ = {};
  mutable const void *aux_ = nullptr; // the GELU epilogue's matrix, as the descriptor has it
  bool f64_ = false, found_ = false;
  int beta_ = 0;
};

BoundKernel bindMatMul(const KernelCall &call) {
  validate(call);
  kernels::MatMulGeometry g = kernels::matMulGeometry(call);
  TensorView a = call.ins[g.a.tensor], b = call.ins[g.b.tensor], out = call.outs[0];
  Elem t = elemOf(a.dtype);
  int64_t size = dtypeSize(a.dtype);
  // Products in groups whose matrices lie a fixed stride apart (all of them when
  // the operands are whole tensors; a head split's views step by head within a
  // sample): one strided-batched cuBLASLt call per group.
  kernels::MatMulGeometry::Groups groups = g.uniformGroups();
  ZRT_CHECK(std::max({g.m, g.n, g.k, g.a.ld, g.b.ld, g.c.ld, groups.size}) <= INT32_MAX,
            call.where() << ": a dimension exceeds cuBLASLt's int range");
  // The epilogue: cuBLASLt adds the bias after the product and reads the addend as
  // C (beta 1); the result (no view then) lies as the addend does.
  const void *bias = g.bias >= 0 ? call.ins[g.bias].data : nullptr;
  const char *addend = g.addend >= 0 ? call.ins[g.addend].as<char>() : nullptr;
  int64_t columns = out.shape.empty() ? 1 : out.shape.back();
  // The largest power of two up to 256 that divides an address (of every matrix).
  auto alignmentOf = [](uint64_t bits) { return (uint32_t)((bits | 256) & -(bits | 256)); };
  auto alignment = [&](const void *base, const std::vector<int64_t> &offsets, int64_t stride) {
    uint64_t bits = reinterpret_cast<uintptr_t>(base);
    for (int64_t j = 0; j < g.batches(); j += groups.size)
      bits |= (uint64_t)(offsets[j] * size);
    if (groups.size > 1)
      bits |= (uint64_t)(stride * size);
    return alignmentOf(bits);
  };
  LtGemm::Alignments align{alignment(a.data, g.a.offsets, groups.strideA),
                           alignment(b.data, g.b.offsets, groups.strideB),
                           addend ? alignment(addend, g.c.offsets, groups.strideC) : 256,
                           alignment(out.data, g.c.offsets, groups.strideC)};
  // lhs_sums (a weight gradient's bias gradient): cuBLASLt's bias-gradient
  // epilogue, as it reads A; where it has no algorithm for the product (or there
  // is no product to run), the column-sum kernel, said once.
  void *sums = g.lhsSums >= 0 ? call.outs[g.lhsSums].data : nullptr;
  // GELU (tanh form) in cuBLASLt's epilogue where it has one for the product (its
  // aux matrix needs a leading dimension that is a multiple of 8); else the GEMM
  // writes the pre-activation (or the result) and the gelu_tanh (gelu_tanh_grad)
  // kernel follows, said once.
  char *pre = g.preActivation >= 0 ? call.outs[g.preActivation].as<char>() : nullptr;
  const char *actIn = g.activationInput >= 0 ? call.ins[g.activationInput].as<char>() : nullptr;
  const char *aux = pre ? pre : actIn;
  bool geluInGemm = false;
  std::shared_ptr<LtGemm> lt;
  if (g.m > 0 && g.n > 0 && g.k > 0 && aux && g.c.ld % 8 == 0) {
    // The heuristic reads the aux pointer's alignment (cublasLt.h): it sees the
    // least aligned of the calls' aux matrices, so its algorithm works for each.
    const char *leastAligned = aux + g.c.offsets[0] * size;
    for (int64_t j = 0; j < g.batches(); j += groups.size)
      if (alignmentOf(reinterpret_cast<uintptr_t>(aux + g.c.offsets[j] * size)) <
          alignmentOf(reinterpret_cast<uintptr_t>(leastAligned)))
        leastAligned = aux + g.c.offsets[j] * size;
    lt = std::make_shared<LtGemm>(g, groups, t, bias, false, align, call.where(), nullptr,
                                  LtGemm::Gelu{leastAligned, actIn != nullptr});
    geluInGemm = lt->found();
    if (!geluInGemm)
      lt = nullptr;
  }
  if (aux && !geluInGemm) {
    ++context().fallbacks["GELUs outside the GEMM's epilogue"];
    static std::once_flag said;
    std::call_once(said, [&] {
      std::cerr << "zero-run: cuBLASLt has no GELU epilogue for " << call.where() << " (m "
                << g.m << ", n " << g.n << ", k " << g.k << ", leading dimension " << g.c.ld
                << "): such GELUs run as a kernel of their own\n";
    });
  }
  if (!lt && g.m > 0 && g.n > 0 && g.k > 0) {
    lt = std::make_shared<LtGemm>(g, groups, t, bias, addend != nullptr, align, call.where(),
                                  sums);
    if (!lt->found()) {
      ++context().fallbacks["bias gradients outside the GEMM's epilogue"];
      static std::once_flag said;
      std::call_once(said, [&] {
        std::cerr << "zero-run: cuBLASLt has no bias-gradient epilogue for " << call.where()
                  << " (m " << g.m << ", n " << g.n << ", k " << g.k
                  << "): such sums run as a kernel of their own\n";
      });
      lt = std::make_shared<LtGemm>(g, groups, t, bias, addend != nullptr, align, call.where());
    }
  }
  bool sumsApart = sums && g.m > 0 && g.k > 0 && !(lt && lt->found() && g.n > 0);
  ZRT_CHECK(!sumsApart || (g.a.transpose && g.a.ld == g.m),
            call.where() << ": lhs_sums without cuBLASLt's epilogue need the lhs to be a whole "
                            "transposed matrix");
  const char *sumsOf = a.as<char>() + (g.batches() ? g.a.offsets[0] * size : 0);
  // Where the products go: the pre-activation when a GELU kernel follows them.
  char *target = pre && !geluInGemm ? pre : out.as<char>();
  return [=] {
    int64_t m = g.m, n = g.n, k = g.k;
    Context &ctx = context();
    if (sums && k == 0)
      ZERO_CUDA_CHECK(cudaMemsetAsync(sums, 0, m * size, ctx.compute));
    if (sumsApart)
      columnSums(ctx.compute, t, false, sumsOf, k, m, sums, ctx.scratch);
    if (m == 0 || n == 0)
      return;
    if (k == 0) { // the result's view covers it once: all of it is its start
      if (bias || addend)
        matmulStart(ctx.compute, t, target, bias, addend, columns, out.numel());
      else
        ZERO_CUDA_CHECK(cudaMemsetAsync(target, 0, out.bytes(), ctx.compute));
    } else {
      for (int64_t j = 0; j < g.batches(); j += groups.size)
        lt->run(a.as<char>() + g.a.offsets[j] * size, b.as<char>() + g.b.offsets[j] * size,
                addend ? addend + g.c.offsets[j] * size : nullptr,
                target + g.c.offsets[j] * size,
                geluInGemm ? aux + g.c.offsets[j] * size : nullptr);
    }
    if (aux && !geluInGemm) {
      if (pre)
        unary(ctx.compute, UnaryOp::GeluTanh, t, pre, out.data, out.numel());
      else
        activationGrad(ctx.compute, ActivationGrad::GeluTanh, t, actIn, out.data, out.data,
                       out.numel());
    }
  };
}

BoundKernel bindSoftmax(const KernelCall &call, bool log) {
  validate(call);
  SoftmaxPrologue pro = softmaxPrologue(call, !log);
  TensorView x = call.ins[0], out = call.outs[0];
  const void *bias = pro.hasBias ? call.ins[1].data : nullptr;
  std::shared_ptr<int64_t> rowOff = pro.hasBias ? deviceArray(pro.rowOffsets) : nullptr;
  int64_t outer, dim, inner;
  splitAxis(x.shape, call.intAttr("axis"), outer, dim, inner);
  Elem t = elemOf(x.dtype);
  return [=] {
    softmax(context().compute, t, x.data, out.data, outer, dim, inner, log, pro.scale, bias,
            rowOff.get(), pro.step);
  };
}

BoundKernel bindSoftmaxGrad(const KernelCall &call) {
  validate(call);
  TensorView y = call.ins[0], g = call.ins[1], out = call.outs[0];
  int64_t outer, dim, inner;
  splitAxis(y.shape, call.intAttr("axis"), outer, dim, inner);
  Elem t = elemOf(y.dtype);
  double scale = softmaxScale(call);
  return [=] {
    softmaxGrad(context().compute, t, y.data, g.data, scale, out.data, outer, dim, inner);
  };
}

/// Fused attention's geometry, as the CPU kernel reads and checks it.
AttentionShape attentionShapeOf(const KernelCall &call, bool grad) {
  AttentionGeometry g = attentionGeometry(call, grad);
  ZRT_CHECK(g.size <= kMaxAttentionHead && g.vSize <= kMaxAttentionHead,
            call.where() << ": the CUDA backend's attention takes head sizes up to "
                         << kMaxAttentionHead << ", not " << std::max(g.size, g.vSize));
  AttentionShape a;
  a.batch = g.batch;
  a.qHeads = g.qHeads;
  a.kvHeads = g.kvHeads;
  a.qLen = g.qLen;
  a.kvLen = g.kvLen;
  a.size = g.size;
  a.vSize = g.vSize;
  a.scale = g.scale;
  a.causal = g.causal;
  a.mask = (int)g.mask; // None 0, Bool 1, Add 2: AttentionShape's coding
  std::copy(g.maskStrides.begin(), g.maskStrides.end(), a.maskStride);
  a.query = g.query;
  a.key = g.key;
  a.value = g.value;
  a.out = g.out;
  a.dout = g.dout;
  a.dquery = g.dquery;
  a.dkey = g.dkey;
  a.dvalue = g.dvalue;
  return a;
}

/// The cuDNN plan for a 16-bit attention, or null when the project's kernels run
/// it: f32 and f64 always; 16-bit with --attention=own, or (after one line per
/// reason) where cuDNN is missing or its graph cannot take the attention.
std::shared_ptr<CudnnAttention> cudnnAttentionFor(const KernelCall &call, Elem t,
                                                  const AttentionShape &a, bool grad,
                                                  const std::vector<const void *> &operands) {
  Context &ctx = context();
  if ((t != Elem::BF16 && t != Elem::F16) || !ctx.cudnnAttention)
    return nullptr;
  std::string why = CudnnAttention::unsupported(t, a, operands);
  std::unique_ptr<CudnnAttention> plan;
  if (why.empty() && !ctx.dnn) {
    if (const CudnnApi *api = cudnn(why)) {
      cudnnStatus_t rc = api->create(&ctx.dnn);
      if (rc == CUDNN_STATUS_SUCCESS)
        rc = api->setStream(ctx.dnn, ctx.compute);
      if (rc != CUDNN_STATUS_SUCCESS)
        why = std::string("cudnnCreate: ") + api->getErrorString(rc);
    }
  }
  if (why.empty())
    plan = CudnnAttention::make(ctx.dnn, t, a, grad, operands, why);
  if (!plan) {
    ++ctx.fallbacks[grad ? "16-bit attention backwards on zero-opt's kernels, not cuDNN"
                         : "16-bit attention forwards on zero-opt's kernels, not cuDNN"];
    static std::mutex mutex;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> lock(mutex);
    if (said.insert(why).second)
      std::cerr << "zero-run: " << call.where() << " runs on zero-opt's attention kernels, "
                << "not cuDNN: " << why << "\n";
    return nullptr;
  }
  if (plan->workspaceBytes() > ctx.attentionWorkspaceBytes) {
    // A larger one for this plan; the old one stays allocated until the device
    // goes, as queued work or a captured graph may still use it.
    if (ctx.attentionWorkspace)
      ctx.retiredWorkspaces.push_back(ctx.attentionWorkspace);
    ctx.attentionWorkspace = nullptr;
    ZERO_CUDA_CHECK(cudaMalloc(&ctx.attentionWorkspace, plan->workspaceBytes()));
    ctx.attentionWorkspaceBytes = plan->workspaceBytes();
  }
  return std::shared_ptr<CudnnAttention>(std::move(plan));
}

BoundKernel bindAttention(const KernelCall &call) {
  validate(call);
  AttentionShape a = attentionShapeOf(call, /*grad=*/false);
  TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.outs[0],
             lse = call.outs[1];
  const void *m = call.ins.size() == 4 ? call.ins[3].data : nullptr;
  Elem t = elemOf(q.dtype);
  if (auto dnn = cudnnAttentionFor(call, t, a, /*grad=*/false,
                                   {q.data, k.data, v.data, out.data, lse.data}))
    return [=] { dnn->run(context().dnn, context().attentionWorkspace); };
  return [=] {
    attention(context().compute, t, a, q.data, k.data, v.data, m, out.data, lse.data);
  };
}

BoundKernel bindAttentionGrad(const KernelCall &call) {
  validate(call);
  AttentionShape a = attentionShapeOf(call, /*grad=*/true);
  TensorView q = call.ins[0], k = call.ins[1], v = call.ins[2], out = call.ins[3],
             lse = call.ins[4], dout = call.ins[5];
  TensorView dq = call.outs[0], dk = call.outs[1], dv = call.outs[2];
  const void *m = call.ins.size() == 7 ? call.ins[6].data : nullptr;
  Elem t = elemOf(q.dtype);
  if (auto dnn = cudnnAttentionFor(call, t, a, /*grad=*/true,
                                   {q.data, k.data, v.data, out.data, lse.data, dout.data,
                                    dq.data, dk.data, dv.data}))
    return [=] { dnn->run(context().dnn, context().attentionWorkspace); };
  return [=] {
    attentionGrad(context().compute, t, a, q.data, k.data, v.data, out.data, lse.data,
                  dout.data, m, dq.data, dk.data, dv.data);
  };
}

/// Offsets of a broadcast operand over the normalized shape, on the device.
std::shared_ptr<int64_t> deviceNormOffsets(const Shape &of, const Shape &norm) {
  std::vector<int64_t> off;
  forEachBroadcast<1>(norm, std::array<Shape, 1>{broadcastStrides(of, norm)},
                      [&](int64_t, auto o) { off.push_back(o[0]); });
  return deviceArray(off);
}

BoundKernel bindLayerNorm(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], scale = call.ins[1], bias = call.ins[2];
  TensorView y = call.outs[0], mean = call.outs[1], rstd = call.outs[2];
  int64_t axis = call.intAttr("axis");
  double eps = call.floatAttr("epsilon");
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = extentProduct(x.shape, 0, axis), inner = extentProduct(norm, 0, norm.size());
  auto sOff = deviceNormOffsets(scale.shape, norm), bOff = deviceNormOffsets(bias.shape, norm);
  Elem t = elemOf(x.dtype);
  bool wide = mean.dtype != x.dtype; // f32 statistics of a 16-bit input (checked)
  return [=] {
    layerNorm(context().compute, t, wide, x.data, scale.data, bias.data, sOff.get(), bOff.get(),
              y.data, mean.data, rstd.data, outer, inner, eps);
  };
}

BoundKernel bindLayerNormGrad(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], scale = call.ins[1], mean = call.ins[2], rstd = call.ins[3],
             gy = call.ins[4];
  TensorView dx = call.outs[0], ds = call.outs[1], db = call.outs[2];
  const void *acc = call.ins.size() == 6 ? call.ins[5].data : nullptr;
  int64_t axis = call.intAttr("axis");
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t outer = extentProduct(x.shape, 0, axis), inner = extentProduct(norm, 0, norm.size());
  auto sOff = deviceNormOffsets(scale.shape, norm);
  Elem t = elemOf(x.dtype);
  bool wide = mean.dtype != x.dtype; // f32 statistics of a 16-bit input (checked)
  return [=] {
    Context &ctx = context();
    layerNormGrad(ctx.compute, t, wide, x.data, scale.data, sOff.get(), mean.data, rstd.data,
                  gy.data, acc, dx.data, ds.data, db.data, outer, inner, ctx.scratch);
  };
}

BoundKernel bindCrossEntropy(const KernelCall &call) {
  validate(call);
  TensorView scores = call.ins[0], labels = call.ins[1], loss = call.outs[0],
             logp = call.outs[1];
  const TensorView *weightsView = call.ins.size() == 3 ? &call.ins[2] : nullptr;
  const void *weights = weightsView ? weightsView->data : nullptr;
  CrossEntropyGeometry g = crossEntropyGeometry(call, scores, "scores", labels, weightsView);
  Elem t = elemOf(scores.dtype);
  bool wide = logp.dtype != scores.dtype; // f32 beside 16-bit scores (checked)
  return [=] {
    crossEntropy(context().compute, t, wide, scores.data, labels.data, g.labels64, weights,
                 (int)g.reduction, g.hasIgnore, g.ignore, loss.data, logp.data, g.n, g.c,
                 g.inner, context().errorFlag);
  };
}

BoundKernel bindCrossEntropyGrad(const KernelCall &call) {
  validate(call);
  TensorView logp = call.ins[0], labels = call.ins[1], g = call.ins[2], out = call.outs[0];
  const TensorView *weightsView = call.ins.size() == 4 ? &call.ins[3] : nullptr;
  const void *weights = weightsView ? weightsView->data : nullptr;
  CrossEntropyGeometry geo = crossEntropyGeometry(call, logp, "log_prob", labels, weightsView);
  Elem t = elemOf(out.dtype);
  bool wide = logp.dtype != out.dtype; // f32 beside a 16-bit result (checked)
  // The mean's denominator: allocated here, as cudaMalloc fails (and invalidates
  // the capture) while the step is captured as a CUDA graph.
  std::shared_ptr<double> denom = deviceArray(std::vector<double>{0.0});
  return [=] {
    crossEntropyGrad(context().compute, t, wide, logp.data, labels.data, geo.labels64, g.data,
                     weights, (int)geo.reduction, geo.hasIgnore, geo.ignore, out.data,
                     geo.n, geo.c, geo.inner, denom.get(), context().errorFlag);
  };
}

BoundKernel bindCrossEntropyWithGrad(const KernelCall &call) {
  validate(call);
  TensorView scores = call.ins[0], labels = call.ins[1], g = call.ins[2], loss = call.outs[0],
             ds = call.outs[1];
  const TensorView *weightsView = call.ins.size() == 4 ? &call.ins[3] : nullptr;
  const void *weights = weightsView ? weightsView->data : nullptr;
  CrossEntropyGeometry geo = crossEntropyGeometry(call, scores, "scores", labels, weightsView);
  Elem t = elemOf(scores.dtype);
  bool wide = loss.dtype != scores.dtype; // f32 beside 16-bit scores (checked)
  // The mean's denominator and each position's loss, in the stream's order.
  double *scratch = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&scratch, (1 + geo.n * geo.inner) * sizeof(double)));
  std::shared_ptr<double> owned(scratch, [](double *p) { cudaFree(p); });
  return [=] {
    crossEntropyWithGrad(context().compute, t, wide, scores.data, ds.data, labels.data,
                         geo.labels64, g.data, weights, (int)geo.reduction, geo.hasIgnore,
                         geo.ignore, loss.data, owned.get(), geo.n, geo.c, geo.inner,
                         context().errorFlag);
  };
}

BoundKernel bindReduce(const KernelCall &call, bool mean) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  std::vector<int64_t> axes = call.intsAttr("axes");
  Shape strides = stridesOf(x.shape), keepShape, keepStrides, redShape, redStrides;
  int64_t count = 1;
  for (int64_t d = 0; d < (int64_t)x.shape.size(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    (reduced ? redShape : keepShape).push_back(x.shape[d]);
    (reduced ? redStrides : keepStrides).push_back(strides[d]);
    if (reduced)
      count *= x.shape[d];
  }
  Elem t = elemOf(x.dtype);
  int64_t n = out.numel();
  // The leading axes reduced (bias gradients): column sums that read rows whole.
  bool leading = !axes.empty();
  for (int64_t d = 0; d < (int64_t)axes.size(); ++d)
    leading &= std::find(axes.begin(), axes.end(), d) != axes.end();
  if (leading && n > 1)
    return [=] {
      Context &ctx = context();
      columnSums(ctx.compute, t, mean, x.data, count, n, out.data, ctx.scratch);
    };
  Strided keep = stridedOf(call, keepShape, keepStrides);
  Strided red = stridedOf(call, redShape, redStrides);
  return [=] { reduce(context().compute, t, mean, x.data, keep, red, count, out.data, n); };
}

BoundKernel bindCopy(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  if (x.data == out.data)
    return [] {};
  return [=] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(out.data, x.data, x.bytes(), cudaMemcpyDeviceToDevice,
                                    context().compute));
  };
}

BoundKernel bindTranspose(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  std::vector<int64_t> perm = call.intsAttr("perm");
  Shape st = stridesOf(x.shape), permStrides;
  for (int64_t p : perm)
    permStrides.push_back(st[p]);
  Strided v = stridedOf(call, out.shape, permStrides);
  int size = (int)dtypeSize(x.dtype);
  int64_t n = out.numel();
  return [=] { stridedCopy(context().compute, size, x.data, v, 0, out.data, n); };
}

BoundKernel bindSlice(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  SliceWindow w = sliceWindow(call, x.shape, out.shape, "result", "input", "reads");
  Strided v = stridedOf(call, out.shape, w.strides);
  int64_t base = w.base;
  int size = (int)dtypeSize(x.dtype);
  int64_t n = out.numel();
  return [=] { stridedCopy(context().compute, size, x.data, v, base, out.data, n); };
}

BoundKernel bindSliceGrad(const KernelCall &call) {
  validate(call);
  TensorView g = call.ins[0], out = call.outs[0];
  SliceWindow w = sliceWindow(call, out.shape, g.shape, "grad", "result", "writes");
  Strided v = stridedOf(call, g.shape, w.strides);
  int64_t base = w.base;
  int size = (int)dtypeSize(g.dtype);
  int64_t n = g.numel();
  return [=] {
    ZERO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.bytes(), context().compute));
    stridedScatter(context().compute, size, g.data, v, base, out.data, n);
  };
}

BoundKernel bindExpand(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  Strided v = stridedOf(call, out.shape, broadcastStrides(x.shape, out.shape));
  int size = (int)dtypeSize(x.dtype);
  int64_t n = out.numel();
  return [=] { stridedCopy(context().compute, size, x.data, v, 0, out.data, n); };
}

BoundKernel bindConcat(const KernelCall &call) {
  validate(call);
  TensorView out = call.outs[0];
  int64_t axis = call.intAttr("axis"), offset = 0;
  Shape st = stridesOf(out.shape);
  struct Part {
    TensorView in;
    Strided view;
    int64_t base;
  };
  std::vector<Part> parts;
  for (const TensorView &in : call.ins) {
    parts.push_back({in, stridedOf(call, in.shape, st), offset * st[axis]});
    offset += in.shape[axis];
  }
  int size = (int)dtypeSize(out.dtype);
  return [=] {
    for (const Part &p : parts)
      stridedScatter(context().compute, size, p.in.data, p.view, p.base, out.data,
                     p.in.numel());
  };
}

BoundKernel bindGather(const KernelCall &call) {
  validate(call);
  TensorView data = call.ins[0], idx = call.ins[1], out = call.outs[0];
  int64_t outer, dim, inner;
  splitAxis(data.shape, call.intAttr("axis"), outer, dim, inner);
  int size = (int)dtypeSize(data.dtype);
  bool idx64 = idx.dtype == zero::zplan::I64;
  int64_t n = idx.numel();
  return [=] {
    gather(context().compute, size, data.data, idx.data, idx64, out.data, outer, n, dim,
           inner, context().errorFlag);
  };
}

BoundKernel bindGatherGrad(const KernelCall &call) {
  validate(call);
  TensorView idx = call.ins[0], g = call.ins[1], out = call.outs[0];
  int64_t outer, dim, inner;
  splitAxis(out.shape, call.intAttr("axis"), outer, dim, inner);
  bool idx64 = idx.dtype == zero::zplan::I64;
  Elem t = elemOf(out.dtype);
  int64_t n = idx.numel();
  // The positions sorted by row (ints): bound here, never allocated while captured.
  ZRT_CHECK(n < INT32_MAX && dim < INT32_MAX,
            "gather_grad at " << call.loc << ": " << n << " indices into " << dim
                      << " rows: the GPU's gather gradient sorts them as 32-bit ints");
  std::shared_ptr<int> scratch =
      deviceArray(std::vector<int>(gatherGradScratchInts(n, dim), 0));
  return [=] {
    gatherGrad(context().compute, t, idx.data, idx64, g.data, out.data, outer, n, dim,
               inner, scratch.get(), context().errorFlag);
  };
}

BoundKernel bindTrilu(const KernelCall &call) {
  validate(call);
  TensorView x = call.ins[0], out = call.outs[0];
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  int64_t mats = (rows * cols) != 0 ? x.numel() / (rows * cols) : 0;
  bool upper = call.intAttr("upper") != 0;
  int64_t k = call.intAttr("k");
  int size = (int)dtypeSize(x.dtype);
  return [=] {
    trilu(context().compute, size, x.data, out.data, mats, rows, cols, upper, k);
  };
}

BoundKernel bindActivationGrad(const KernelCall &call, ActivationGrad op) {
  validate(call);
  TensorView x = call.ins[0], g = call.ins[1], out = call.outs[0];
  Elem t = elemOf(x.dtype);
  int64_t n = x.numel();
  return [=] { activationGrad(context().compute, op, t, x.data, g.data, out.data, n); };
}

/// One launch over every input (a rank's gradients): a table of spans in device
/// memory, made once at bind.
BoundKernel bindNonfiniteCount(const KernelCall &call) {
  validate(call);
  TensorView out = call.outs[0];
  std::vector<CountSpan> spans;
  int64_t blocks = 0;
  for (const TensorView &x : call.ins) {
    if (x.numel() == 0)
      continue;
    CountSpan span;
    span.data = x.data;
    span.n = x.numel();
    span.firstBlock = blocks;
    span.bytes = (int)dtypeSize(x.dtype);
    span.mask = span.bytes == 8   ? 0x7ff0000000000000ull
                : span.bytes == 4 ? 0x7f800000ull
                : x.dtype == zero::zplan::F16 ? 0x7c00ull
                                              : 0x7f80ull; // bf16
    spans.push_back(span);
    blocks += countBlocks(span.n);
  }
  ZRT_CHECK(blocks <= INT32_MAX, call.where() << ": too many elements for one launch");
  std::shared_ptr<CountSpan> owned = deviceArray(spans);
  int count = (int)spans.size();
  return [=] {
    Context &ctx = context();
    if (count)
      nonfiniteCountSpans(ctx.compute, owned.get(), count, blocks, out.as<float>());
    else
      ZERO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(float), ctx.compute));
  };
}

/// An optimizer's optional runtime operands (after its `own` inputs, as the plan's
/// operand_segments say; validate checked them): gradient scale, overflow count,
/// learning rate; null when absent.
struct OptimizerRuntime {
  const float *scale = nullptr, *found = nullptr;
  const double *lr = nullptr;
};
OptimizerRuntime optimizerRuntime(const KernelCall &call, size_t own) {
  OptimizerRuntime r;
  if (!call.hasAttr("operand_segments"))
    return r;
  std::vector<int64_t> seg = call.intsAttr("operand_segments");
  size_t next = own;
  if (seg[own])
    r.scale = call.ins[next++].as<float>();
  if (seg[own + 1])
    r.found = call.ins[next++].as<float>();
  if (seg[own + 2])
    r.lr = call.ins[next++].as<double>();
  return r;
}

/// One launch over every input (a rank's gradients) and one over its blocks'
/// partial sums: the spans' table and the partials in device memory, made at bind.
BoundKernel bindSumSquares(const KernelCall &call) {
  validate(call);
  TensorView out = call.outs[0];
  std::vector<SquareSpan> spans;
  int64_t blocks = 0;
  for (const TensorView &x : call.ins) {
    if (x.numel() == 0)
      continue;
    spans.push_back({x.data, x.numel(), blocks, elemOf(x.dtype)});
    blocks += squareBlocks(x.numel());
  }
  ZRT_CHECK(blocks <= INT32_MAX, call.where() << ": too many elements for one launch");
  std::shared_ptr<SquareSpan> table = deviceArray(spans);
  std::shared_ptr<double> partials = deviceArray(std::vector<double>(std::max<int64_t>(blocks, 1)));
  int count = (int)spans.size();
  return [=] {
    Context &ctx = context();
    if (count)
      sumSquaresSpans(ctx.compute, table.get(), count, blocks, partials.get(),
                      out.as<float>());
    else
      ZERO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(float), ctx.compute));
  };
}

BoundKernel bindClipGradScale(const KernelCall &call) {
  validate(call);
  TensorView sumSq = call.ins[0], scale = call.ins[1], out = call.outs[0],
             norm = call.outs[1];
  double maxNorm = call.floatAttr("max_norm");
  return [=] {
    clipGradScale(context().compute, sumSq.as<float>(), scale.as<float>(), out.as<float>(),
                  norm.as<float>(), maxNorm);
  };
}

/// AdamW (`adam`) or SGD over the N tensors of the kernel (N = 1 unless the plan
/// joined the step's updates): one launch over a table of spans, made when bound.
BoundKernel bindOptimizer(const KernelCall &call, bool adam) {
  validate(call); // the CPU binder checks each tensor's operands
  size_t own = adam ? 4 : 3;
  std::shared_ptr<OptimizerMembers> members = optimizerMembers(call, own);
  const KernelCall &first = members->calls[0];
  Elem t = elemOf(first.ins[0].dtype), gt = elemOf(first.ins[1].dtype);
  bool copies = adam && first.outs.size() == 4; // the plan folded the 16-bit casts in
  Elem ct = copies ? elemOf(first.outs[3].dtype) : t;
  std::vector<OptimizerSpan> spans;
  int64_t blocks = 0;
  for (const KernelCall &c : members->calls) {
    ZRT_CHECK(elemOf(c.ins[0].dtype) == t && elemOf(c.ins[1].dtype) == gt &&
                  (!copies || elemOf(c.outs[3].dtype) == ct),
              call.where() << ": its tensors' types differ");
    OptimizerSpan sp;
    sp.p = c.ins[0].data;
    sp.g = c.ins[1].data;
    sp.m = c.ins[2].data;
    sp.po = c.outs[0].data;
    sp.mo = c.outs[1].data;
    if (adam) {
      sp.v = c.ins[3].data;
      sp.vo = c.outs[2].data;
    }
    sp.copy = copies ? c.outs[3].data : nullptr;
    sp.n = c.ins[0].numel();
    if (!sp.n)
      continue;
    sp.firstBlock = blocks;
    blocks += countBlocks(sp.n);
    spans.push_back(sp);
  }
  ZRT_CHECK(blocks <= INT32_MAX, call.where() << ": too many elements for one launch");
  std::shared_ptr<OptimizerSpan> table = deviceArray(spans);
  int count = (int)spans.size();
  OptimizerRuntime rt = optimizerRuntime(first, adam ? 5 : 3);
  const int64_t *step = adam ? first.ins[4].as<int64_t>() : nullptr;
  double lr = call.floatAttr("lr"), wd = call.floatAttr("weight_decay");
  if (adam) {
    double b1 = call.floatAttr("beta1"), b2 = call.floatAttr("beta2"),
           eps = call.floatAttr("eps");
    return [=] {
      if (count)
        adamw(context().compute, t, gt, ct, copies, table.get(), count, blocks, step, rt.scale,
              rt.found, rt.lr, lr, b1, b2, eps, wd);
    };
  }
  double mom = call.floatAttr("momentum");
  return [=] {
    if (count)
      sgd(context().compute, t, gt, table.get(), count, blocks, rt.scale, rt.found, rt.lr, lr,
          mom, wd);
  };
}

BoundKernel bindAdamW(const KernelCall &call) { return bindOptimizer(call, true); }
BoundKernel bindSgd(const KernelCall &call) { return bindOptimizer(call, false); }

//===----------------------------------------------------------------------===//
// Collectives: NCCL on the communication stream, ordered by events
//===----------------------------------------------------------------------===//

ncclDataType_t ncclTypeOf(DType t) {
  switch (t) {
  case zero::zplan::F32:
    return ncclFloat32;
  case zero::zplan::F64:
    return ncclFloat64;
  case zero::zplan::I64:
    return ncclInt64;
  case zero::zplan::I32:
    return ncclInt32;
  case zero::zplan::BF16:
    return ncclBfloat16;
  case zero::zplan::F16:
    return ncclFloat16;
  default:
    ZRT_FAIL("the CUDA backend has no " << dtypeName(t) << " collectives");
  }
}

enum class Kind { AllGather, ReduceScatter, AllReduce };

/// ZeRO++'s quantized form of a collective kernel (its `quantize_block`), as
/// zrt/QuantizedCollectives.h does it on the CPU, bit for bit: int8 messages
/// (QuantizeKernels.h) through ncclAllGather and ncclAlltoAll, in the device's
/// message buffers (Context::quantizeSent ...: outside the arena, shared by every
/// quantized collective, sized for the largest).
struct Quantized {
  int64_t block = 0; // 0: full precision
  int rank = 0, ranks = 1;
  int64_t chunk = 0;   // values per rank's message
  size_t message = 0;  // one message's bytes
};

/// `s` holds at least `bytes`. Kernels are bound before any runs, so the
/// outgrown memory is unused; every allocation is freed with the device.
void growScratch(Context &ctx, Scratch &s, size_t bytes) {
  if (s.bytes >= bytes)
    return;
  s.data = nullptr;
  ZERO_CUDA_CHECK(cudaMalloc(&s.data, bytes));
  ctx.retiredWorkspaces.push_back(s.data);
  s.bytes = bytes;
}

Quantized quantizedOf(const KernelCall &call, Kind kind) {
  Quantized q;
  if (!call.hasAttr("quantize_block"))
    return q;
  Context &ctx = context();
  q.block = call.intAttr("quantize_block");
  DType t = call.ins[0].dtype;
  ZRT_CHECK(t == zero::zplan::F32 || t == zero::zplan::BF16 || t == zero::zplan::F16,
            call.where() << ": quantized collectives take f32, bf16 or f16 buffers, not "
                         << dtypeName(t));
  q.rank = call.comm->rank();
  q.ranks = call.comm->size();
  int64_t n = q.ranks;
  const TensorView &in = call.ins[0], &out = call.outs[0];
  q.chunk = kind == Kind::AllGather       ? in.numel()
            : kind == Kind::ReduceScatter ? out.numel()
                                          : (in.numel() + n - 1) / n;
  q.message = (size_t)quantizedBytes(q.chunk, q.block);
  growScratch(ctx, ctx.quantizeSent, q.message * (kind == Kind::AllGather ? 1 : n));
  growScratch(ctx, ctx.quantizeReceived, q.message * n);
  if (kind == Kind::AllReduce)
    growScratch(ctx, ctx.quantizeSums, q.chunk * dtypeSize(in.dtype));
  return q;
}

/// The quantized collective, on the communication stream (ctx.ncclMutex held).
void launchQuantized(Context &ctx, ncclComm_t nccl, Kind kind, const TensorView &in,
                     const TensorView &out, const Quantized &q) {
  Elem t = elemOf(in.dtype);
  int64_t n = q.ranks, chunk = q.chunk, block = q.block;
  const char *src = in.as<char>();
  size_t width = dtypeSize(in.dtype);
  void *sent = ctx.quantizeSent.data, *received = ctx.quantizeReceived.data,
       *sums = ctx.quantizeSums.data;
  if (kind == Kind::AllGather) {
    quantizeChunks(ctx.comm, t, src, chunk, chunk, 1, block, -1, sent);
    ZERO_NCCL_CHECK(ncclAllGather(sent, received, q.message, ncclUint8, nccl, ctx.comm));
    dequantizeChunks(ctx.comm, t, received, chunk, block, chunk * n, out.data);
    return;
  }
  // Each rank's chunk to its owner, all at once; the owner sums them in rank order.
  int64_t count = kind == Kind::ReduceScatter ? chunk * n : in.numel();
  int64_t first = q.rank * chunk, kept = std::max<int64_t>(0, std::min(chunk, count - first));
  quantizeChunks(ctx.comm, t, src, count, chunk, n, block, q.rank, sent);
  ZERO_NCCL_CHECK(ncclAlltoAll(sent, received, q.message, ncclUint8, nccl, ctx.comm));
  const char *own = kept ? src + first * width : src;
  void *sum = kind == Kind::ReduceScatter ? out.data : sums;
  sumQuantizedChunks(ctx.comm, t, received, own, kept, q.rank, (int)n, chunk, block, sum);
  if (kind == Kind::ReduceScatter)
    return;
  // An all-reduce then gathers the sums, quantized.
  quantizeChunks(ctx.comm, t, sums, kept, chunk, 1, block, -1, sent);
  ZERO_NCCL_CHECK(ncclAllGather(sent, received, q.message, ncclUint8, nccl, ctx.comm));
  dequantizeChunks(ctx.comm, t, received, chunk, block, count, out.data);
}

/// Enqueues the collective on the communication stream after everything the
/// compute stream has done so far, and records `done` when it ends.
void launchCollective(Kind kind, const TensorView &in, const TensorView &out,
                      cudaEvent_t done, const Quantized &q, const Communicator *group) {
  Context &ctx = context();
  ZERO_CUDA_CHECK(cudaEventRecord(ctx.ready, ctx.compute));
  ZERO_CUDA_CHECK(cudaStreamWaitEvent(ctx.comm, ctx.ready, 0));
  ncclDataType_t t = ncclTypeOf(in.dtype);
  std::lock_guard<std::mutex> lock(ctx.ncclMutex);
  ZRT_CHECK(ctx.nccl, "cuda:" << ctx.ordinal << " has no NCCL communicator for the plan's "
                                 "collective (it was made for a plan without any)");
  ZRT_CHECK(!ctx.ncclAborted, "stopped on cuda:" << ctx.ordinal << ": another rank of this "
                                                 << "process failed and its NCCL "
                                                 << "communicator was aborted");
  // The ranks of the kernel's group (hybrid sharding, hpZ), or every rank.
  auto g = ctx.groupNccl.find(group);
  ncclComm_t nccl = g == ctx.groupNccl.end() ? ctx.nccl : g->second;
  if (q.block)
    launchQuantized(ctx, nccl, kind, in, out, q);
  else if (kind == Kind::AllGather)
    ZERO_NCCL_CHECK(ncclAllGather(in.data, out.data, in.numel(), t, nccl, ctx.comm));
  else if (kind == Kind::ReduceScatter)
    ZERO_NCCL_CHECK(
        ncclReduceScatter(in.data, out.data, out.numel(), t, ncclSum, nccl, ctx.comm));
  else
    ZERO_NCCL_CHECK(
        ncclAllReduce(in.data, out.data, in.numel(), t, ncclSum, nccl, ctx.comm));
  ZERO_CUDA_CHECK(cudaEventRecord(done, ctx.comm));
}

void count(Communicator *comm, Kind kind, const TensorView &in, const TensorView &out,
           const Quantized &q) {
  if (q.block) { // what this rank sent the others (the error is not measured here)
    int64_t passes = kind == Kind::AllReduce ? 2 : 1, others = q.ranks - 1;
    comm->quantization.wireBytes += passes * others * (int64_t)q.message;
    comm->quantization.fullBytes += passes * others * q.chunk * dtypeSize(in.dtype);
  }
  if (kind == Kind::AllGather)
    comm->allGatherElements += out.numel();
  else if (kind == Kind::ReduceScatter)
    comm->reduceScatterElements += in.numel();
  else
    comm->allReduceElements += in.numel();
}

/// Synchronous form: the compute stream waits for the transfer at once.
BoundKernel bindCollective(const KernelCall &call, Kind kind) {
  validate(call);
  TensorView in = call.ins[0], out = call.outs[0];
  Communicator *comm = call.comm;
  Quantized q = quantizedOf(call, kind);
  return [=] {
    launchCollective(kind, in, out, context().doneSync, q, comm);
    ZERO_CUDA_CHECK(cudaStreamWaitEvent(context().compute, context().doneSync, 0));
    count(comm, kind, in, out, q);
  };
}

cudaEvent_t requestEvent(int64_t request) {
  Context &ctx = context();
  while ((int64_t)ctx.done.size() <= request) {
    cudaEvent_t e;
    ZERO_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ctx.done.push_back(e);
  }
  return ctx.done[request];
}

/// Split-phase: the start enqueues, the wait makes the compute stream wait.
BoundKernel bindStart(const KernelCall &call, Kind kind) {
  validate(call);
  TensorView in = call.ins[0], out = call.outs[0];
  cudaEvent_t done = requestEvent(call.intAttr("request"));
  Communicator *comm = call.comm;
  Quantized q = quantizedOf(call, kind);
  return [=] {
    launchCollective(kind, in, out, done, q, comm);
    count(comm, kind, in, out, q);
  };
}

BoundKernel bindWait(const KernelCall &call) {
  validate(call);
  cudaEvent_t done = requestEvent(call.intAttr("request"));
  return [=] { ZERO_CUDA_CHECK(cudaStreamWaitEvent(context().compute, done, 0)); };
}

BoundKernel bindAllSlice(const KernelCall &call) {
  validate(call);
  TensorView in = call.ins[0], out = call.outs[0];
  int64_t offset = call.comm->rank() * out.bytes();
  return [=] {
    ZERO_CUDA_CHECK(cudaMemcpyAsync(out.data, in.as<char>() + offset, out.bytes(),
                                    cudaMemcpyDeviceToDevice, context().compute));
  };
}

/// to_host, to_device (an offloaded optimizer's): on the copy stream, after the
/// compute stream's work so far (which made the source, or last read the
/// destination's bytes); the compute stream's later work waits for it (it may
/// reuse the device buffer's bytes). The host memory is page-locked (the host
/// arena), so the copy is asynchronous.
BoundKernel bindTransfer(const KernelCall &call) {
  validate(call);
  bool toHost = call.kind == Kernel::TO_HOST;
  void *dst = call.outs[0].data;
  const void *src = call.ins[0].data;
  size_t bytes = call.ins[0].bytes();
  cudaEvent_t ready = ownedEvent(context()), copied = ownedEvent(context());
  return [=] {
    Context &ctx = context();
    ZERO_CUDA_CHECK(cudaEventRecord(ready, ctx.compute));
    ZERO_CUDA_CHECK(cudaStreamWaitEvent(ctx.copy, ready, 0));
    ZERO_CUDA_CHECK(cudaMemcpyAsync(
        dst, src, bytes, toHost ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, ctx.copy));
    ZERO_CUDA_CHECK(cudaEventRecord(copied, ctx.copy));
    ZERO_CUDA_CHECK(cudaStreamWaitEvent(ctx.compute, copied, 0));
  };
}

} // namespace

void zrt::cuda::checkCuda(cudaError_t rc, const char *what) {
  ZRT_CHECK(rc == cudaSuccess, "CUDA: " << what << " failed: " << cudaGetErrorString(rc));
}

const KernelTable &zrt::cuda::cudaKernels() {
  static const KernelTable table = [] {
    KernelTable t;
    auto add = [&](KernelKind kind, BoundKernel (*f)(const KernelCall &)) { t[kind] = f; };
    add(Kernel::ADD, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Add); });
    add(Kernel::SUB, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Sub); });
    add(Kernel::MUL, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Mul); });
    add(Kernel::DIV, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Div); });
    add(Kernel::EQUAL, [](const KernelCall &c) { return bindBinary(c, BinaryOp::Equal); });
    add(Kernel::POW, bindPow);
    add(Kernel::NEG, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Neg); });
    add(Kernel::SQRT, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Sqrt); });
    add(Kernel::RECIPROCAL, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Reciprocal); });
    add(Kernel::EXP, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Exp); });
    add(Kernel::LOG, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Log); });
    add(Kernel::RELU, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Relu); });
    add(Kernel::TANH, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Tanh); });
    add(Kernel::SIGMOID, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Sigmoid); });
    add(Kernel::ERF, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Erf); });
    add(Kernel::GELU, [](const KernelCall &c) { return bindUnary(c, UnaryOp::Gelu); });
    add(Kernel::GELU_TANH, [](const KernelCall &c) { return bindUnary(c, UnaryOp::GeluTanh); });
    add(Kernel::WHERE, bindWhere);
    add(Kernel::CAST, bindCast);
    add(Kernel::FUSED, bindFused);
    add(Kernel::MATMUL, bindMatMul);
    add(Kernel::SOFTMAX, [](const KernelCall &c) { return bindSoftmax(c, false); });
    add(Kernel::LOG_SOFTMAX, [](const KernelCall &c) { return bindSoftmax(c, true); });
    add(Kernel::SOFTMAX_GRAD, bindSoftmaxGrad);
    add(Kernel::ATTENTION, bindAttention);
    add(Kernel::ATTENTION_GRAD, bindAttentionGrad);
    add(Kernel::LAYER_NORM, bindLayerNorm);
    add(Kernel::LAYER_NORM_GRAD, bindLayerNormGrad);
    add(Kernel::SOFTMAX_CROSS_ENTROPY, bindCrossEntropy);
    add(Kernel::SOFTMAX_CROSS_ENTROPY_GRAD, bindCrossEntropyGrad);
    add(Kernel::SOFTMAX_CROSS_ENTROPY_WITH_GRAD, bindCrossEntropyWithGrad);
    add(Kernel::REDUCE_SUM, [](const KernelCall &c) { return bindReduce(c, false); });
    add(Kernel::REDUCE_MEAN, [](const KernelCall &c) { return bindReduce(c, true); });
    add(Kernel::RESHAPE, bindCopy);
    add(Kernel::COPY, bindCopy);
    add(Kernel::TRANSPOSE, bindTranspose);
    add(Kernel::SLICE, bindSlice);
    add(Kernel::SLICE_GRAD, bindSliceGrad);
    add(Kernel::CONCAT, bindConcat);
    add(Kernel::EXPAND, bindExpand);
    add(Kernel::GATHER, bindGather);
    add(Kernel::GATHER_GRAD, bindGatherGrad);
    add(Kernel::TRILU, bindTrilu);
    add(Kernel::RELU_GRAD,
        [](const KernelCall &c) { return bindActivationGrad(c, ActivationGrad::Relu); });
    add(Kernel::GELU_GRAD,
        [](const KernelCall &c) { return bindActivationGrad(c, ActivationGrad::Gelu); });
    add(Kernel::GELU_TANH_GRAD,
        [](const KernelCall &c) { return bindActivationGrad(c, ActivationGrad::GeluTanh); });
    add(Kernel::ADAMW, bindAdamW);
    add(Kernel::SGD, bindSgd);
    add(Kernel::NONFINITE_COUNT, bindNonfiniteCount);
    add(Kernel::SUM_SQUARES, bindSumSquares);
    add(Kernel::CLIP_GRAD_SCALE, bindClipGradScale);
    add(Kernel::ALL_GATHER, [](const KernelCall &c) { return bindCollective(c, Kind::AllGather); });
    add(Kernel::REDUCE_SCATTER,
        [](const KernelCall &c) { return bindCollective(c, Kind::ReduceScatter); });
    add(Kernel::ALL_REDUCE, [](const KernelCall &c) { return bindCollective(c, Kind::AllReduce); });
    add(Kernel::ALL_GATHER_START, [](const KernelCall &c) { return bindStart(c, Kind::AllGather); });
    add(Kernel::REDUCE_SCATTER_START,
        [](const KernelCall &c) { return bindStart(c, Kind::ReduceScatter); });
    add(Kernel::ALL_REDUCE_START, [](const KernelCall &c) { return bindStart(c, Kind::AllReduce); });
    add(Kernel::WAIT, bindWait);
    add(Kernel::ALL_SLICE, bindAllSlice);
    add(Kernel::TO_HOST, bindTransfer);
    add(Kernel::TO_DEVICE, bindTransfer);
    // Every CPU kernel has a CUDA one: a plan never meets a gap on the GPU. NVMe
    // transfers are the host's on either backend (the executor's host worker).
    for (const auto &[kind, binder] : cpuKernels())
      ZRT_CHECK(t.count(kind) || kind == Kernel::NVME_READ || kind == Kernel::NVME_WRITE,
                "the CUDA backend has no kernel '"
                                   << zero::zplan::kernelKindName(kind) << "'");
    return t;
  }();
  return table;
}
