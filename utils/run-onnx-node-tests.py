#!/usr/bin/env python3
# Runs the ONNX backend node tests of every op zero-opt supports through
# zero-opt + zero-run and compares the outputs (rtol 1e-3, atol 1e-7).
# Runs in the tests' Python environment (build/python-env/bin/python).
#
#   run-onnx-node-tests.py --bin BUILD/bin --cases DIR --skip SKIPFILE [-j N]
#
# DIR is generated from the installed onnx's own generators on first use (about 1,700
# cases, half a minute); DIR/node then holds one folder per case.
#
# A case runs when every op in its graph is one zero-opt reads
# (zero-opt --list-onnx-ops). It passes, or zero-opt
# refuses it (exit status 1 and an error message naming what it does not support:
# an opset, an element type, an attribute), or it fails: a wrong answer, a crash,
# a plan zero-run cannot run. A case listed in SKIPFILE (with its reason) must
# fail: one that passes or is refused is reported, so the list cannot go stale.
# Exit status 0 only when no other case fails.
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402

def supported_ops(bindir, prebuilt):
    """The ops zero-opt's importer reads (zero-opt --list-onnx-ops): one list, in
    lib/Import/ONNX/SupportedOps.cpp. A --prebuilt bundle carries the list of the
    zero-opt that compiled it."""
    if prebuilt:
        with open(os.path.join(prebuilt, "supported-ops.txt")) as f:
            text = f.read()
    else:
        text = subprocess.run([os.path.join(bindir, "zero-opt"), "--list-onnx-ops"],
                              check=True, capture_output=True, text=True).stdout
    return {line.split()[0] for line in text.splitlines() if line.strip()}


def run_case(bindir, zero_run, case_dir, device="cpu", bundle=None, prebuilt=None):
    """Returns (status, message), status "pass", "refused" (zero-opt declined the
    model with an error message and exit status 1) or "fail" (a wrong answer, a
    crash, or a plan zero-run could not run). With `bundle`, compiles only, into
    bundle/<case>/; with `prebuilt`, runs the plan found in prebuilt/<case>/."""
    name = os.path.basename(case_dir)
    model = os.path.join(case_dir, "model.onnx")
    data = os.path.join(case_dir, "test_data_set_0")
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "model.zplan")
        out_dir = os.path.join(tmp, "out")
        if prebuilt:
            plan = os.path.join(prebuilt, name, "model.zplan")
            return run_and_compare(zero_run, plan, model, data, out_dir, device)
        compile_cmd = [os.path.join(bindir, "zero-opt"), model, "--mode=inference",
                       "-o", plan]
        r = subprocess.run(compile_cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0 and "compile-time" in r.stderr:
            # A static-shape compiler needs shape operands (Reshape's shape, Slice's
            # starts, axes, k) at compile time; the tests feed them as graph inputs.
            # Bind every integer, bool or scalar input (Dropout's ratio) to its
            # test value, as a user would with --constant-input, and compile again.
            m = onnx.load(model, load_external_data=False)
            inits = {t.name for t in m.graph.initializer}
            inputs = [i for i in m.graph.input if i.name not in inits]
            for pos, inp in enumerate(inputs):
                tt = inp.type.tensor_type
                if (tt.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
                        or len(tt.shape.dim) == 0):
                    compile_cmd.append("--constant-input=%s=%s" % (
                        inp.name, os.path.join(data, "input_%d.pb" % pos)))
            r = subprocess.run(compile_cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            refused = r.returncode == 1 and ": error: " in last
            return ("refused" if refused else "fail"), "zero-opt: " + last
        if bundle:
            zero_testing.bundle_files(bundle, name, tmp, ["model.zplan"])
            return "pass", "bundled"
        return run_and_compare(zero_run, plan, model, data, out_dir, device)


def run_and_compare(zero_run, plan, model, data, out_dir, device):
    """Runs `plan` on `device` and compares its outputs with the case's: (status,
    message) as run_case."""
    r = subprocess.run([zero_run, plan, "--init", model,
                        "--inputs", data, "--save-outputs", out_dir, "--quiet",
                        "--device", device],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "fail", "zero-run: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    k = 0
    while os.path.exists(os.path.join(data, "output_%d.pb" % k)):
        want = zero_testing.read_tensor(os.path.join(data, "output_%d.pb" % k))
        got_path = os.path.join(out_dir, "output_%d.pb" % k)
        if not os.path.exists(got_path):
            return "fail", "output %d missing" % k
        got = zero_testing.read_tensor(got_path)
        if got.shape != want.shape:
            return "fail", "output %d shape %s, expected %s" % (k, got.shape, want.shape)
        if got.dtype != want.dtype:
            return "fail", "output %d dtype %s, expected %s" % (k, got.dtype, want.dtype)
        if want.dtype.kind in "fc":
            if not np.allclose(got, want, rtol=1e-3, atol=1e-7, equal_nan=True):
                err = np.max(np.abs(got.astype(np.float64) - want))
                return "fail", "output %d differs (max abs error %g)" % (k, err)
        elif not np.array_equal(got, want):
            return "fail", "output %d differs" % k
        k += 1
    return "pass", ""


def generate(out_dir):
    """Writes the backend node tests of the installed onnx into out_dir/node."""
    from onnx.backend.test import cmd_tools
    from onnx.backend.test.case import node
    tmp = out_dir + ".partial"
    # cmd_tools writes the cases collect_testcases gives; its own list holds the
    # model tests only, the node tests come from the node package.
    saved = cmd_tools.model_test.collect_testcases
    cmd_tools.model_test.collect_testcases = lambda: node.collect_testcases()
    try:
        cmd_tools.generate_data(argparse.Namespace(output=tmp))
    finally:
        cmd_tools.model_test.collect_testcases = saved
    os.rename(tmp, out_dir)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--zero-run", help="the zero-run to test (default: BIN/zero-run)")
    p.add_argument("--cases", required=True)
    p.add_argument("--skip", required=True)
    p.add_argument("-j", type=int, default=os.cpu_count() or 2)
    p.add_argument("--only", help="run only cases whose name contains this")
    p.add_argument("--device", default="cpu", help="zero-run --device (cpu or cuda)")
    p.add_argument("--bundle", help="compile only, writing DIR/<case>/model.zplan "
                   "(for a machine without zero-opt, e.g. the GPU one)")
    p.add_argument("--prebuilt", help="run the plans of DIR/<case>/ (made by --bundle)")
    p.add_argument("--verbose", action="store_true",
                   help="list every refused case with zero-opt's message")
    p.add_argument("--generate-only", action="store_true",
                   help="only write the cases into --cases (if absent)")
    args = p.parse_args()
    zero_run = args.zero_run or os.path.join(args.bin, "zero-run")
    if not os.path.isdir(os.path.join(args.cases, "node")):
        print("generating the ONNX backend node tests into", args.cases, flush=True)
        generate(args.cases)
    if args.generate_only:
        return 0
    args.cases = os.path.join(args.cases, "node")

    skipped = {}
    with open(args.skip) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, reason = line.partition(" ")
                skipped[name] = reason.strip()

    supported = supported_ops(args.bin, args.prebuilt)
    if args.bundle:
        os.makedirs(args.bundle, exist_ok=True)
        with open(os.path.join(args.bundle, "supported-ops.txt"), "w") as f:
            f.write("\n".join(sorted(supported)) + "\n")
    cases = []
    for name in sorted(os.listdir(args.cases)):
        if args.only and args.only not in name:
            continue
        m = onnx.load(os.path.join(args.cases, name, "model.onnx"), load_external_data=False)
        ops = {n.op_type for n in m.graph.node}
        if ops and ops <= supported:
            cases.append(name)
    if not cases:
        print("no applicable cases found in", args.cases)
        return 1

    passed = failed = skip = 0
    refusals = {}
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        results = pool.map(lambda c: (c, run_case(args.bin, zero_run,
                                                  os.path.join(args.cases, c), args.device,
                                                  args.bundle, args.prebuilt)), cases)
        for name, (status, msg) in results:
            if name in skipped:
                if status != "fail":
                    print("UNEXPECTED %s %s (listed as failing: %s)"
                          % (status.upper(), name, skipped[name]))
                    failed += 1
                else:
                    skip += 1
                continue
            if status == "pass":
                passed += 1
            elif status == "refused":
                refusals[name] = msg
            else:
                failed += 1
                print("FAIL %s: %s" % (name, msg))
    # A listed case that is no longer applicable (only knowable on a full run, not
    # on a bundle, which holds only the cases that compiled).
    stale = [] if args.only or args.prebuilt else sorted(set(skipped) - set(cases))
    for name in stale:
        print("STALE SKIP %s: not an applicable case" % name)
    failed += len(stale)
    if args.bundle:  # compiled, not run: the skip list's expectations do not apply
        print("onnx-node: bundled %d plans into %s" % (passed + skip, args.bundle))
        return 0
    if args.verbose:
        for name, msg in sorted(refusals.items()):
            print("REFUSED %s: %s" % (name, msg))
    print("onnx-node (%s): %d passed, %d refused by zero-opt with a message, %d failed, "
          "%d known failures (skip list)" % (args.device, passed, len(refusals), failed, skip))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
