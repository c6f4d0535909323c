//===- Calibrate.cpp - Measure the cost model's machine figures -----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Calibrate.h"
#include "zrt/Float16.h"
#include "zrt/Kernels.h"
#include "zrt/NvmeFile.h"
#include "zrt/ParallelFor.h"
#include "zplan/MachineFile.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

using namespace zrt;

namespace {

/// The best of `repeats` timings of `fn`, in seconds (the least disturbed run).
double bestSeconds(int repeats, const std::function<void()> &fn) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                        start)
                              .count());
  }
  return best;
}

/// The device's kernel figures, measured through its kernel table.
struct DeviceFigures {
  double matmulFlops = 0, matmulFlops16 = 0, vectorFlops = 0, bandwidth = 0, overhead = 0;
};

/// `small`: sizes for a test on an emulated GPU (the figures mean nothing).
DeviceFigures measureDevice(Device &device, bool small) {
  std::vector<void *> owned;
  auto tensor = [&](DType t, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    owned.push_back(device.allocate((size_t)n * dtypeSize(t)));
    return TensorView{owned.back(), t, std::move(shape)};
  };
  auto kernel = [&](KernelKind kind, std::vector<TensorView> ins,
                    std::vector<TensorView> outs) {
    KernelCall call;
    call.kind = kind;
    call.loc = "the calibration";
    call.ins = std::move(ins);
    call.outs = std::move(outs);
    return bindKernelCall(device.kernels(), call);
  };
  // Seconds per run of `k`: one warm-up, then the best of 3 batches of `runs`,
  // each between two synchronizations (their cost spread over the batch).
  auto perRun = [&](const BoundKernel &k, int runs) {
    k();
    device.synchronize();
    return bestSeconds(3, [&] {
             for (int i = 0; i < runs; ++i)
               k();
             device.synchronize();
           }) /
           runs;
  };
  DeviceFigures f;
  // GEMMs large enough for the tensor cores' steady state (2 n^3 each).
  const int64_t n = small ? 128 : 4096;
  for (DType t : {zero::zplan::F32, zero::zplan::BF16}) {
    BoundKernel mm = kernel(Kernel::MATMUL, {tensor(t, {n, n}), tensor(t, {n, n})},
                            {tensor(t, {n, n})});
    double flops = 2.0 * n * n * n / perRun(mm, small ? 2 : 10);
    (t == zero::zplan::F32 ? f.matmulFlops : f.matmulFlops16) = flops;
  }
  // Bandwidth: a copy far larger than the caches (bytes read + written).
  const int64_t big = small ? 1 << 16 : 64 << 20; // f32 elements: 256 MB
  TensorView src = tensor(zero::zplan::F32, {big}), dst = tensor(zero::zplan::F32, {big});
  f.bandwidth = 2.0 * big * 4 / perRun(kernel(Kernel::COPY, {src}, {dst}), small ? 2 : 10);
  // Elementwise arithmetic: tanh, 10 FLOPs an element as the cost model counts a
  // transcendental function, over data that stays in the caches.
  const int64_t cached = small ? 1 << 12 : 1 << 20;
  TensorView in = tensor(zero::zplan::F32, {cached}), out = tensor(zero::zplan::F32, {cached});
  f.vectorFlops = 10.0 * cached / perRun(kernel(Kernel::TANH, {in}, {out}), small ? 10 : 100);
  // What a kernel costs besides its work: a one-element copy, launched back to back.
  TensorView one = tensor(zero::zplan::F32, {1}), other = tensor(zero::zplan::F32, {1});
  f.overhead = perRun(kernel(Kernel::COPY, {one}, {other}), small ? 100 : 2000);
  device.synchronize();
  for (void *p : owned)
    device.release(p);
  return f;
}

/// This host's kernel figures (the CPU backend's).
DeviceFigures measureHost() {
  DeviceFigures f;
  // GEMM: a square product big enough to reach the BLAS's steady state, split
  // into row blocks over the kernels' threads as the matmul kernel splits it.
  const int n = 768;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
  double gemm = bestSeconds(5, [&] {
    parallelFor(n, 8, [&](int64_t lo, int64_t hi) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(hi - lo), n, n, 1.0f,
                  a.data() + lo * n, n, b.data(), n, 0.0f, c.data() + lo * n, n);
    });
  });
  f.matmulFlops = 2.0 * n * n * n / gemm;

  // Memory bandwidth: a copy larger than the caches (bytes read + written).
  const size_t bytes = 64 << 20;
  std::vector<char> src(bytes, 1), dst(bytes);
  double copy = bestSeconds(5, [&] { std::memcpy(dst.data(), src.data(), bytes); });
  f.bandwidth = 2.0 * bytes / copy;

  // Vector FLOP/s: a transcendental loop in cache, as the elementwise kernels do.
  std::vector<float> v(1 << 16, 0.5f);
  double vec = bestSeconds(5, [&] {
    for (float &x : v)
      x = std::tanh(x) * 0.5f + 0.25f;
  });
  f.vectorFlops = 10.0 * v.size() / vec;

  // Kernel overhead: a tiny kernel, dominated by its fixed cost.
  std::vector<float> tiny(16, 1.0f);
  f.overhead = bestSeconds(1000, [&] {
    for (float &x : tiny)
      x = x * 0.999f;
  });
  return f;
}

} // namespace

/// Bytes/s of writing then reading `bytes` of a rank's NVMe file, as NVMe offload
/// moves a buffer (asynchronous direct I/O, zero-run's default queue depth).
static std::pair<double, double> measureNvme(const std::string &dir, int rank, int64_t bytes) {
  NvmeFile file(dir, rank, bytes, kDefaultNvmeQueueDepth);
  std::vector<char> host(bytes, 1);
  auto timed = [&](bool write) {
    auto t0 = std::chrono::steady_clock::now();
    if (write)
      file.write(0, host.data(), bytes, zero::zplan::U8);
    else
      file.read(0, host.data(), bytes);
    return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                       .count();
  };
  double write = timed(true);
  return {timed(false), write};
}

std::string zrt::calibrateMachine(Communicator &comm, Device *device, bool small,
                                  const std::string &nvmePath) {
  DeviceFigures f = device ? measureDevice(*device, small) : measureHost();
  std::pair<double, double> nvme;
  if (!nvmePath.empty()) // 1 GiB: past the drive's own cache's effect on writes
    nvme = measureNvme(nvmePath, comm.rank(), small ? 16 << 20 : int64_t(1) << 30);

  // Ring alpha and beta: all-gathers of a tiny and of a large buffer. With one
  // rank nothing crosses a wire.
  double alpha = 0, beta = 0;
  int ranks = comm.size();
  if (ranks > 1) {
    const int64_t one = 1, large = 1 << 22;
    std::vector<float> in(large), out(large * ranks);
    double ts = bestSeconds(20, [&] {
      comm.allGather(in.data(), out.data(), one, zero::zplan::F32);
    });
    double tl = bestSeconds(5, [&] {
      comm.allGather(in.data(), out.data(), large, zero::zplan::F32);
    });
    alpha = ts / (ranks - 1);
    double fullBytes = 4.0 * large * ranks;
    beta = std::max(0.0, tl - alpha * (ranks - 1)) / (fullBytes * (ranks - 1) / ranks);
    comm.allGatherElements = 0; // calibration traffic is not the plan's
  }

  std::ostringstream os;
  os.precision(6);
  namespace key = zplan::machine;
  auto field = [&](const char *name, double value, bool last = false) {
    os << "  \"" << name << "\": " << value << (last ? "\n" : ",\n");
  };
  os << "{\n  \"" << key::kName << "\": \"calibrated (" << comm.name()
     << (device ? ", " + device->name() : std::string()) << ")\",\n";
  field(key::kMatmulFlops, f.matmulFlops);
  if (device)
    field(key::kMatmulFlops16, f.matmulFlops16);
  field(key::kVectorFlops, f.vectorFlops);
  field(key::kMemoryBandwidth, f.bandwidth);
  field(key::kKernelOverheadS, f.overhead);
  field(key::kAlphaS, alpha);
  if (!nvmePath.empty()) {
    field(key::kNvmeReadBandwidth, nvme.first);
    field(key::kNvmeWriteBandwidth, nvme.second);
  }
  field(key::kBetaSPerByte, beta, true);
  os << "}\n";
  return os.str();
}
