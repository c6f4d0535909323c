#!/usr/bin/env python3
# Times fused attention, forward and backward, on the CPU: zero-run's kernels
# (compute.attention and compute.attention_grad) against PyTorch's
# scaled_dot_product_attention (its CPU flash-attention kernel) on the same shape
# and the same number of threads. A benchmark, not a test.
#
#   bench-attention-cpu.py --bin BUILD/bin [--seq 1024 --heads 12 --head-size 64
#                          --batch 1] [--threads 1,2] [--repeat 3] [--steps 8]
#
# zero-run's figure is what `zero-run --profile` measures for the two attention
# kernels per step while it trains a one-layer GPT with these heads (hidden =
# heads x head size, causal attention); the rest of the step (its projections, the
# MLP, the optimizer) is not counted. PyTorch's is the median wall time of
# scaled_dot_product_attention(q, k, v, is_causal=True) and its backward on
# [batch, heads, seq, head size] f32 tensors, in a process of its own for each
# thread count (OMP_NUM_THREADS set before torch loads). The two alternate
# --repeat times per thread count (this machine's speed drifts), and the median of
# the ratios is printed.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402


def torch_ms(a, threads):
    """PyTorch's SDPA forward + backward, in a fresh process at `threads`."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--bin", a.bin, "--torch-only",
         "--threads", str(threads), "--seq", str(a.seq), "--heads", str(a.heads),
         "--head-size", str(a.head_size), "--batch", str(a.batch), "--steps", str(a.steps)],
        check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_only(a):
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    shape = (a.batch, a.heads, a.seq, a.head_size)
    q, k, v = (torch.randn(shape, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape)
    fwd, total = [], []
    for _ in range(a.steps + 2):  # two warm-up runs
        q.grad = k.grad = v.grad = None
        t0 = time.perf_counter()
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        t1 = time.perf_counter()
        out.backward(grad)
        t2 = time.perf_counter()
        fwd.append((t1 - t0) * 1e3)
        total.append((t2 - t0) * 1e3)
    print(json.dumps({"forward": statistics.median(fwd[2:]),
                      "total": statistics.median(total[2:])}))


def zero_ms(a, tmp, threads):
    """zero-run's attention kernels per step, from --profile."""
    out = subprocess.run(
        [os.path.join(a.bin, "zero-run"), os.path.join(tmp, "step.zplan"), "--init",
         os.path.join(tmp, "gpt.onnx"), "--data", os.path.join(tmp, "tokens.u8"),
         "--steps", str(a.steps), "--threads", str(threads), "--quiet", "--profile"],
        check=True, capture_output=True, text=True).stdout
    return zero_testing.attention_profile_ms(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--head-size", type=int, default=64)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_only:
        a.threads = int(a.threads)
        return torch_only(a)

    hidden = a.heads * a.head_size
    print("attention forward + backward, causal, f32: batch %d, %d heads of %d, sequence %d"
          % (a.batch, a.heads, a.head_size, a.seq))
    with tempfile.TemporaryDirectory() as tmp:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, "make_gpt.py"),
                        os.path.join(tmp, "gpt.onnx"), "--layers", "1", "--hidden",
                        str(hidden), "--heads", str(a.heads), "--seq", str(a.seq),
                        "--batch", str(a.batch)], check=True, capture_output=True)
        subprocess.run([os.path.join(a.bin, "zero-opt"), os.path.join(tmp, "gpt.onnx"),
                        "--optimizer=sgd", "-o", os.path.join(tmp, "step.zplan")],
                       check=True, capture_output=True)
        np.random.RandomState(0).randint(0, 256, size=200000).astype(np.uint8).tofile(
            os.path.join(tmp, "tokens.u8"))
        for threads in (int(t) for t in a.threads.split(",")):
            pairs = []
            for _ in range(a.repeat):
                pairs.append((zero_ms(a, tmp, threads), torch_ms(a, threads)))
            ratios = [z["total"] / t["total"] for z, t in pairs]
            med = lambda side, key: statistics.median(p[side][key] for p in pairs)  # noqa
            print("  %d thread%s: zero-run %.1f ms (forward %.1f), PyTorch SDPA %.1f ms "
                  "(forward %.1f): %.2f x (median of ratios %s)" % (
                      threads, "" if threads == 1 else "s", med(0, "total"),
                      med(0, "forward"), med(1, "total"), med(1, "forward"),
                      statistics.median(ratios), " ".join("%.2f" % r for r in ratios)))


if __name__ == "__main__":
    main()
