//===- DataMovement.cpp - Reshape, transpose, slice, concat, gather -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// These kernels move bytes without looking at values, so most work on any dtype by
// element size.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "VectorLoops.h"
#include "zrt/NvmeFile.h"

#include <cstring>

using namespace zrt;
using namespace zrt::cpu;

namespace {

/// out[i] = in[base + offset(i)], with the output walked in row-major order and the
/// input through `strides` (elements): transpose, slice and broadcast in one loop.
BoundKernel stridedCopy(const TensorView &in, const TensorView &out, Shape strides,
                        int64_t base) {
  return dispatchBySize(dtypeSize(in.dtype), [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=] {
      const T *src = in.as<T>() + base;
      T *dst = out.as<T>();
      // Runs of contiguous elements are one memcpy each (a head split moves rows of
      // the head size); runs of one repeated element, a fill.
      forEachRun<1>(out.shape, std::array<Shape, 1>{strides},
                    [&](int64_t i, auto off, auto step, int64_t n) {
                      if (step[0] == 1)
                        std::memcpy(dst + i, src + off[0], n * sizeof(T));
                      else if (step[0] == 0)
                        std::fill(dst + i, dst + i + n, src[off[0]]);
                      else
                        for (int64_t j = 0; j < n; ++j)
                          dst[i + j] = src[off[0] + j * step[0]];
                    });
    };
  });
}

/// reshape (same bytes, another shape) and copy (into a parameter or state buffer
/// at the end of a step) are both a memcpy.
BoundKernel bindCopy(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.dtype == out.dtype && x.numel() == out.numel(),
            call.where() << ": changes dtype or element count");
  if (x.data == out.data)
    return [] {};
  return [=] { std::memcpy(out.data, x.data, x.bytes()); };
}

BoundKernel bindTranspose(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  std::vector<int64_t> perm = call.intsAttr("perm");
  int64_t rank = x.shape.size();
  ZRT_CHECK((int64_t)perm.size() == rank, call.where() << ": perm has wrong length");
  Shape shape(rank), st = stridesOf(x.shape), permStrides(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    ZRT_CHECK(perm[i] >= 0 && perm[i] < rank && !seen[perm[i]],
              call.where() << ": perm is not a permutation");
    seen[perm[i]] = true;
    shape[i] = x.shape[perm[i]];
    permStrides[i] = st[perm[i]];
  }
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  expectShape(call, out, shape, "result");
  return stridedCopy(x, out, permStrides, 0);
}

BoundKernel bindSlice(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  SliceWindow w = sliceWindow(call, x.shape, out.shape, "result", "input", "reads");
  return stridedCopy(x, out, w.strides, w.base);
}

BoundKernel bindConcat(const KernelCall &call) {
  ZRT_CHECK(!call.ins.empty() && call.outs.size() == 1,
            call.where() << ": takes inputs and one output");
  const TensorView out = call.outs[0];
  int64_t axis = call.intAttr("axis");
  int64_t rank = out.shape.size();
  ZRT_CHECK(axis >= 0 && axis < rank, call.where() << ": axis out of range");
  int64_t total = 0;
  for (const TensorView &in : call.ins) {
    ZRT_CHECK(in.dtype == out.dtype && (int64_t)in.shape.size() == rank,
              call.where() << ": input does not match the result");
    for (int64_t d = 0; d < rank; ++d)
      ZRT_CHECK(d == axis || in.shape[d] == out.shape[d],
                call.where() << ": input shape " << shapeString(in.shape)
                             << " does not fit " << shapeString(out.shape));
    total += in.shape[axis];
  }
  ZRT_CHECK(total == out.shape[axis], call.where() << ": axis sizes do not add up");
  // Rows of bytes: outer rows, each `inner` bytes per position along the axis.
  int64_t outer = extentProduct(out.shape, 0, axis),
          inner = extentProduct(out.shape, axis + 1, rank) * dtypeSize(out.dtype);
  std::vector<TensorView> ins = call.ins;
  int64_t rowBytes = out.shape[axis] * inner;
  return [=] {
    // Rows split over the kernel threads, kParallelGrain f32 elements' bytes or more each.
    int64_t grain = std::max<int64_t>(1, kParallelGrain * 4 / std::max<int64_t>(rowBytes, 1));
    parallelFor(outer, grain, [&](int64_t lo, int64_t hi) {
      char *o = out.as<char>() + lo * rowBytes;
      for (int64_t i = lo; i < hi; ++i)
        for (const TensorView &in : ins) {
          int64_t chunk = in.shape[axis] * inner;
          std::memcpy(o, in.as<char>() + i * chunk, chunk);
          o += chunk;
        }
    });
  };
}

BoundKernel bindExpand(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.dtype == out.dtype, call.where() << ": dtype changes");
  Shape shape = broadcastShapes({x.shape, out.shape}, call);
  expectShape(call, out, shape, "result");
  return stridedCopy(x, out, broadcastStrides(x.shape, shape), 0);
}

BoundKernel bindGather(const KernelCall &call) {
  call.expectArity(2, 1);
  const TensorView data = call.ins[0], idx = call.ins[1], out = call.outs[0];
  int64_t axis = call.intAttr("axis");
  Shape expected = gatheredShape(call, data.shape, axis, idx);
  ZRT_CHECK(data.dtype == out.dtype, call.where() << ": dtype changes");
  expectShape(call, out, expected, "result");
  int64_t outer, dim, inner;
  splitAxis(data.shape, axis, outer, dim, inner);
  inner *= dtypeSize(data.dtype); // rows of bytes
  bool idx64 = idx.dtype == zero::zplan::I64;
  std::string where = call.where();
  return [=] {
    int64_t n = idx.numel();
    char *o = out.as<char>();
    const char *src = data.as<char>();
    for (int64_t i = 0; i < outer; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = idx64 ? idx.as<int64_t>()[j] : idx.as<int32_t>()[j];
        int64_t k = at < 0 ? at + dim : at;
        ZRT_CHECK(k >= 0 && k < dim, where << ": index " << at << " out of range [-"
                                           << dim << ", " << dim << ")");
        std::memcpy(o, src + (i * dim + k) * inner, inner);
        o += inner;
      }
  };
}

BoundKernel bindTrilu(const KernelCall &call) {
  call.expectArity(1, 1);
  const TensorView x = call.ins[0], out = call.outs[0];
  ZRT_CHECK(x.shape.size() >= 2 && x.dtype == out.dtype,
            call.where() << ": input must have rank >= 2");
  expectShape(call, out, x.shape, "result");
  bool upper = call.intAttr("upper") != 0;
  int64_t k = call.intAttr("k");
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  int64_t size = dtypeSize(x.dtype);
  return [=] {
    int64_t mats = (rows * cols) != 0 ? x.numel() / (rows * cols) : 0;
    const char *in = x.as<char>();
    char *o = out.as<char>();
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t e = (m * rows + i) * cols + j;
          bool keep = upper ? j - i >= k : j - i <= k;
          if (keep)
            std::memcpy(o + e * size, in + e * size, size);
          else
            std::memset(o + e * size, 0, size);
        }
  };
}

/// NVMe offload: an NVMe buffer from or to a host buffer of its size, through
/// the file's staging pool (NvmeFile: asynchronous direct I/O).
BoundKernel bindNvmeTransfer(const KernelCall &call) {
  call.expectArity(1, 1);
  bool read = call.kind == Kernel::NVME_READ;
  const TensorView &host = read ? call.outs[0] : call.ins[0];
  ZRT_CHECK(call.ins[0].dtype == call.outs[0].dtype &&
                call.ins[0].bytes() == call.outs[0].bytes(),
            call.where() << " moves a buffer of " << call.ins[0].bytes()
                         << " bytes into one of " << call.outs[0].bytes());
  NvmeFile *file = call.nvme;
  char *at = host.as<char>();
  int64_t offset = call.nvmeOffset, bytes = host.bytes();
  DType dtype = host.dtype;
  std::string where = call.where();
  return [=] {
    ZRT_CHECK(file, where << ": this run has no NVMe offload file");
    if (read)
      file->read(offset, at, bytes);
    else
      file->write(offset, at, bytes, dtype);
  };
}

} // namespace

void zrt::addDataMovementKernels(KernelTable &t) {
  t[Kernel::NVME_READ] = bindNvmeTransfer;
  t[Kernel::NVME_WRITE] = bindNvmeTransfer;
  t[Kernel::RESHAPE] = bindCopy;
  t[Kernel::COPY] = bindCopy;
  // Optimizer offload: on the CPU the device's memory is host memory too.
  t[Kernel::TO_HOST] = bindCopy;
  t[Kernel::TO_DEVICE] = bindCopy;
  t[Kernel::TRANSPOSE] = bindTranspose;
  t[Kernel::SLICE] = bindSlice;
  t[Kernel::CONCAT] = bindConcat;
  t[Kernel::EXPAND] = bindExpand;
  t[Kernel::GATHER] = bindGather;
  t[Kernel::TRILU] = bindTrilu;
}
