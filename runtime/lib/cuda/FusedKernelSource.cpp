//===- FusedKernelSource.cpp - CUDA C++ for one fused program -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "FusedKernelSource.h"

#include "zrt/Error.h"

#include <cstdio>
#include <cstring>
#include <sstream>

using namespace zrt;
using namespace zrt::cuda;

namespace {

// The headers' texts, embedded by CMake (cmake/EmbedKernelHeaders.cmake).
#include "GeneratedKernelHeaders.inc"

const char *storageName(Elem t) {
  switch (t) {
  case Elem::F32:
    return "float";
  case Elem::BF16:
    return "zrt::bf16";
  case Elem::F16:
    return "zrt::f16";
  case Elem::U8:
    return "uint8_t";
  default:
    return nullptr;
  }
}

int storageBytes(Elem t) { return t == Elem::F32 ? 4 : t == Elem::U8 ? 1 : 2; }

const char *typeName(fused::Type t) {
  return t == fused::Type::BF16 ? "BF16" : t == fused::Type::F16 ? "F16" : "F32";
}

/// The op's enumerator in fused::Op, by value (the program was validated).
const char *opEnumerator(fused::Op op) {
  switch (op) {
#define ZERO_UNARY_OP(ID, ...)                                                            \
  case fused::Op::ID:                                                                   \
    return #ID;
#include "zplan/UnaryOps.def"
  case fused::Op::Const:
    return "Const";
  case fused::Op::Add:
    return "Add";
  case fused::Op::Sub:
    return "Sub";
  case fused::Op::Mul:
    return "Mul";
  case fused::Op::Div:
    return "Div";
  case fused::Op::Pow:
    return "Pow";
  case fused::Op::Cast:
    return "Cast";
  case fused::Op::Where:
    return "Where";
  case fused::Op::ReluGrad:
    return "ReluGrad";
  case fused::Op::GeluGrad:
    return "GeluGrad";
  case fused::Op::GeluTanhGrad:
    return "GeluTanhGrad";
  default:
    ZRT_CHECK(false, "a fused program names unknown op " << (int64_t)op);
    return nullptr;
  }
}

/// One run of dimensions of a view, innermost first: position (i / below) % size
/// steps `stride` elements.
struct Dim {
  int64_t size, stride;
};

/// The view's dimensions with extents of 1 dropped and neighbours that step as one
/// merged (a broadcast run of several dimensions, a contiguous block).
std::vector<Dim> dimsOf(const Strided &v) {
  std::vector<Dim> dims;
  for (int d = v.rank - 1; d >= 0; --d) {
    if (v.shape[d] == 1)
      continue;
    if (!dims.empty() && v.stride[d] == dims.back().stride * dims.back().size) {
      dims.back().size *= v.shape[d];
      continue;
    }
    dims.push_back({v.shape[d], v.stride[d]});
  }
  return dims;
}

int64_t maxOffset(const Strided &v) {
  int64_t off = 0;
  for (int d = 0; d < v.rank; ++d)
    off += (v.shape[d] - 1) * v.stride[d];
  return off;
}

bool isScalar(const Strided &v) { return maxOffset(v) == 0; }

} // namespace

uint64_t zrt::cuda::sourceHash(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

const std::vector<std::pair<std::string, std::string>> &zrt::cuda::generatedKernelHeaders() {
  static const std::vector<std::pair<std::string, std::string>> headers = [] {
    std::vector<std::pair<std::string, std::string>> h;
    for (const EmbeddedHeader &e : kEmbeddedHeaders)
      h.push_back({e.name, e.text});
    return h;
  }();
  return headers;
}

FusedKernelSource zrt::cuda::fusedKernelSource(const std::vector<fused::Instruction> &code,
                                               const std::vector<FusedOperand> &ins,
                                               const FusedOperand &out, int64_t n) {
  ZRT_CHECK(out.type == Elem::F32 || out.type == Elem::BF16 || out.type == Elem::F16,
            "a generated fused kernel writes f32, bf16 or f16, not this output's type");
  for (const FusedOperand &in : ins)
    ZRT_CHECK(storageName(in.type), "a generated fused kernel reads f32, bf16, f16 or "
                                    "bool inputs, not this input's type");
  const int inputs = (int)ins.size();

  // Elements per thread: 16 bytes of the widest operand read or written whole
  // (contiguous and aligned), 1 when there is none.
  auto vectorized = [&](const FusedOperand &o) { return o.view.contiguous && o.aligned16; };
  int widest = 0;
  for (const FusedOperand &in : ins)
    if (vectorized(in) && !isScalar(in.view))
      widest = std::max(widest, storageBytes(in.type));
  if (out.aligned16)
    widest = std::max(widest, storageBytes(out.type));
  const int V = widest ? 16 / widest : 1;

  // 32-bit positions and offsets where every one fits.
  bool index32 = n + V < (int64_t(1) << 31);
  for (const FusedOperand &in : ins)
    index32 = index32 && maxOffset(in.view) < (int64_t(1) << 31);
  const char *I = index32 ? "unsigned int" : "unsigned long long";
  const char *sfx = index32 ? "u" : "ull";

  std::ostringstream body;
  body << "using I = " << I << ";\nconstexpr int V = " << V << ";\n"
       << "template <typename T> struct alignas(sizeof(T) * V) Chunk {\n  T v[V];\n};\n";

  // Where each broadcast input's element for output position i lies.
  for (int k = 0; k < inputs; ++k) {
    const Strided &v = ins[k].view;
    if (v.contiguous || isScalar(v))
      continue;
    std::vector<Dim> dims = dimsOf(v);
    body << "ZRT_HOST_DEVICE inline I offset" << k << "(I i) {\n  I off = 0;\n";
    for (size_t d = 0; d < dims.size(); ++d) {
      bool outermost = d + 1 == dims.size();
      if (dims[d].stride != 0) {
        body << "  off += " << (outermost ? "i" : "i % " + std::to_string(dims[d].size) + sfx);
        if (dims[d].stride != 1)
          body << " * " << dims[d].stride << sfx;
        body << ";\n";
      }
      if (!outermost)
        body << "  i /= " << dims[d].size << sfx << ";\n";
    }
    body << "  return off;\n}\n";
  }

  // The program: one statement per instruction, rounded as the interpreter rounds.
  body << "ZRT_HOST_DEVICE inline float compute(";
  for (int k = 0; k < inputs; ++k)
    body << (k ? ", " : "") << "float v" << k;
  body << ") {\n";
  for (size_t j = 0; j < code.size(); ++j) {
    const fused::Instruction &x = code[j];
    int reads = fused::operandCount(x.op);
    auto operand = [&](int which, int64_t value) {
      return which < reads ? "v" + std::to_string(value) : std::string("0.0f");
    };
    std::string constant = "0.0f";
    if (x.op == fused::Op::Const) {
      double d;
      std::memcpy(&d, &x.a, sizeof d);
      float f = (float)d;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      char hex[32];
      std::snprintf(hex, sizeof hex, "zrt::bitsFloat(0x%08xu)", bits);
      constant = hex;
    }
    body << "  float v" << inputs + j << " = zrt::kernels::roundTo(zrt::fused::Type::"
         << typeName(x.type) << ", zrt::kernels::fusedApply(zrt::fused::Op::"
         << opEnumerator(x.op) << ", " << operand(0, x.a) << ", " << operand(1, x.b) << ", "
         << operand(2, x.c) << ", " << constant << "));\n";
  }
  body << "  return v" << inputs + code.size() - 1 << ";\n}\n";

  // A thread's V elements: whole chunks where the operands allow, else one by one.
  const char *outT = storageName(out.type);
  body << "ZRT_HOST_DEVICE inline void thread(";
  for (int k = 0; k < inputs; ++k)
    body << "const " << storageName(ins[k].type) << " *__restrict__ in" << k << ", ";
  body << outT << " *__restrict__ out, I n, I t) {\n  I base = t * V;\n";
  for (int k = 0; k < inputs; ++k)
    if (isScalar(ins[k].view))
      body << "  float s" << k << " = (float)in" << k << "[0];\n";
  auto element = [&](int k, const std::string &i, bool chunked) {
    if (isScalar(ins[k].view))
      return "s" + std::to_string(k);
    if (chunked && vectorized(ins[k]))
      return "(float)c" + std::to_string(k) + ".v[e]";
    std::string at = ins[k].view.contiguous ? i : "offset" + std::to_string(k) + "(" + i + ")";
    return "(float)in" + std::to_string(k) + "[" + at + "]";
  };
  auto call = [&](const std::string &i, bool chunked) {
    std::string c = "compute(";
    for (int k = 0; k < inputs; ++k)
      c += (k ? ", " : "") + element(k, i, chunked);
    return c + ")";
  };
  if (V > 1) {
    body << "  if (base + V <= n) {\n";
    for (int k = 0; k < inputs; ++k)
      if (vectorized(ins[k]) && !isScalar(ins[k].view))
        body << "    Chunk<" << storageName(ins[k].type) << "> c" << k
             << " = *reinterpret_cast<const Chunk<" << storageName(ins[k].type)
             << "> *>(in" << k << " + base);\n";
    if (out.aligned16) {
      body << "    Chunk<" << outT << "> r;\n#pragma unroll\n    for (int e = 0; e < V; ++e)\n"
           << "      r.v[e] = " << outT << "(" << call("base + e", true) << ");\n"
           << "    *reinterpret_cast<Chunk<" << outT << "> *>(out + base) = r;\n";
    } else {
      body << "#pragma unroll\n    for (int e = 0; e < V; ++e)\n"
           << "      out[base + e] = " << outT << "(" << call("base + e", true) << ");\n";
    }
    body << "    return;\n  }\n";
  }
  body << "  for (I i = base; i < n && i < base + V; ++i)\n    out[i] = " << outT << "("
       << call("i", false) << ");\n}\n";

  std::string text = body.str();
  char name[40];
  std::snprintf(name, sizeof name, "zero_fused_%016llx", (unsigned long long)sourceHash(text));

  // The entry points: a CUDA kernel under NVRTC; for the emulator, one thread's
  // work behind a plain function and the count of its (8-byte) parameters.
  // The code in a namespace of its own (an entry point cannot share its name).
  std::string ns = std::string(name) + "_code";
  std::ostringstream src;
  src << "namespace " << ns << " {\n" << text << "} // namespace " << ns << "\n";
  src << "#ifdef __CUDACC_RTC__\nextern \"C\" __global__ void __launch_bounds__(256) " << name
      << "(";
  for (int k = 0; k < inputs; ++k)
    src << "const " << storageName(ins[k].type) << " *in" << k << ", ";
  src << outT << " *out, unsigned long long n) {\n"
      << "  unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
      << "  if (t * " << ns << "::V < n)\n    " << ns << "::thread(";
  for (int k = 0; k < inputs; ++k)
    src << "in" << k << ", ";
  src << "out, (" << ns << "::I)n, (" << ns << "::I)t);\n}\n#else\n";
  src << "extern \"C\" const int " << name << "_params = " << inputs + 2 << ";\n"
      << "extern \"C\" const int " << name << "_pointer_params = " << inputs + 1 << ";\n"
      << "extern \"C\" void " << name << "_thread(void *const *p, unsigned long long t) {\n"
      << "  unsigned long long n = *static_cast<const unsigned long long *>(p[" << inputs + 1
      << "]);\n  if (t * " << ns << "::V < n)\n    " << ns << "::thread(";
  for (int k = 0; k < inputs; ++k)
    src << "*static_cast<const " << storageName(ins[k].type) << " *const *>(p[" << k << "]), ";
  src << "*static_cast<" << outT << " *const *>(p[" << inputs << "]), (" << ns
      << "::I)n, (" << ns << "::I)t);\n}\n#endif\n";

  FusedKernelSource result;
  result.name = name;
  result.source = src.str();
  result.elementsPerThread = V;
  result.threads = (n + V - 1) / V;
  result.params = inputs + 2;
  return result;
}
