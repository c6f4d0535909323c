#!/usr/bin/env python3
# Times the training step (forward, backward, AdamW) of GPT-2 small (12 layers,
# hidden 768, 12 heads, vocab 50257, sequence 1024, micro-batch 8: 124M parameters)
# in zero-run on the GPU and in PyTorch on the same GPU, eager and under
# torch.compile, and prints each with its tokens per second and model FLOPs
# utilization, then zero-run's time per kernel kind (zero-run --profile, a run of
# its own so that profiling does not slow the timed one). Runs on the GPU machine,
# with its python3 (PyTorch, onnx, numpy); the plan comes compiled
# (utils/gpu-checks.sh bundle), the weights are made here.
# With --precision bf16 (a plan compiled with zero-opt --precision=bf16), PyTorch
# runs its forward under torch.autocast("cuda", torch.bfloat16).
#
# Model FLOPs are llm.c's count: 6 N + 6 L C T per token (N parameters, L layers,
# C hidden, T sequence; the causal mask halves attention's 12 L C T), over the
# GPU's dense peak for the precision (fp32 without TF32, as zero-run's GEMMs by
# default; with --allow-tf32 both use TF32, and TF32's peak applies).
#
#   bench-gpu.py --zero-run BUNDLE/bin/zero-run --plan BUNDLE/bench/step.zplan
#                [--precision fp32|bf16|fp16] [--allow-tf32] [--no-compile] [--no-profile]
#                [--batch N] [--work DIR] [--json FILE]
# --batch: the plan's micro-batch when not the model's (8 for GPT-2 small); --work:
# a folder the weights and tokens are made in once and reused from; --json: the
# figures (ms per step, tokens/s, MFU, the profile's rows) also as JSON.
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
    p.add_argument("--allow-tf32", action="store_true",
                   help="fp32 GEMMs on TF32 tensor cores, in zero-run and PyTorch alike")
    p.add_argument("--no-compile", dest="compile", action="store_false",
                   help="skip PyTorch's torch.compile figure")
    p.add_argument("--no-profile", dest="profile", action="store_false",
                   help="skip zero-run's time per kernel kind")
    p.add_argument("--batch", type=int, help="the plan's micro-batch (default: the model's)")
    p.add_argument("--work", help="make the weights and tokens here once, reuse them after")
    p.add_argument("--json", help="also write the figures to this file as JSON")
    a = p.parse_args()
    CFG = dict(MODELS[a.model])
    if a.batch:
        CFG["batch"] = a.batch
    dev = torch.device(a.torch_device)
    torch.backends.cuda.matmul.allow_tf32 = a.allow_tf32  # as zero-run's cuBLASLt

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()
    total = a.warmup + a.steps
    profile = ""
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or tmp
        os.makedirs(work, exist_ok=True)
        made = os.path.join(work, "gpt.onnx"), os.path.join(work, "tokens.u16")
        # The weights do not depend on the micro-batch: made once per folder.
        model, data = made if a.work and all(map(os.path.exists, made)) else \
            zero_models.gpu_bench_inputs(work, CFG)
        log = os.path.join(tmp, "log.json")
        run = [a.zero_run, a.plan, "--init", model, "--data", data, "--data-format", "u16",
               "--device", "cuda"] + (["--allow-tf32"] if a.allow_tf32 else [])
        subprocess.run(run + ["--steps", str(total), "--log-json", log, "--quiet"], check=True)
        zero_ms = statistics.median(json.loads(l)["ms"] for l in list(open(log))[a.warmup:])
        if a.profile:  # a run of its own: the profile reads its events after each step
            out = subprocess.run(run + ["--steps", str(a.steps), "--profile"], check=True,
                                 capture_output=True, text=True).stdout
            profile = out[out.index("time per step by kernel kind:"):]

    torch.manual_seed(0)
    gpt = zero_models.GPT(CFG["layers"], CFG["hidden"], CFG["heads"], CFG["vocab"],
                          CFG["seq"], gelu=CFG.get("gelu", "none")).to(dev).train()
    parameters = sum(p_.numel() for p_ in gpt.parameters())  # the tied weight once
    tokens = torch.randint(0, CFG["vocab"], (CFG["batch"], CFG["seq"]), device=dev)
    targets = torch.randint(0, CFG["vocab"], (CFG["batch"], CFG["seq"]), device=dev)

    def time_steps(forward):
        opt = torch.optim.AdamW(gpt.parameters(), lr=1e-4)
        times = []
        for step in range(total):
            sync()
            start = time.perf_counter()
            opt.zero_grad()
            with (torch.autocast(dev.type, dtype=AUTOCAST[a.precision])
                  if a.precision != "fp32" else contextlib.nullcontext()):
                loss = forward(tokens, targets)
            if a.precision == "fp16":
                (loss * 65536.0).backward()  # a fixed loss scale, as a scaler's
                for p_ in gpt.parameters():
                    p_.grad.div_(65536.0)
            else:
                loss.backward()
            opt.step()
            sync()
            if step >= a.warmup:  # the warm-up steps include torch.compile's compiling
                times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)

    eager_ms = time_steps(gpt)
    compiled_ms = time_steps(torch.compile(gpt)) if a.compile else None

    where = torch.cuda.get_device_name() if dev.type == "cuda" else "PyTorch on the CPU"
    if a.model == "small":
        print("GPT-2 small (124M), seq 1024, micro-batch %d, %s AdamW, %s" % (
            CFG["batch"], a.precision, where))
    else:
        print("REHEARSAL, model %s, %s: the figures mean nothing" % (a.model, where))
    step_tokens = CFG["batch"] * CFG["seq"]
    flops_per_token = 6 * parameters + 6 * CFG["layers"] * CFG["hidden"] * CFG["seq"]
    peak = peak_flops(where, a.precision, a.allow_tf32) if dev.type == "cuda" else None
    print("  %d parameters, %.3g model FLOPs per step (6N + 6LCT per token), peak %s" % (
        parameters, flops_per_token * step_tokens,
        "%.1f TFLOP/s" % (peak / 1e12) if peak else "not known for this device"))

    def row(name, ms, note=""):
        mfu = "  MFU %5.1f%%" % (100 * flops_per_token * step_tokens / (ms / 1e3) / peak) \
            if peak else ""
        print("  %-22s %8.1f ms/step %10.0f tokens/s%s%s" % (
            name, ms, step_tokens / (ms / 1e3), mfu, note))

    autocast = "" if a.precision == "fp32" else " (torch.autocast %s)" % a.precision
    row("zero-run", zero_ms)
    row("PyTorch eager", eager_ms, autocast)
    if compiled_ms is not None:
        row("PyTorch torch.compile", compiled_ms, autocast)
    print("  zero-run / PyTorch eager: %.2f%s" % (
        zero_ms / eager_ms,
        "" if compiled_ms is None else ", / torch.compile: %.2f" % (zero_ms / compiled_ms)))
    if profile:  # over its steps, the first (cuBLASLt's start-up) included
        print("zero-run's " + profile.rstrip())
    if a.json:
        def figures(ms):
            return None if ms is None else {
                "ms": ms, "tokens_per_s": step_tokens / (ms / 1e3),
                "mfu": flops_per_token * step_tokens / (ms / 1e3) / peak if peak else None}
        rows = []  # the profile's "  name  ms  share%  count per step" lines
        for line in profile.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 6 and parts[-5] == "ms":
                rows.append({"kind": " ".join(parts[:-6]), "ms": float(parts[-6]),
                             "share": float(parts[-4].rstrip("%")), "count": int(parts[-3])})
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "batch": CFG["batch"], "precision": a.precision,
                       "device": where, "parameters": parameters,
                       "flops_per_step": flops_per_token * step_tokens,
                       "zero_run": figures(zero_ms), "eager": figures(eager_ms),
                       "compiled": figures(compiled_ms), "profile": rows}, f, indent=1)
    return 0


def peak_flops(device_name, precision, tf32=False):
    """The dense peak FLOP/s of a GPU named `device_name` for `precision` (fp32 on
    the CUDA cores, or TF32 on the tensor cores with `tf32`), from its datasheet;
    None when not known."""
    name = device_name.upper()
    peaks = [("H100 PCIE", 51.2e12, 378e12, 756.5e12), ("H100", 66.9e12, 494.7e12, 989.4e12),
             ("H200", 66.9e12, 494.7e12, 989.4e12), ("GH200", 66.9e12, 494.7e12, 989.4e12),
             ("A100", 19.5e12, 156e12, 312e12)]
    for key, fp32, tf32_peak, half in peaks:
        if key in name:
            return half if precision != "fp32" else tf32_peak if tf32 else fp32
    return None


if __name__ == "__main__":
    sys.exit(main())
