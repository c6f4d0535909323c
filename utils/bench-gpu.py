#!/usr/bin/env python3
# Times the training step (forward, backward, AdamW) of GPT-2 small (12 layers,
# hidden 768, 12 heads, vocab 50257, sequence 1024, micro-batch 8: 124M parameters)
# in zero-run on the GPU and in PyTorch eager on the same GPU, and prints both and
# their ratio. Runs on the GPU machine, with its python3 (PyTorch, onnx, numpy); the
# plan comes compiled (utils/gpu-checks.sh bundle), the weights are made here.
# With --precision bf16 (a plan compiled with zero-opt --precision=bf16), PyTorch
# runs its forward under torch.autocast("cuda", torch.bfloat16).
#
#   bench-gpu.py --zero-run BUNDLE/bin/zero-run --plan BUNDLE/bench/step.zplan
#                [--precision fp32|bf16|fp16]
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}

MODELS = zero_models.GPU_BENCH_MODELS  # tiny: only to rehearse without a GPU


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zero-run", required=True)
    p.add_argument("--plan", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--model", choices=sorted(MODELS), default="small",
                   help="the plan's model (tiny: rehearsals only)")
    p.add_argument("--torch-device", default="cuda", help="cuda, or cpu in a rehearsal")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="the plan's precision; PyTorch autocasts to the same")
    a = p.parse_args()
    CFG = MODELS[a.model]
    dev = torch.device(a.torch_device)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs, as zero-run's cuBLAS

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()
    total = a.warmup + a.steps
    with tempfile.TemporaryDirectory() as tmp:
        model, data = zero_models.gpu_bench_inputs(tmp, CFG)
        log = os.path.join(tmp, "log.json")
        subprocess.run([a.zero_run, a.plan, "--init", model, "--data", data,
                        "--data-format", "u16", "--steps", str(total), "--log-json", log,
                        "--device", "cuda", "--quiet"], check=True)
        zero_ms = statistics.median(json.loads(l)["ms"] for l in list(open(log))[a.warmup:])

    torch.manual_seed(0)
    gpt = zero_models.GPT(CFG["layers"], CFG["hidden"], CFG["heads"], CFG["vocab"],
                          CFG["seq"]).to(dev).train()
    opt = torch.optim.AdamW(gpt.parameters(), lr=1e-4)
    tokens = torch.randint(0, CFG["vocab"], (CFG["batch"], CFG["seq"]), device=dev)
    targets = torch.randint(0, CFG["vocab"], (CFG["batch"], CFG["seq"]), device=dev)
    times = []
    for step in range(total):
        sync()
        start = time.perf_counter()
        opt.zero_grad()
        with (torch.autocast(dev.type, dtype=AUTOCAST[a.precision])
              if a.precision != "fp32" else contextlib.nullcontext()):
            loss = gpt(tokens, targets)
        if a.precision == "fp16":
            (loss * 65536.0).backward()  # a fixed loss scale, as a scaler's
            for p_ in gpt.parameters():
                p_.grad.div_(65536.0)
        else:
            loss.backward()
        opt.step()
        sync()
        if step >= a.warmup:
            times.append((time.perf_counter() - start) * 1000)
    torch_ms = statistics.median(times)
    where = torch.cuda.get_device_name() if dev.type == "cuda" else "PyTorch on the CPU"
    if a.model == "small":
        print("GPT-2 small (124M), seq 1024, micro-batch 8, %s AdamW, %s" % (
            a.precision, where))
    else:
        print("REHEARSAL, model %s, %s: the figures mean nothing" % (a.model, where))
    print("  zero-run       %8.1f ms/step" % zero_ms)
    print("  PyTorch eager  %8.1f ms/step%s" % (
        torch_ms, "" if a.precision == "fp32" else " (torch.autocast %s)" % a.precision))
    print("  zero-run / PyTorch: %.2f" % (zero_ms / torch_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
