#!/usr/bin/env python3
# Checks zero-opt's gradient rules against central finite differences, in double
# precision, through the real tools: for each case, `zero-opt --mode=gradients` gives
# the analytic gradients, and the forward plan run on weights moved by +-h gives
#   (loss(w + h e_i) - loss(w - h e_i)) / 2h   for every element i of every weight.
#
#   grad-check.py --bin BUILD/bin --cases CASES.py [--only NAME] [-j N]
#                 [--device cuda --sample K --reference-device cpu]
#
# Every element gets its finite difference unless --sample K: then K elements of
# each weight, spread over it (first and last included). A finite difference costs
# two zero-run starts, which take about a second each on a GPU; so there the check
# samples, and --reference-device also runs the gradient plan on that device (the
# CPU, whose every element the CPU ctest checks against finite differences) and
# compares every element of the two.
#
# CASES.py defines CASES: a list of dicts with
#   name    the case name
#   nodes   ONNX text-syntax node lines producing the double tensor Y
#   params  {name: shape} of the weights (initializers, random f64 values)
#   positive  True when the weights must be positive (sqrt, log, ...)
# The harness appends loss = ReduceSum(Y * R), R a fixed random tensor, so that
# every element of Y gets a distinct weight in the loss.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import concurrent.futures
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
from onnx import parser, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402

H = 1e-6
RTOL, ATOL = 1e-5, 1e-7


def build_model(case, seed):
    rng = np.random.RandomState(seed)
    params = {}
    for name, shape in case["params"].items():
        if case.get("positive"):
            v = rng.uniform(0.5, 2.0, size=shape)
        else:  # away from 0, where relu and friends have kinks
            v = rng.uniform(0.2, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        params[name] = v
    inputs = ", ".join("double[%s] %s" % (",".join(map(str, s)), n)
                       for n, s in case["params"].items())
    opset = case.get("opset", 17)
    text = '<ir_version: %d, opset_import: ["" : %d]>\ncase (%s) => (double[] loss)\n{\n%s\n}\n' % (
        8 if opset <= 17 else 10, opset, inputs,
        "\n".join(case["nodes"]) + "\n  loss = Identity(Y)")
    model = parser.parse_model(text)
    # Y's shape, then replace the placeholder loss by ReduceSum(Y * R).
    inferred = shape_inference.infer_shapes(model)
    y_shape = None
    for vi in inferred.graph.value_info:
        if vi.name == "Y":
            y_shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    if y_shape is None:
        raise SystemExit("%s: cannot infer the shape of Y" % case["name"])
    r = rng.uniform(-1.0, 1.0, size=y_shape)
    g = model.graph
    del g.node[-1]
    g.node.extend([
        oh.make_node("Constant", [], ["R"], value=nh.from_array(r, "R")),
        oh.make_node("Mul", ["Y", "R"], ["YR"]),
        oh.make_node("ReduceSum", ["YR"], ["loss"], keepdims=0),
    ])
    # The weights are initializers, not graph inputs.
    del g.input[:]
    for name, v in params.items():
        g.initializer.append(nh.from_array(v, name))
    return model, params


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s failed: %s" % (os.path.basename(cmd[0]), r.stderr.strip()))


def sampled(shape, k):
    """The indices of a tensor of `shape` to take finite differences at: all of
    them, or k spread evenly over its elements in row-major order."""
    indices = list(np.ndindex(shape))
    if not k or len(indices) <= k:
        return indices
    return [indices[int(i)] for i in np.unique(np.linspace(0, len(indices) - 1, k).round())]


def check_case(bindir, zero_run, case, seed, device="cpu", bundle=None, prebuilt=None,
               sample=0, reference_device=None):
    model, params = build_model(case, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.onnx")
        onnx.save(model, path)
        plans = tmp
        if prebuilt:  # plans compiled elsewhere (the GPU machine has no zero-opt)
            plans = os.path.join(prebuilt, case["name"])
        else:
            run([os.path.join(bindir, "zero-opt"), path, "--mode=gradients", "-o",
                 os.path.join(plans, "grad.zplan")])
            run([os.path.join(bindir, "zero-opt"), path, "--mode=inference", "-o",
                 os.path.join(plans, "fwd.zplan")])
        if bundle:
            zero_testing.bundle_files(bundle, case["name"], plans, ["grad.zplan", "fwd.zplan"])
            return True, "bundled"
        run([zero_run, os.path.join(plans, "grad.zplan"), "--init",
             path, "--save-outputs", os.path.join(tmp, "grad"), "--quiet",
             "--device", device])
        analytic = {name: zero_testing.read_tensor(
            os.path.join(tmp, "grad", "output_%d.pb" % (k + 1)))
                    for k, name in enumerate(params)}
        if reference_device:
            run([zero_run, os.path.join(plans, "grad.zplan"), "--init", path,
                 "--save-outputs", os.path.join(tmp, "ref"), "--quiet",
                 "--device", reference_device])
            for k, name in enumerate(params):
                ref = zero_testing.read_tensor(os.path.join(tmp, "ref", "output_%d.pb" % (k + 1)))
                got = analytic[name]
                if got.shape != ref.shape:
                    return False, "gradient of %s has shape %s on %s, %s on %s" % (
                        name, got.shape, device, ref.shape, reference_device)
                bad = ~(np.abs(got - ref) <= ATOL + RTOL * np.abs(ref))
                if bad.any():
                    at = tuple(int(i) for i in np.argwhere(bad)[0])
                    return False, "d loss / d %s%s: %.10g on %s, %.10g on %s" % (
                        name, list(at), got[at], device, ref[at], reference_device)

        def loss_at(name, index, delta, tag):
            moved = onnx.ModelProto()
            moved.CopyFrom(model)
            for init in moved.graph.initializer:
                if init.name == name:
                    v = params[name].copy()
                    v[index] += delta
                    init.CopyFrom(nh.from_array(v, name))
            mpath = os.path.join(tmp, "m%s.onnx" % tag)
            onnx.save(moved, mpath)
            out = os.path.join(tmp, "o%s" % tag)
            run([zero_run, os.path.join(plans, "fwd.zplan"),
                 "--init", mpath, "--save-outputs", out, "--quiet", "--device", device])
            return float(zero_testing.read_tensor(os.path.join(out, "output_0.pb")))

        worst = 0.0
        for name, v in params.items():
            got = analytic[name]
            if got.shape != v.shape:
                return False, "gradient of %s has shape %s, expected %s" % (name, got.shape, v.shape)
            for index in sampled(v.shape, sample):
                fd = (loss_at(name, index, H, "p") - loss_at(name, index, -H, "m")) / (2 * H)
                err = abs(got[index] - fd)
                worst = max(worst, err / max(abs(fd), 1.0))
                if err > ATOL + RTOL * abs(fd):
                    return False, "d loss / d %s%s: analytic %.10g, finite difference %.10g" % (
                        name, list(index), got[index], fd)
        checked = "" if not sample else ", %d elements per weight" % sample
        if reference_device:
            checked += ", every element equal to %s's" % reference_device
        return True, "max error %.1e%s" % (worst, checked)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--zero-run", help="the zero-run to test (default: BIN/zero-run)")
    p.add_argument("--cases", required=True)
    p.add_argument("--only")
    p.add_argument("-j", type=int, default=os.cpu_count() or 2)
    p.add_argument("--device", default="cpu", help="zero-run --device (cpu or cuda)")
    p.add_argument("--bundle", help="compile only, into DIR/<case>/")
    p.add_argument("--prebuilt", help="use the plans of DIR/<case>/ (made by --bundle)")
    p.add_argument("--sample", type=int, default=0,
                   help="finite differences at K elements per weight (default: all)")
    p.add_argument("--reference-device",
                   help="also compare every gradient element with this device's")
    a = p.parse_args()
    zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    spec = importlib.util.spec_from_file_location("cases", a.cases)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cases = [c for c in mod.CASES if not a.only or a.only in c["name"]]
    passed = failed = 0

    def one(item):
        seed, case = item
        try:
            return case, check_case(a.bin, zero_run, case, seed, a.device, a.bundle,
                                    a.prebuilt, a.sample, a.reference_device)
        except RuntimeError as e:
            return case, (False, str(e))

    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        for case, (ok, msg) in pool.map(one, enumerate(cases)):
            print("%s %-28s %s" % ("PASS" if ok else "FAIL", case["name"], msg), flush=True)
            passed += ok
            failed += not ok
    print("gradient checks (%s): %d passed, %d failed" % (a.device, passed, failed))
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
