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
#                            [--zero-run PATH] [--models llama,gpt-tanh]
#                            [--bundle DIR | --prebuilt DIR]
#
# --bundle exports the models and compiles their plans into DIR and stops;
# --prebuilt runs the plans found there (the GPU machine has no zero-opt).
#
# On a GPU (--zero-run BUILD/bin/zero-run, utils/gpu-checks.sh) the same holds for
# NVRTC's kernels against nvcc's interpreter: both round every instruction and the
# f32 arithmetic ops are rounding intrinsics there (ElementwiseMath.h), so no fused
# multiply-add spans two instructions.
#
# Exit 1 on a difference, or when a precision's plans held no fused program (the
# check would prove nothing). Run with build/python-env/bin/python.
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

MODELS = [("gpt", "none"), ("gpt", "tanh"), ("mlp", "none"), ("llama", "none")]
PRECISIONS = ("fp32", "bf16", "fp16")
FUSION = ([], ["--no-epilogue-fusion"])


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def tag_of(name, gelu):
    return name + ("-" + gelu if gelu != "none" else "")


def prepare(bin_dir, work, chosen, vocab, seq, batch):
    """Exports the chosen models and compiles each case's plan into `work`: a list of
    cases (names relative to `work`) and the fused programs each plan holds."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import zero_models

    zero_opt = os.path.join(bin_dir, "zero-opt")
    cases = []
    for name, gelu in MODELS:
        tag = tag_of(name, gelu)
        if tag not in chosen:
            continue
        torch.manual_seed(0)
        model = zero_models.build(name, layers=2, hidden=32, heads=4, vocab=vocab, seq=seq,
                                  gelu=gelu)
        zero_models.export(model, os.path.join(work, tag + ".onnx"), batch, seq, vocab)
        for precision in PRECISIONS:
            for fusion in FUSION:
                stem = "%s-%s%s" % (tag, precision, "-unfused" if fusion else "")
                flags = ["--precision=" + precision] + fusion
                onnx_path = os.path.join(work, tag + ".onnx")
                ir = run([zero_opt, onnx_path, "--emit=plan"] + flags).stdout
                run([zero_opt, onnx_path, "-o", os.path.join(work, stem + ".zplan")] + flags)
                cases.append({"case": "%s %s%s" % (tag, precision, " " + fusion[0] if fusion else ""),
                              "onnx": tag + ".onnx", "stem": stem, "precision": precision,
                              "fused": len(re.findall(r"plan\.kernel fused\b", ir))})
    return cases


def check(cases, zero_run, work, steps):
    """Trains each case both ways; the number of failures."""
    data_path = os.path.join(work, "tokens.u8")
    programs = {p: 0 for p in PRECISIONS}
    failures = 0
    for c in cases:
        stem = os.path.join(work, c["stem"])
        programs[c["precision"]] += c["fused"]
        out = {}
        shutil.rmtree(stem + "-kernels", ignore_errors=True)  # compiled afresh
        for mode in ("interpreter", "generated"):
            env = dict(os.environ, ZERO_KERNEL_CACHE=stem + "-kernels")
            weights = "%s-%s.safetensors" % (stem, mode)
            r = run([zero_run, stem + ".zplan", "--device", "cuda", "--init",
                     os.path.join(work, c["onnx"]), "--data", data_path, "--steps", str(steps),
                     "--fused-kernels", mode, "--save-weights", weights], env)
            losses = re.findall(r"^step \d+/\d+\s+loss (\S+)", r.stdout, re.M)
            with open(weights, "rb") as f:
                out[mode] = (losses, f.read(), r.stderr)
        said = re.search(r"compiled (\d+) generated kernels for (\d+) fused programs",
                         out["generated"][2])
        compiled = int(said.group(2)) if said else 0
        same = out["generated"][:2] == out["interpreter"][:2]
        ok = same and compiled == c["fused"] and len(out["generated"][0]) == steps
        failures += not ok
        print("%-6s %-40s fused programs %2d, generated %2d: %s" %
              ("ok" if ok else "FAIL", c["case"], c["fused"], compiled,
               "losses and weights bit-identical" if same else
               "DIFFERENT (losses %s vs %s)" % (out["generated"][0], out["interpreter"][0])))
    for precision, count in programs.items():
        if count == 0:
            print("FAIL: no %s plan held a fused program" % precision)
            failures += 1
    print("fused programs per precision: %s" % programs)
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--zero-run", help="default: BIN/zero-run-cuda-emulated")
    p.add_argument("--models", default=",".join(tag_of(n, g) for n, g in MODELS))
    p.add_argument("--bundle", help="only export and compile into this folder")
    p.add_argument("--prebuilt", help="run the cases --bundle wrote there")
    a = p.parse_args()
    chosen = a.models.split(",")
    known = [tag_of(n, g) for n, g in MODELS]
    for m in chosen:
        if m not in known:
            sys.exit("--models: unknown model %r (one of %s)" % (m, ", ".join(known)))
    work = a.bundle or a.prebuilt or a.work
    if not work:
        sys.exit("give --work, --bundle or --prebuilt")
    os.makedirs(work, exist_ok=True)
    vocab, seq, batch = 64, 16, 2
    if a.prebuilt:
        with open(os.path.join(work, "cases.json")) as f:
            cases = [c for c in json.load(f) if c["onnx"][:-len(".onnx")] in chosen]
    else:
        data = np.random.RandomState(1).randint(0, vocab, size=4096).astype(np.uint8)
        data.tofile(os.path.join(work, "tokens.u8"))
        cases = prepare(a.bin, work, chosen, vocab, seq, batch)
        with open(os.path.join(work, "cases.json"), "w") as f:
            json.dump(cases, f, indent=1)
    if a.bundle:
        print("%d cases written to %s" % (len(cases), work))
        return
    zero_run = a.zero_run or os.path.join(a.bin, "zero-run-cuda-emulated")
    sys.exit(1 if check(cases, zero_run, work, a.steps) else 0)


if __name__ == "__main__":
    main()
