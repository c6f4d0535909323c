//===- ConstantEvaluator.cpp - Fold shape subgraphs at import -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// torch.onnx.export writes shapes as small subgraphs (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape). Evaluating them here gives every tensor a static shape. Only
// Constant nodes (integer initializers become ones), values derived from them or
// from static shapes are evaluated; float parameters' bytes are never read. A table
// (folderTable) gives each foldable op its folder, as OpBuilders.cpp's gives each op
// its builder.
//
//===----------------------------------------------------------------------===//

#include "ConstantFolding.h"
#include "OnnxImporter.h"
#include "zero/Support/ShapeRules.h"

#include "mlir/IR/BuiltinTypes.h"

#include "zrt/Error.h"
#include "zrt/ExternalData.h"
#include "zrt/Tensor.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <map>

using namespace zero::onnx_import;
using namespace zero::onnx_import::folding;
using onnx::TensorProto;

namespace {

/// Constant: its `value` tensor, or a scalar or list attribute.
std::optional<ConstTensor> foldConstant(const FoldInput &f) {
  std::string &error = f.error;
  if (const auto *a = findAttr(f.node, "value"))
    return constFromProto(a->t(), error);
  ConstTensor c;
  if (const auto *a = findAttr(f.node, "value_float")) {
    c = withShape(TensorProto::FLOAT, {});
    c.floats.push_back(a->f());
  } else if (const auto *a = findAttr(f.node, "value_floats")) {
    c = withShape(TensorProto::FLOAT, {(int64_t)a->floats_size()});
    c.floats.assign(a->floats().begin(), a->floats().end());
  } else if (const auto *a = findAttr(f.node, "value_int")) {
    c = withShape(TensorProto::INT64, {});
    c.ints.push_back(a->i());
  } else if (const auto *a = findAttr(f.node, "value_ints")) {
    c = withShape(TensorProto::INT64, {(int64_t)a->ints_size()});
    c.ints.assign(a->ints().begin(), a->ints().end());
  } else {
    error = "Constant has no supported value attribute (sparse and string "
            "constants are not supported)";
    return std::nullopt;
  }
  return c;
}

/// Shape of a tensor whose shape is static (`start`, `end` clamped as ONNX says).
std::optional<ConstTensor> foldShape(const FoldInput &f) {
  if (!f.firstInputShape)
    return std::nullopt;
  int64_t rank = f.firstInputShape->size();
  int64_t start = f.intAttr("start", 0), end = f.intAttr("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  ConstTensor c = withShape(TensorProto::INT64, {std::max<int64_t>(end - start, 0)});
  for (int64_t i = start; i < end; ++i)
    c.ints.push_back((*f.firstInputShape)[i]);
  return c;
}

/// ConstantOfShape: `value` (default 0.0f) repeated over the given shape.
std::optional<ConstTensor> foldConstantOfShape(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(1))
    return std::nullopt;
  ConstTensor value = withShape(TensorProto::FLOAT, {1});
  value.floats.push_back(0.0);
  if (const auto *a = findAttr(f.node, "value")) {
    auto v = constFromProto(a->t(), error);
    if (!v)
      return std::nullopt;
    if (v->numel() != 1) {
      error = "ConstantOfShape's value must hold one element";
      return std::nullopt;
    }
    value = *v;
  }
  std::vector<int64_t> shape;
  if (!intValues(*in[0], "ConstantOfShape's shape", shape, error) ||
      !fitsFolding(shape, error))
    return std::nullopt;
  ConstTensor c = withShape(value.dtype, shape);
  for (int64_t k = 0; k < c.numel(); ++k)
    pushConverted(c, value, 0);
  return c;
}

/// Identity.
std::optional<ConstTensor> foldIdentity(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  if (!f.has(1))
    return std::nullopt;
  return *in[0];
}

/// Cast to `to`, converting every element.
std::optional<ConstTensor> foldCast(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(1))
    return std::nullopt;
  int32_t to = f.intAttr("to", 0);
  if (!isSupportedType(to)) {
    error = "Cast to unsupported type " +
            TensorProto::DataType_Name((TensorProto::DataType)to);
    return std::nullopt;
  }
  ConstTensor c = withShape(widenedType(to), in[0]->shape);
  for (int64_t k = 0; k < in[0]->numel(); ++k)
    pushConverted(c, *in[0], k);
  return c;
}

/// Reshape (0 copies a dimension unless `allowzero`, -1 is inferred), Unsqueeze,
/// Squeeze and Flatten: the same elements in a new shape.
std::optional<ConstTensor> foldReshape(const FoldInput &f) {
  const std::string &op = f.node.op_type();
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  bool oneInput = op == "Squeeze" || op == "Flatten";
  if (!f.has(1) || (!oneInput && !f.has(2)))
    return std::nullopt;
  const ConstTensor &x = *in[0];
  std::vector<int64_t> shape, operand;
  if (in.size() > 1 && in[1] &&
      !intValues(*in[1], op == "Reshape" ? "the shape" : "axes", operand, error))
    return std::nullopt;
  if (op == "Flatten") {
    // [d0 ... d(axis-1)] x [d(axis) ... d(rank-1)].
    int64_t rank = x.shape.size();
    int64_t axis = zero::normalizeAxis(f.intAttr("axis", 1), rank);
    if (axis < 0 || axis > rank) {
      error = "Flatten axis out of range";
      return std::nullopt;
    }
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i)
      (i < axis ? outer : inner) *= x.shape[i];
    shape = {outer, inner};
  } else if (op == "Reshape") {
    bool allowZero = f.intAttr("allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < operand.size(); ++i) {
      int64_t d = operand[i];
      if (d == 0 && !allowZero)
        d = i < x.shape.size() ? x.shape[i] : 0;
      if (d < -1 || (d == -1 && infer >= 0)) {
        error = "the shape has a bad dimension (" + std::to_string(operand[i]) + ")";
        return std::nullopt;
      }
      if (d == -1)
        infer = i;
      else if (__builtin_mul_overflow(known, d, &known))
        known = -1; // cannot match any element count
      shape.push_back(d);
    }
    if (infer >= 0)
      shape[infer] = known > 0 && x.numel() % known == 0 ? x.numel() / known : -1;
  } else {
    std::vector<int64_t> axes = operand;
    if (op == "Unsqueeze") {
      int64_t rank = x.shape.size() + axes.size();
      std::vector<bool> isNew(rank, false);
      for (int64_t a : axes) {
        a = zero::normalizeAxis(a, rank);
        if (a < 0 || a >= rank || isNew[a]) {
          error = "Unsqueeze axis out of range or repeated";
          return std::nullopt;
        }
        isNew[a] = true;
      }
      size_t j = 0;
      for (int64_t i = 0; i < rank; ++i)
        shape.push_back(isNew[i] ? 1 : x.shape[j++]);
    } else {
      int64_t rank = x.shape.size();
      for (int64_t a : axes)
        if (zero::normalizeAxis(a, rank) < 0 || zero::normalizeAxis(a, rank) >= rank) {
          error = "Squeeze axis out of range";
          return std::nullopt;
        }
      for (int64_t i = 0; i < rank; ++i) {
        bool drop = axes.empty() ? x.shape[i] == 1 : false;
        for (int64_t a : axes)
          drop |= zero::normalizeAxis(a, rank) == i;
        if (!drop)
          shape.push_back(x.shape[i]);
      }
    }
  }
  if (checkedNumel(shape) != x.numel()) {
    error = "the new shape changes the element count";
    return std::nullopt;
  }
  ConstTensor c = x;
  c.shape = shape;
  return c;
}

/// Concat along `axis`.
std::optional<ConstTensor> foldConcat(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  for (auto *c : in)
    if (!c)
      return std::nullopt;
  if (in.empty())
    return std::nullopt;
  int64_t rank = in[0]->shape.size();
  int64_t axis = zero::normalizeAxis(f.intAttr("axis", 0), rank);
  if (axis < 0 || axis >= rank) {
    error = "Concat axis out of range";
    return std::nullopt;
  }
  std::vector<int64_t> shape = in[0]->shape;
  shape[axis] = 0;
  for (auto *c : in) {
    bool same = (int64_t)c->shape.size() == rank && c->isFloat() == in[0]->isFloat();
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == axis || c->shape[d] == in[0]->shape[d];
    if (!same) {
      error = "Concat inputs differ in rank, type or a dimension other than the axis";
      return std::nullopt;
    }
    shape[axis] += c->shape[axis];
  }
  if (!fitsFolding(shape, error))
    return std::nullopt;
  ConstTensor out = withShape(in[0]->dtype, shape);
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (int64_t o = 0; o < outer; ++o)
    for (auto *c : in) {
      int64_t chunk = c->numel() / std::max<int64_t>(outer, 1);
      for (int64_t k = 0; k < chunk; ++k)
        pushConverted(out, *c, o * chunk + k);
    }
  return out;
}

/// Gather along `axis` (negative indices count from the end).
std::optional<ConstTensor> foldGather(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(2))
    return std::nullopt;
  const ConstTensor &data = *in[0], &idx = *in[1];
  int64_t rank = data.shape.size();
  int64_t axis = zero::normalizeAxis(f.intAttr("axis", 0), rank);
  if (rank == 0 || axis < 0 || axis >= rank) {
    error = "Gather axis out of range";
    return std::nullopt;
  }
  if (idx.isFloat()) {
    error = "Gather indices must be integers";
    return std::nullopt;
  }
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (!fitsFolding(shape, error))
    return std::nullopt;
  int64_t outer = 1, inner = 1, dim = data.shape[axis];
  for (int64_t i = 0; i < axis; ++i)
    outer *= data.shape[i];
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= data.shape[i];
  ConstTensor out = withShape(data.dtype, shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < idx.numel(); ++j) {
      int64_t at = idx.ints[j] < 0 ? idx.ints[j] + dim : idx.ints[j];
      if (at < 0 || at >= dim) {
        error = "Gather index " + std::to_string(idx.ints[j]) + " out of range";
        return std::nullopt;
      }
      for (int64_t i = 0; i < inner; ++i)
        pushConverted(out, data, (o * dim + at) * inner + i);
    }
  return out;
}

/// Slice: starts and ends clamped to the dimension, any nonzero step.
std::optional<ConstTensor> foldSlice(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(3))
    return std::nullopt;
  const ConstTensor &x = *in[0];
  int64_t rank = x.shape.size();
  std::vector<int64_t> starts, ends, axesIn, stepsIn;
  if (!intValues(*in[1], "Slice's starts", starts, error) ||
      !intValues(*in[2], "Slice's ends", ends, error) ||
      (in.size() > 3 && in[3] && !intValues(*in[3], "Slice's axes", axesIn, error)) ||
      (in.size() > 4 && in[4] && !intValues(*in[4], "Slice's steps", stepsIn, error)))
    return std::nullopt;
  if (ends.size() != starts.size() || (in.size() > 3 && in[3] && axesIn.size() != starts.size()) ||
      (in.size() > 4 && in[4] && stepsIn.size() != starts.size())) {
    error = "Slice's starts, ends, axes and steps differ in length";
    return std::nullopt;
  }
  std::vector<int64_t> begin(rank, 0), steps(rank, 1), shape = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axesIn.empty() ? (int64_t)i : zero::normalizeAxis(axesIn[i], rank);
    if (a < 0 || a >= rank) {
      error = "Slice axis out of range";
      return std::nullopt;
    }
    int64_t step = stepsIn.empty() ? 1 : stepsIn[i];
    auto bounds = zero::sliceBounds(starts[i], ends[i], step, x.shape[a]);
    if (!bounds) {
      error = "Slice step is zero or out of range";
      return std::nullopt;
    }
    shape[a] = bounds->count;
    begin[a] = bounds->start;
    steps[a] = step;
  }
  ConstTensor out = withShape(x.dtype, shape);
  std::vector<int64_t> st = stridesOf(x.shape);
  forEachIndex(shape, [&](const std::vector<int64_t> &idx) {
    int64_t lin = 0;
    for (int64_t d = 0; d < rank; ++d)
      lin += (begin[d] + idx[d] * steps[d]) * st[d];
    pushConverted(out, x, lin);
  });
  return out;
}

/// Add, Sub, Mul, Div, the comparisons, And and Or with numpy broadcasting.
std::optional<ConstTensor> foldBinary(const FoldInput &f) {
  const std::string &op = f.node.op_type();
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(2))
    return std::nullopt;
  return elementwise(op, {in[0], in[1]}, error);
}

/// Max and Min of one or more tensors (numpy broadcasting), pairwise.
std::optional<ConstTensor> foldMaxMin(const FoldInput &f) {
  if (f.in.empty() || !f.has(f.in.size()))
    return std::nullopt;
  ConstTensor acc = *f.in[0];
  for (size_t k = 1; k < f.in.size(); ++k) {
    if (f.in[k]->dtype != acc.dtype) {
      f.error = f.node.op_type() + "'s inputs differ in type";
      return std::nullopt;
    }
    auto next = elementwise(f.node.op_type(), {&acc, f.in[k]}, f.error);
    if (!next)
      return std::nullopt;
    acc = std::move(*next);
  }
  return acc;
}

/// Sin, Cos, Sqrt and Reciprocal of a float tensor, rounded to its type (an
/// attention's scale written as 1 / sqrt(d) or d ** -0.5 in forward folds to the
/// constant the attention fusion reads).
std::optional<ConstTensor> foldTrig(const FoldInput &f) {
  if (!f.has(1))
    return std::nullopt;
  if (!f.in[0]->isFloat()) {
    f.error = f.node.op_type() + "'s input must be a float tensor";
    return std::nullopt;
  }
  ConstTensor out = *f.in[0];
  const std::string &op = f.node.op_type();
  for (double &v : out.floats) {
    v = op == "Sin"    ? std::sin(v)
        : op == "Cos"  ? std::cos(v)
        : op == "Sqrt" ? std::sqrt(v)
                       : 1.0 / v;
    if (out.dtype == TensorProto::FLOAT)
      v = (double)(float)v;
  }
  return out;
}

/// Pow of float constants (an integer Pow is left to run).
std::optional<ConstTensor> foldPow(const FoldInput &f) {
  if (!f.has(2) || !f.in[0]->isFloat())
    return std::nullopt;
  return elementwise("Pow", {f.in[0], f.in[1]}, f.error);
}

/// Not of a bool tensor.
std::optional<ConstTensor> foldNot(const FoldInput &f) {
  if (!f.has(1))
    return std::nullopt;
  if (f.in[0]->isFloat()) {
    f.error = "Not's input must be bool";
    return std::nullopt;
  }
  ConstTensor out = *f.in[0];
  for (int64_t &v : out.ints)
    v = !v;
  return out;
}

/// Where with numpy broadcasting.
std::optional<ConstTensor> foldWhere(const FoldInput &f) {
  const std::string &op = f.node.op_type();
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(3))
    return std::nullopt;
  return elementwise(op, {in[0], in[1], in[2]}, error);
}

/// Expand to a broadcast shape.
std::optional<ConstTensor> foldExpand(const FoldInput &f) {
  const std::vector<const ConstTensor *> &in = f.in;
  std::string &error = f.error;
  if (!f.has(2))
    return std::nullopt;
  std::vector<int64_t> dims;
  if (!intValues(*in[1], "Expand's shape", dims, error))
    return std::nullopt;
  for (int64_t d : dims)
    if (d < 0) {
      error = "Expand's shape has a negative dimension";
      return std::nullopt;
    }
  ConstTensor target = withShape(TensorProto::INT64, dims);
  auto shape = broadcast({in[0], &target});
  if (!shape) {
    error = "Expand shape does not broadcast";
    return std::nullopt;
  }
  if (!fitsFolding(*shape, error))
    return std::nullopt;
  ConstTensor out = withShape(in[0]->dtype, *shape);
  forEachIndex(*shape, [&](const std::vector<int64_t> &idx) {
    pushConverted(out, *in[0], broadcastIndex(idx, in[0]->shape));
  });
  return out;
}

/// Transpose by `perm` (reversed axes by default).
std::optional<ConstTensor> foldTranspose(const FoldInput &f) {
  if (!f.has(1))
    return std::nullopt;
  const ConstTensor &x = *f.in[0];
  int64_t rank = x.shape.size();
  std::vector<int64_t> perm;
  if (const auto *a = findAttr(f.node, "perm"))
    perm.assign(a->ints().begin(), a->ints().end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  std::vector<bool> seen(rank, false);
  if ((int64_t)perm.size() != rank) {
    f.error = "Transpose's perm does not match the rank";
    return std::nullopt;
  }
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      f.error = "Transpose's perm is not a permutation";
      return std::nullopt;
    }
    seen[p] = true;
  }
  std::vector<int64_t> shape, strides(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * x.shape[i + 1];
  for (int64_t p : perm)
    shape.push_back(x.shape[p]);
  ConstTensor out = withShape(x.dtype, shape);
  forEachIndex(shape, [&](const std::vector<int64_t> &idx) {
    int64_t k = 0;
    for (int64_t i = 0; i < rank; ++i)
      k += idx[i] * strides[perm[i]];
    pushConverted(out, x, k);
  });
  return out;
}

/// Trilu of a constant (a causal mask written as torch.tril(torch.ones(T, T)) in
/// forward): elements above (upper = 0) or below (upper = 1) diagonal k zeroed.
std::optional<ConstTensor> foldTrilu(const FoldInput &f) {
  if (!f.has(1))
    return std::nullopt;
  bool hasK = f.node.input_size() > 1 && !f.node.input(1).empty();
  if (hasK && !f.has(2))
    return std::nullopt;
  const ConstTensor &x = *f.in[0];
  if (x.shape.size() < 2) {
    f.error = "Trilu needs a tensor of rank 2 or more";
    return std::nullopt;
  }
  if (hasK && f.in[1]->numel() != 1) {
    f.error = "Trilu's k must be a scalar";
    return std::nullopt;
  }
  int64_t k = hasK ? f.in[1]->intAt(0) : 0;
  bool upper = f.intAttr("upper", 1) != 0;
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  ConstTensor out = withShape(x.dtype, x.shape);
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t i = e / cols % rows, j = e % cols;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (keep)
      pushConverted(out, x, e);
    else if (x.isFloat())
      out.floats.push_back(0.0);
    else
      out.ints.push_back(0);
  }
  return out;
}

/// CumSum of a constant along a constant axis (transformers' mask code counts
/// positions so), with `exclusive` and `reverse`.
std::optional<ConstTensor> foldCumSum(const FoldInput &f) {
  if (!f.has(2))
    return std::nullopt;
  const ConstTensor &x = *f.in[0];
  int64_t rank = x.shape.size();
  if (f.in[1]->numel() != 1 || f.in[1]->isFloat() || rank == 0) {
    f.error = "CumSum's axis must be an integer scalar, its input not a scalar";
    return std::nullopt;
  }
  int64_t axis = f.in[1]->intAt(0);
  if (axis < -rank || axis >= rank) {
    f.error = "CumSum's axis is outside the input's rank";
    return std::nullopt;
  }
  if (axis < 0)
    axis += rank;
  bool exclusive = f.intAttr("exclusive", 0) != 0, reverse = f.intAttr("reverse", 0) != 0;
  int64_t n = x.shape[axis], inner = 1;
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= x.shape[i];
  ConstTensor out = x;
  int64_t outer = n == 0 ? 0 : x.numel() / (n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double fs = 0;
      int64_t is = 0;
      for (int64_t step = 0; step < n; ++step) {
        int64_t i = reverse ? n - 1 - step : step;
        int64_t k = (o * n + i) * inner + in;
        if (x.isFloat()) {
          double v = x.floats[k];
          out.floats[k] = exclusive ? fs : fs + v;
          fs += v;
          if (x.dtype == TensorProto::FLOAT)
            out.floats[k] = (double)(float)out.floats[k];
        } else {
          int64_t v = x.ints[k];
          out.ints[k] = exclusive ? is : is + v;
          is += v;
        }
      }
    }
  return out;
}

/// Range: start, start + delta, ... up to (not including) limit; three scalars of
/// one type.
std::optional<ConstTensor> foldRange(const FoldInput &f) {
  if (!f.has(3))
    return std::nullopt;
  const ConstTensor &start = *f.in[0], &limit = *f.in[1], &delta = *f.in[2];
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1 ||
      start.dtype != limit.dtype || start.dtype != delta.dtype) {
    f.error = "Range's start, limit and delta must be scalars of one type";
    return std::nullopt;
  }
  double d = delta.floatAt(0);
  if (d == 0) {
    f.error = "Range's delta is zero";
    return std::nullopt;
  }
  double count = std::ceil((limit.floatAt(0) - start.floatAt(0)) / d);
  if (!(count < (double)kMaxFoldedElements)) {
    f.error = "Range has too many elements to fold";
    return std::nullopt;
  }
  int64_t n = std::max<int64_t>((int64_t)count, 0);
  ConstTensor out = withShape(start.dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (start.isFloat())
      out.floats.push_back(start.floats[0] + (double)i * d);
    else
      out.ints.push_back(start.ints[0] + i * delta.ints[0]);
  }
  return out;
}

/// The foldable ONNX ops, one folder each (as OpBuilders.cpp's table builds ops).
const std::map<std::string, Folder> &folderTable() {
  static const std::map<std::string, Folder> table = {
      {"Constant", foldConstant},
      {"Shape", foldShape},
      {"ConstantOfShape", foldConstantOfShape},
      {"Identity", foldIdentity},
      {"Cast", foldCast},
      {"Unsqueeze", foldReshape},
      {"Squeeze", foldReshape},
      {"Reshape", foldReshape},
      {"Flatten", foldReshape},
      {"Concat", foldConcat},
      {"Gather", foldGather},
      {"Slice", foldSlice},
      {"Add", foldBinary},
      {"Sub", foldBinary},
      {"Mul", foldBinary},
      {"Div", foldBinary},
      {"Equal", foldBinary},
      {"Less", foldBinary},
      {"LessOrEqual", foldBinary},
      {"Greater", foldBinary},
      {"GreaterOrEqual", foldBinary},
      {"And", foldBinary},
      {"Or", foldBinary},
      {"Not", foldNot},
      {"Max", foldMaxMin},
      {"Min", foldMaxMin},
      {"Sin", foldTrig},
      {"Cos", foldTrig},
      {"Where", foldWhere},
      {"Expand", foldExpand},
      {"Transpose", foldTranspose},
      {"Range", foldRange},
      {"Trilu", foldTrilu},
      {"CumSum", foldCumSum},
      {"Sqrt", foldTrig},
      {"Reciprocal", foldTrig},
      {"Pow", foldPow},
  };
  return table;
}

} // namespace

bool zero::onnx_import::isFoldableOp(const std::string &op) {
  return folderTable().count(op) != 0;
}

std::optional<ConstTensor> zero::onnx_import::evaluateConstant(
    const onnx::NodeProto &node, const std::vector<const ConstTensor *> &in,
    const std::vector<int64_t> *firstInputShape, std::string &error) {
  auto it = folderTable().find(node.op_type());
  if (it == folderTable().end())
    return std::nullopt;
  return it->second(FoldInput{node, in, firstInputShape, error});
}
