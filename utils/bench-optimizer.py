#!/usr/bin/env python3
# The optimizer step against memory bandwidth on the CPU: a GPT's training step in
# zero-run with --profile, the adamw kernel's measured time per step (the plan
# joins every parameter's update into that one kernel), and the bytes it reads and
# writes (its operands and results, from the plan) divided by that time, next to a
# plain copy's bandwidth on the same machine (numpy, one thread, a buffer as large
# as what the optimizer moves). A benchmark, not a test.
# --kernel fused measures the fused elementwise kernels the same way (all of the
# step's together; the plan is made with --no-epilogue-fusion, so that the GPT's
# bias + GELU and residual chains are fused programs rather than GEMM epilogues).
#
#   bench-optimizer.py --bin BUILD/bin [--layers 4 --hidden 512] [--steps 20]
#                      [--threads 1,2] [--precision fp32,bf16] [--kernel adamw|fused]
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402

BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i64": 8}


def memref_bytes(types):
    """The bytes of a list of memref types ("memref<4x8xf32>, memref<i64>")."""
    total = 0
    for shape, dtype in re.findall(r"memref<((?:\d+x)*)(\w+)>", types):
        n = 1
        for d in filter(None, shape.split("x")):
            n *= int(d)
        total += n * BYTES[dtype]
    return total


def kernel_bytes(plan_ir, kind):
    """What the plan's `kind` kernels read and write, and how many there are."""
    kernels = re.findall(r"plan\.kernel " + kind +
                         r" ins\([^:]*: ([^)]*)\) outs\([^:]*: ([^)]*)\)", plan_ir)
    return sum(memref_bytes(i) + memref_bytes(o) for i, o in kernels), len(kernels)


def copy_bandwidth(nbytes, repeat=7):
    """A plain copy's bytes read and written per second (numpy, one thread)."""
    src = np.ones(nbytes // 2 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return 2 * src.nbytes / statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=zero_testing.int_list, default=[1, 2])
    p.add_argument("--precision", default="fp32,bf16")
    p.add_argument("--kernel", choices=("adamw", "fused"), default="adamw")
    a = p.parse_args()
    kind = a.kernel
    zero_opt, zero_run = (os.path.join(a.bin, t) for t in ("zero-opt", "zero-run"))
    with tempfile.TemporaryDirectory() as tmp:
        model, data = os.path.join(tmp, "gpt.onnx"), os.path.join(tmp, "text.u8")
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_gpt.py"),
                        model, "--layers", str(a.layers), "--hidden", str(a.hidden),
                        "--heads", "8", "--vocab", "256", "--seq", "64", "--batch", "4"],
                       check=True, capture_output=True)
        with open("/usr/share/common-licenses/GPL-3", "rb") as f:
            open(data, "wb").write(f.read(60000))
        for precision in a.precision.split(","):
            plan = os.path.join(tmp, precision + ".zplan")
            flags = [model, "--mode=train", "--precision=" + precision]
            if kind == "fused":
                flags.append("--no-epilogue-fusion")
            subprocess.run([zero_opt] + flags + ["-o", plan], check=True)
            ir = subprocess.run([zero_opt] + flags + ["--emit=plan"], check=True,
                                capture_output=True, text=True).stdout
            moved, kernels = kernel_bytes(ir, kind)
            if kind == "adamw" and kernels != 1:
                raise SystemExit("%s: the plan has %d adamw kernels, not one" % (precision, kernels))
            if kernels == 0:
                raise SystemExit("%s: the plan has no %s kernel" % (precision, kind))
            copy = copy_bandwidth(moved // kernels if kind == "fused" else moved)
            print("%s: %s moves %.1f MB per step in %d kernel(s); a plain copy of %s bytes "
                  "(numpy, one thread): %.2f GB/s" % (precision, kind, moved / 1e6, kernels,
                                                      "as many" if kernels == 1 else "a kernel's",
                                                      copy / 1e9))
            for threads in a.threads:
                out = subprocess.run(
                    [zero_run, plan, "--init", model, "--data", data, "--steps", str(a.steps),
                     "--device", "cpu", "--threads", str(threads), "--profile", "--quiet"],
                    check=True, capture_output=True, text=True).stdout
                m = re.search(r"^\s+" + kind + r"\s+([0-9.]+) ms", out, re.M)
                if not m:
                    raise SystemExit("zero-run --profile shows no %s kernel:\n%s" % (kind, out))
                ms = float(m.group(1))
                print("  zero-run --threads %d: %s %.3f ms per step, %.2f GB/s, %.2f of the "
                      "copy's" % (threads, kind, ms, moved / ms / 1e6,
                                  moved / ms / 1e6 / (copy / 1e9)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
