#!/usr/bin/env python3
# Proves the generated fused kernels (runtime/lib/cuda/FusedKernelSource.h) on the
# CUDA emulator: every test model (utils/zero_models.py: the GPT with both GELUs,
# the MLP, the Llama) in fp32, bf16 and fp16, with and without matmul epilogues
# (without them more elementwise chains are fused programs), trains K steps with
# `--fused-kernels generated` and with `--fused-kernels interpreter`; the losses
# printed and the trained weights must be the same bytes. Each generated run
# compiles into a fresh kernel cache, and must say it compiled kernels for every
# fused program its plan holds (counted in the plan's IR).
#
#   fused-kernels-bitwise.py --bin BUILD/bin --work DIR [--steps 3]
#
# Exit 1 on a difference, or when a precision's plans held no fused program (the
# check would prove nothing). Run with build/python-env/bin/python.
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402

MODELS = [("gpt", "none"), ("gpt", "tanh"), ("mlp", "none"), ("llama", "none")]
PRECISIONS = ("fp32", "bf16", "fp16")
FUSION = ([], ["--no-epilogue-fusion"])


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    zero_opt = os.path.join(a.bin, "zero-opt")
    zero_run = os.path.join(a.bin, "zero-run-cuda-emulated")
    vocab, seq, batch = 64, 16, 2
    data = np.random.RandomState(1).randint(0, vocab, size=4096).astype(np.uint8)
    data_path = os.path.join(a.work, "tokens.u8")
    data.tofile(data_path)

    programs = {p: 0 for p in PRECISIONS}
    failures = 0
    for name, gelu in MODELS:
        torch.manual_seed(0)
        model = zero_models.build(name, layers=2, hidden=32, heads=4, vocab=vocab, seq=seq,
                                  gelu=gelu)
        tag = name + ("-" + gelu if gelu != "none" else "")
        onnx_path = os.path.join(a.work, tag + ".onnx")
        zero_models.export(model, onnx_path, batch, seq, vocab)
        for precision in PRECISIONS:
            for fusion in FUSION:
                case = "%s %s%s" % (tag, precision, " " + fusion[0] if fusion else "")
                stem = os.path.join(a.work, "%s-%s%s" % (tag, precision,
                                                         "-unfused" if fusion else ""))
                flags = ["--precision=" + precision] + fusion
                ir = run([zero_opt, onnx_path, "--emit=plan"] + flags).stdout
                fused = len(re.findall(r"plan\.kernel fused\b", ir))
                programs[precision] += fused
                plan = stem + ".zplan"
                run([zero_opt, onnx_path, "-o", plan] + flags)
                out = {}
                shutil.rmtree(stem + "-kernels", ignore_errors=True)  # compiled afresh
                for mode in ("interpreter", "generated"):
                    env = dict(os.environ, ZERO_KERNEL_CACHE=stem + "-kernels")
                    weights = "%s-%s.safetensors" % (stem, mode)
                    r = run([zero_run, plan, "--device", "cuda", "--init", onnx_path,
                             "--data", data_path, "--steps", str(a.steps),
                             "--fused-kernels", mode, "--save-weights", weights], env)
                    losses = re.findall(r"^step \d+/\d+\s+loss (\S+)", r.stdout, re.M)
                    with open(weights, "rb") as f:
                        out[mode] = (losses, f.read(), r.stderr)
                said = re.search(r"compiled (\d+) generated kernels for (\d+) fused programs",
                                 out["generated"][2])
                compiled = int(said.group(2)) if said else 0
                same = out["generated"][:2] == out["interpreter"][:2]
                ok = same and compiled == fused and len(out["generated"][0]) == a.steps
                failures += not ok
                print("%-6s %-40s fused programs %2d, generated %2d: %s" %
                      ("ok" if ok else "FAIL", case, fused, compiled,
                       "losses and weights bit-identical" if same else
                       "DIFFERENT (losses %s vs %s)" % (out["generated"][0],
                                                        out["interpreter"][0])))
    for precision, count in programs.items():
        if count == 0:
            print("FAIL: no %s plan held a fused program" % precision)
            failures += 1
    print("fused programs per precision: %s" % programs)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
