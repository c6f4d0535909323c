//===- CudaMatMulBinders.cpp - Matrix products ------------------------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The CUDA binder of the matmul kind: cuBLASLt GEMMs, set up once when the plan
// is bound (descriptors, layouts, the heuristic's algorithm), with the bias
// epilogue and strided operands.
//
//===----------------------------------------------------------------------===//

#include "CublasLoader.h"
#include "CudaBinders.h"
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
using namespace zrt::cuda::binders;

namespace zrt::cuda::binders {

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

} // namespace zrt::cuda::binders
