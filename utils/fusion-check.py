#!/usr/bin/env python3
# Fused elementwise kernels (the default) against one kernel per op (zero-opt
# --no-fusion): the same training, step by step. The fused kernel rounds every value
# as the unfused kernels do, so losses and weights must be bit-identical on the CPU
# backend; --rtol allows a relative difference instead (the requirement is 1e-6).
#
#   fusion-check.py --bin BUILD/bin --work DIR [--device cpu|cuda] [--zero-run Z]
#                   [--rtol 0] [--steps 4] [--quick]
#
# Cases: the test GPT (GELU, bias adds, attention scale and mask, their gradients)
# in f32 on one rank, as ZeRO stage 3 on 2 ranks, in bf16 (casts inside the chains);
# the Llama-style model (SiLU through sigmoid, RMSNorm through pow, sqrt and div,
# rotary embeddings); bf16 stage 2 with the optimizer offloaded (host chains).
# --quick: the f32 GPT and the bf16 one. Each plan must hold fused kernels (counted
# in its plan IR), else fusion did nothing and the comparison means nothing. Both
# sides keep a product's bias and residual out of its epilogue (--no-epilogue-fusion).
#
# Then the epilogue (the default) against those adds as kernels of their own, on
# the GPT in f32 and bf16: the product starts from bias + residual and is rounded
# once, so the values differ by rounding; the losses must agree within EPILOGUE_RTOL
# of their dtype, and the plan must hold products with an epilogue.
# Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

# (name, model, flags)
FULL = [
    ("gpt-f32", "gpt", []),
    ("gpt-f32-stage3-world2", "gpt", ["--zero-stage=3", "--world-size=2",
                                      "--bucket-size-mb=0.02"]),
    ("gpt-bf16", "gpt", ["--precision=bf16"]),
    ("llama-f32", "llama", []),
    ("gpt-bf16-stage2-offload", "gpt", ["--precision=bf16", "--zero-stage=2",
                                        "--offload-optimizer=cpu"]),
]
QUICK = [FULL[0], FULL[2]]
# Relative loss differences allowed for the epilogue's rounding: f32's (8 steps of
# the test GPT agree to the 7 digits printed), bf16's (they differ by about 5e-5).
EPILOGUE = [("gpt-f32", "gpt", [], 1e-6), ("gpt-bf16", "gpt", ["--precision=bf16"], 1e-3)]


def export(work, name):
    """WORK/NAME.onnx (seed 0, the tests' size) and a shared token file."""
    data = os.path.join(work, "tokens.u8")
    if not os.path.exists(data):
        np.random.RandomState(1).randint(0, 64, size=4096).astype(np.uint8).tofile(data)
    model = os.path.join(work, name + ".onnx")
    if not os.path.exists(model):
        import torch
        torch.manual_seed(0)
        zero_models.export(zero_models.build(name, vocab=64, seq=16), model, 4, 16, 64)
    return model, data


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--zero-run", help="the zero-run binary (default: BIN/zero-run)")
    p.add_argument("--rtol", type=float, default=0.0,
                   help="0: bit-identical; else the largest relative difference allowed")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    zero_opt = os.path.join(a.bin, "zero-opt")
    zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    ok = True
    for name, arch, flags in QUICK if a.quick else FULL:
        model, data = export(a.work, arch)
        work = os.path.join(a.work, name)
        os.makedirs(work, exist_ok=True)
        runs, kernels = {}, {}
        for label, extra in (("fused", ["--no-epilogue-fusion"]),
                             ("unfused", ["--no-fusion", "--no-epilogue-fusion"])):
            plan = os.path.join(work, label + ".zplan")
            subprocess.run([zero_opt, model, "-o", plan] + flags + extra, check=True)
            ir = subprocess.run([zero_opt, model, "--emit=plan"] + flags + extra, check=True,
                                capture_output=True, text=True).stdout
            kernels[label] = (len(re.findall(r'plan\.kernel fused ', ir)),
                              len(re.findall(r"plan\.kernel ", ir)))
            log, saved = (os.path.join(work, label + ext) for ext in (".json", ".onnx"))
            # Ranks are threads of one zero-run.
            subprocess.run([zero_run, plan, "--init", model, "--data", data,
                            "--device", a.device, "--steps", str(a.steps),
                            "--log-json", log, "--save-weights", saved, "--quiet"],
                           check=True)
            runs[label] = ([json.loads(l)["loss"] for l in open(log)], zero_testing.onnx_weights(saved))
        (loss0, w0), (loss1, w1) = runs["unfused"], runs["fused"]
        diffs = [abs(x - y) / max(abs(x), 1e-30) for x, y in zip(loss0, loss1)]
        for k in w0.keys() & w1.keys():
            x, y = w0[k].astype(np.float64), w1[k].astype(np.float64)
            with np.errstate(invalid="ignore"):  # buffers may hold -inf (masks)
                d = np.where(x == y, 0.0, np.abs(x - y) / np.maximum(np.abs(x), 1e-3))
            diffs.append(float(np.max(d, initial=0.0)))
        worst = max(diffs) if diffs else float("inf")
        identical = loss0 == loss1 and w0.keys() == w1.keys() and all(
            w0[k].tobytes() == w1[k].tobytes() for k in w0)
        same = len(loss0) == len(loss1) == a.steps and w0.keys() == w1.keys() and (
            identical if a.rtol == 0 else worst <= a.rtol)
        fused_count, total = kernels["fused"]
        did_fuse = fused_count > 0 and total < kernels["unfused"][1]
        print("%-26s kernels %4d -> %4d (%3d fused); losses %s: %s" % (
            name, kernels["unfused"][1], total, fused_count,
            "identical" if identical else "worst relative %.2e" % worst,
            "ok" if same and did_fuse else "MISMATCH" if not same else "NOTHING FUSED"))
        ok &= same and did_fuse
    for name, arch, flags, rtol in EPILOGUE:
        model, data = export(a.work, arch)
        work = os.path.join(a.work, name + "-epilogue")
        os.makedirs(work, exist_ok=True)
        losses = {}
        for label, extra in (("epilogue", []), ("adds", ["--no-epilogue-fusion"])):
            plan = os.path.join(work, label + ".zplan")
            subprocess.run([zero_opt, model, "-o", plan] + flags + extra, check=True)
            log = os.path.join(work, label + ".json")
            subprocess.run([zero_run, plan, "--init", model, "--data", data,
                            "--device", a.device, "--steps", str(a.steps), "--log-json", log,
                            "--quiet"], check=True)
            losses[label] = [json.loads(l)["loss"] for l in open(log)]
        ir = subprocess.run([zero_opt, model, "--emit=plan"] + flags, check=True,
                            capture_output=True, text=True).stdout
        with_epilogue = len(re.findall(r"plan\.kernel matmul .*operand_segments", ir))
        x, y = losses["adds"], losses["epilogue"]
        worst = max((abs(p - q) / max(abs(p), 1e-30) for p, q in zip(x, y)),
                    default=float("inf"))
        same = len(x) == len(y) == a.steps and worst <= rtol
        print("%-26s %d products with a bias or residual; losses worst relative %.2e "
              "(rtol %g): %s" % (name + " epilogue", with_epilogue, worst, rtol,
                                 "ok" if same and with_epilogue else
                                 "MISMATCH" if not same else "NOTHING FUSED"))
        ok &= same and with_epilogue > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
