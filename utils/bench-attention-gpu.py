#!/usr/bin/env python3
# Times fused attention, forward and backward, on the GPU: zero-run's kernels
# (compute.attention and compute.attention_grad, as `zero-run --profile` measures
# them in a one-layer GPT's step: batch 8, 12 heads of 64, sequence 1024, causal)
# against PyTorch's scaled_dot_product_attention and its backward on the same
# shape, dtype and GPU. In bf16 zero-run runs twice: on cuDNN's fused kernels
# (--attention cudnn; the line says so when cuDNN did not take the graph and the
# project's kernels ran instead) and on the project's tensor-core kernels. A benchmark, not a test. Runs on the GPU machine with its
# python3 (PyTorch, onnx, numpy); the plan comes compiled (utils/gpu-checks.sh
# bundle), the weights are made here.
#
#   bench-attention-gpu.py --zero-run BUNDLE/bin/zero-run --plan BUNDLE/bench/attn.zplan
#                          [--precision fp32|bf16] [--steps 10]
#   (rehearsal, no GPU: --model tiny --torch-device cpu with zero-run-cuda-emulated)
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zero-run", required=True)
    p.add_argument("--plan", required=True)
    p.add_argument("--model", choices=["attention", "tiny"], default="attention")
    p.add_argument("--precision", choices=sorted(DTYPES), default="fp32",
                   help="the plan's precision; PyTorch's tensors have the same dtype")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--torch-device", default="cuda", help="cuda, or cpu in a rehearsal")
    a = p.parse_args()
    cfg = zero_models.GPU_BENCH_MODELS[a.model]
    dev = torch.device(a.torch_device)

    kernels = ["cudnn", "own"] if a.precision != "fp32" else ["own"]
    zero = {}  # kernels -> (forward ms, total ms, what ran)
    with tempfile.TemporaryDirectory() as tmp:
        model, data = zero_models.gpu_bench_inputs(tmp, cfg)
        for k in kernels:
            r = subprocess.run(
                [a.zero_run, a.plan, "--init", model, "--data", data, "--data-format", "u16",
                 "--steps", str(a.steps), "--device", "cuda", "--quiet", "--profile",
                 "--attention", k], check=True, capture_output=True, text=True)
            refused = zero_testing.cudnn_refusal(r.stderr)
            ran = "cuDNN" if k == "cudnn" and not refused else "zero-opt's kernels"
            if refused:
                ran += " (cuDNN refused: " + refused + ")"
            ms = zero_testing.attention_profile_ms(r.stdout)
            zero[k] = (ms["forward"], ms["total"], ran)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()
    torch.manual_seed(0)
    shape = (cfg["batch"], cfg["heads"], cfg["seq"], cfg["hidden"] // cfg["heads"])
    q, k, v = (torch.randn(shape, device=dev, dtype=DTYPES[a.precision], requires_grad=True)
               for _ in range(3))
    grad = torch.randn(shape, device=dev, dtype=DTYPES[a.precision])
    fwd, total = [], []
    for step in range(a.steps + 3):  # three warm-up runs
        q.grad = k.grad = v.grad = None
        sync()
        t0 = time.perf_counter()
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        sync()
        t1 = time.perf_counter()
        o.backward(grad)
        sync()
        t2 = time.perf_counter()
        if step >= 3:
            fwd.append((t1 - t0) * 1e3)
            total.append((t2 - t0) * 1e3)
    torch_fwd, torch_total = statistics.median(fwd), statistics.median(total)
    where = torch.cuda.get_device_name() if dev.type == "cuda" else "PyTorch on the CPU"
    if a.model == "tiny":
        print("REHEARSAL, model tiny, %s: the figures mean nothing" % where)
    print("attention forward + backward, causal, %s: batch %d, %d heads of %d, sequence "
          "%d, %s" % (a.precision, shape[0], shape[1], shape[3], shape[2], where))
    for k in kernels:
        zero_fwd, zero_total, ran = zero[k]
        print("  zero-run --attention %-5s %8.2f ms (forward %.2f), per step under --profile:"
              " %s" % (k, zero_total, zero_fwd, ran))
    print("  PyTorch SDPA               %8.2f ms (forward %.2f)" % (torch_total, torch_fwd))
    for k in kernels:
        print("  zero-run --attention %s / PyTorch: %.2f" % (k, zero[k][1] / torch_total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
