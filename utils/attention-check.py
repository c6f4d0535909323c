#!/usr/bin/env python3
# Fused attention on a device against the CPU: for each case, an f32 model (ONNX
# Attention on weights Q, K, V; loss = ReduceSum(Y * R)) compiled with
# `zero-opt --mode=gradients --precision=fp32|bf16|fp16`, run on --device and on
# the CPU; the loss and every gradient element must agree within the precision's
# tolerance (relative to the largest gradient: the tensor-core kernels round P
# and dS to 16 bits before their products, as FlashAttention does, the CPU keeps
# them in f32). Both are also held to the f32 plan's gradients on the CPU, so a
# wrong kernel cannot pass by agreeing with a wrong reference.
#
#   attention-check.py --bin BUILD/bin --zero-run ZERO_RUN --device cuda
#                      [--precision fp32,bf16,fp16] [--only NAME] [--bundle DIR | --prebuilt DIR]
#
# The cases reach every path of the tensor-core kernels and of the CUDA-core ones
# (f32; 16 bits past a head of 128): head sizes in every bucket (64, 128, 256)
# and padded ones, lengths that are not a multiple of any
# tile, queries and keys of different lengths, causal, boolean and additive
# masks, grouped query heads. On a GPU each case runs twice: `--attention cudnn`
# (cuDNN's fused kernels where its graph takes the case: heads of multiples of 8
# up to 128, no mask or a causal one; zero-run says on stderr when it falls back,
# and the line printed names the path taken) and `--attention own` (the
# project's kernels). --expect-cudnn (the emulator's ctest) fails a case whose path
# is not the one expected. --bundle writes the plans and models for a machine
# without zero-opt; --prebuilt runs them there.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402

# name, batch, query heads, key/value heads, query length, key length, head size,
# value head size, causal, mask ("", "bool" or "add"; "qkv": the heads read where
# one [batch, length, 3 heads size] projection wrote them and the result written
# where the head merge wants it, as in a GPT: the kernels' strided views)
CASES = [
    ("causal_head64_t100", 2, 2, 2, 100, 100, 64, 64, True, ""),
    ("grouped_head40_t70", 1, 4, 2, 70, 70, 40, 40, True, ""),
    ("padding_mask_head16", 2, 2, 2, 48, 48, 16, 16, True, "bool"),
    ("additive_mask_head128_t33_s50", 1, 2, 2, 33, 50, 128, 128, False, "add"),
    ("causal_head96_value80_t130", 1, 1, 1, 130, 130, 96, 80, True, ""),
    ("bool_mask_grouped_head200_value160", 2, 4, 2, 40, 45, 200, 160, False, "bool"),
    ("qkv_views_head64_t90", 2, 2, 2, 90, 90, 64, 64, True, "qkv"),
]
TOLERANCE = {"fp32": 1e-5, "bf16": 3e-2, "fp16": 5e-3}  # of the largest |gradient|
TOLERANCE_F32 = {"fp32": 1e-5, "bf16": 6e-2, "fp16": 1e-2}


def build_model(case, seed):
    name, b, hq, hkv, t, s, d, dv, causal, mask = case
    rng = np.random.RandomState(seed)
    if mask == "qkv":
        return build_qkv_model(case, rng)
    params = {
        "Q": rng.uniform(-1, 1, (b, hq, t, d)).astype(np.float32),
        "K": rng.uniform(-1, 1, (b, hkv, s, d)).astype(np.float32),
        "V": rng.uniform(-1, 1, (b, hkv, s, dv)).astype(np.float32),
    }
    nodes, inputs = [], ["Q", "K", "V"]
    if mask == "bool":  # a padding mask: each sample hides its last keys
        m = np.ones((b, 1, 1, s), dtype=bool)
        for k in range(b):
            m[k, 0, 0, s - 5 * (k + 1):] = False
        nodes.append(oh.make_node("Constant", [], ["M"], value=nh.from_array(m, "M")))
        inputs.append("M")
    elif mask == "add":
        m = rng.uniform(-2, 1, (t, s)).astype(np.float32)
        nodes.append(oh.make_node("Constant", [], ["M"], value=nh.from_array(m, "M")))
        inputs.append("M")
    nodes.append(oh.make_node("Attention", inputs, ["Y"], is_causal=int(causal)))
    r = rng.uniform(-1, 1, (b, hq, t, dv)).astype(np.float32)
    nodes += [oh.make_node("Constant", [], ["R"], value=nh.from_array(r, "R")),
              oh.make_node("Mul", ["Y", "R"], ["YR"]),
              oh.make_node("ReduceSum", ["YR"], ["loss"], keepdims=0)]
    graph = oh.make_graph(nodes, name, [], [oh.make_tensor_value_info(
        "loss", onnx.TensorProto.FLOAT, [])],
        initializer=[nh.from_array(v, k) for k, v in params.items()])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 23)], ir_version=10), params


def build_qkv_model(case, rng):
    name, b, h, _, t, _, d, _, causal, _ = case
    width = h * d
    a = rng.uniform(-1, 1, (b, t, 3 * width)).astype(np.float32)
    r = rng.uniform(-1, 1, (b, t, width)).astype(np.float32)

    def const(name, values):
        return oh.make_node("Constant", [], [name],
                            value=nh.from_array(np.array(values, dtype=np.int64), name))
    nodes = [const("n", [width] * 3), const("hs", [b, t, h, d]), const("os", [b, t, width]),
             oh.make_node("Split", ["A", "n"], ["q", "k", "v"], axis=2)]
    for x in "qkv":
        nodes += [oh.make_node("Reshape", [x, "hs"], [x + "4"]),
                  oh.make_node("Transpose", [x + "4"], [x + "h"], perm=[0, 2, 1, 3])]
    nodes += [oh.make_node("Attention", ["qh", "kh", "vh"], ["o"], is_causal=int(causal)),
              oh.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              oh.make_node("Reshape", ["ot", "os"], ["Y"]),
              oh.make_node("Constant", [], ["R"], value=nh.from_array(r, "R")),
              oh.make_node("Mul", ["Y", "R"], ["YR"]),
              oh.make_node("ReduceSum", ["YR"], ["loss"], keepdims=0)]
    graph = oh.make_graph(nodes, name, [], [oh.make_tensor_value_info(
        "loss", onnx.TensorProto.FLOAT, [])], initializer=[nh.from_array(a, "A")])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 23)], ir_version=10), {"A": a}


def run(cmd):
    """Runs cmd; its stderr."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s failed: %s" % (os.path.basename(cmd[0]), r.stderr.strip()))
    return r.stderr


def gradients(zero_run, plan, model, device, out, count, extra=()):
    """The loss and the `count` weights' gradients, and zero-run's stderr."""
    err = run([zero_run, plan, "--init", model, "--save-outputs", out, "--quiet",
               "--device", device] + list(extra))
    return [zero_testing.read_tensor(os.path.join(out, "output_%d.pb" % k))
            for k in range(count + 1)], err


def cudnn_takes(case, precision):
    """Whether the CUDA backend's cuDNN graph takes the case (CudnnAttention.h)."""
    _, _, hq, hkv, _, _, d, dv, _, mask = case
    return precision != "fp32" and hq % hkv == 0 and mask in ("", "qkv") and d % 8 == 0 and dv % 8 == 0 and max(d, dv) <= 128


def kernel_paths(device, precision):
    """The --attention values to run: on CUDA, cuDNN's path (16 bits only) and
    the project's kernels."""
    if device != "cuda":
        return [""]
    return ["own"] if precision == "fp32" else ["cudnn", "own"]


def worst(got, ref):
    """The largest difference relative to the largest |ref|, and where."""
    scale = max(float(np.abs(ref).max()), 1e-30)
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    at = np.unravel_index(int(diff.argmax()), diff.shape)
    return float(diff.max()) / scale, tuple(int(i) for i in at)


def check(a, case, precisions, tmp):
    name = case[0]
    model, params = build_model(case, 7)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    compiled = ["fp32"] + [p for p in precisions if p != "fp32"]
    plans = os.path.join(a.prebuilt, name) if a.prebuilt else os.path.join(tmp, name)
    if not a.prebuilt:
        os.makedirs(plans, exist_ok=True)
        for p in compiled:
            run([os.path.join(a.bin, "zero-opt"), path, "--mode=gradients",
                 "--precision=" + p, "-o", os.path.join(plans, p + ".zplan")])
    if a.bundle:
        zero_testing.bundle_files(a.bundle, name, plans, [p + ".zplan" for p in compiled])
        return True, "bundled"
    cpu = a.cpu_zero_run or os.path.join(a.bin, "zero-run")
    n = len(params)
    f32, _ = gradients(cpu, os.path.join(plans, "fp32.zplan"), path, "cpu",
                       os.path.join(tmp, name + "-f32"), n)
    lines = []
    for p, kernels in [(p, k) for p in precisions
                       for k in kernel_paths(a.device, p)]:
        plan = os.path.join(plans, p + ".zplan")
        ref, _ = gradients(cpu, plan, path, "cpu", os.path.join(tmp, "%s-%s-cpu" % (name, p)), n)
        got, err = gradients(a.zero_run, plan, path, a.device,
                             os.path.join(tmp, "%s-%s-dev-%s" % (name, p, kernels)), n,
                             ["--attention", kernels] if kernels else [])
        took = kernels
        if kernels == "cudnn":
            refused = zero_testing.cudnn_refusal(err)
            took = "own (%s)" % refused if refused else "cudnn"
            if a.expect_cudnn and (took == "cudnn") != cudnn_takes(case, p):
                return False, "%s --attention cudnn ran on %s; expected %s" % (
                    p, took, "cudnn" if cudnn_takes(case, p) else "the project's kernels")
        errs = []
        for k, weight in enumerate(["the loss"] + ["d loss / d " + w for w in params]):
            if got[k].shape != ref[k].shape:
                return False, "%s %s: shape %s on %s, %s on the CPU" % (
                    p, weight, got[k].shape, a.device, ref[k].shape)
            err, at = worst(got[k], ref[k])
            err32, _ = worst(got[k], f32[k])
            errs.append(err)
            if not err <= TOLERANCE[p] or not err32 <= TOLERANCE_F32[p]:
                return False, ("%s %s%s: %.6g on %s, %.6g on the CPU (worst %.3g of the "
                               "largest, tolerance %g; %.3g against f32, tolerance %g)" % (
                                   p, weight, list(at), got[k][at], a.device, ref[k][at], err,
                                   TOLERANCE[p], err32, TOLERANCE_F32[p]))
        lines.append("%s%s worst %.2g" % (p, " " + took if took else "", max(errs)))
    return True, ", ".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--zero-run", help="the device's zero-run (default BIN/zero-run)")
    ap.add_argument("--cpu-zero-run", help="the reference's zero-run (default BIN/zero-run)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", default="bf16,fp16")
    ap.add_argument("--only")
    ap.add_argument("--expect-cudnn", action="store_true",
                    help="fail a case whose --attention cudnn run is not on the expected path")
    ap.add_argument("--bundle", help="write the plans into DIR/CASE/ and run nothing")
    ap.add_argument("--prebuilt", help="run the plans from DIR/CASE/ (no zero-opt)")
    a = ap.parse_args()
    a.zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    precisions = a.precision.split(",")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if a.only and case[0] != a.only:
                continue
            try:
                ok, why = check(a, case, precisions, tmp)
            except RuntimeError as e:
                ok, why = False, str(e)
            failed += not ok
            print("%-34s %s  %s" % (case[0], "ok" if ok else "FAIL", why), flush=True)
    if failed:
        print("%d case(s) failed" % failed)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
