#!/usr/bin/env python3
"""Compiles the test models with two zero-opt binaries and compares the plans byte
for byte: the check that a refactoring of the compiler changed no plan.

  compare-plans.py BEFORE_ZERO_OPT AFTER_ZERO_OPT --work DIR [--python PY]

The models: the project's GPT as PyTorch exports it (utils/make_gpt.py), the GPT
written directly as ONNX (utils/gen_gpt_onnx.py), and Hugging Face GPT-2, Llama
and Qwen2 from their configs (utils/hf_export.py), each exported once into DIR.
Each is compiled under every setting of SETTINGS to both the textual plan
(--emit=plan) and the plan file (-o step.zplan) by each binary; every output
pair must be equal, and so must the exit status and error text when a setting is
refused. PY (default: build/python-env/bin/python) runs the exporters.

Prints one line per model and a summary; exits 1 on the first difference, naming
the model, the setting and the output.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UTILS = os.path.join(ROOT, "utils")

SETTINGS = [
    [],
    ["--zero-stage=1", "--world-size=2"],
    ["--zero-stage=2", "--world-size=4"],
    ["--zero-stage=3", "--world-size=4"],
    ["--zero-stage=3", "--world-size=4", "--precision=bf16"],
    ["--zero-stage=2", "--world-size=2", "--precision=fp16", "--grad-accum-steps=3",
     "--clip-grad-norm=1.0"],
    ["--zero-stage=3", "--world-size=2", "--offload-optimizer=cpu", "--offload-param=cpu"],
    ["--zero-stage=3", "--world-size=2", "--offload-optimizer=nvme", "--offload-param=nvme"],
    ["--zero-stage=3", "--world-size=4", "--zero-shard-group-size=2"],
    ["--zero-stage=3", "--world-size=4", "--zero-hpz-partition-size=2",
     "--zero-quantized-weights", "--zero-quantized-gradients"],
    ["--zero-stage=3", "--world-size=2", "--recompute=blocks", "--offload-activations=cpu"],
    ["--zero-stage=2", "--world-size=2", "--optimizer=sgd", "--momentum=0.9", "--no-fusion",
     "--no-views", "--no-overlap"],
    ["--zero-stage=3", "--world-size=4", "--max-memory-gb=0.002"],
    ["--zero-stage=3", "--world-size=8", "--prefetch-buckets=2", "--bucket-size-mb=0.01",
     "--persistence-threshold=100", "--max-live-mb=0.05"],
    ["--mode=inference"],
    ["--mode=gradients", "--zero-stage=2", "--world-size=2"],
]


def models(work, python):
    """(name, path) of each test model, exported once."""
    out = []

    gpt = os.path.join(work, "gpt.onnx")
    if not os.path.exists(gpt):
        subprocess.run([python, os.path.join(UTILS, "make_gpt.py"), gpt, "--layers", "2",
                        "--hidden", "64", "--heads", "4", "--vocab", "128", "--seq", "32",
                        "--batch", "2"], check=True, stdout=subprocess.DEVNULL)
    out.append(("gpt", gpt))
    gen = os.path.join(work, "gen-gpt.onnx")
    if not os.path.exists(gen):
        subprocess.run([python, os.path.join(UTILS, "gen_gpt_onnx.py"), gen, "--layers", "2",
                        "--hidden", "48", "--heads", "3", "--vocab", "96", "--seq", "16",
                        "--batch", "2", "--weights", "random"], check=True,
                       stdout=subprocess.DEVNULL)
    out.append(("gen-gpt", gen))
    for hf in ("gpt2", "llama", "qwen2"):
        path = os.path.join(work, "hf-%s.onnx" % hf)
        if not os.path.exists(path):
            subprocess.run([python, os.path.join(UTILS, "hf_export.py"), path, "--model", hf],
                           check=True, stdout=subprocess.DEVNULL)
        out.append(("hf-" + hf, path))
    return out


def compile_with(binary, model, setting, work, tag):
    zplan = os.path.join(work, "%s.zplan" % tag)
    if os.path.exists(zplan):
        os.remove(zplan)
    text = subprocess.run([binary, model, "--emit=plan"] + setting, capture_output=True)
    filed = subprocess.run([binary, model, "-o", zplan] + setting, capture_output=True)
    data = open(zplan, "rb").read() if os.path.exists(zplan) else None
    return {"plan text": (text.returncode, text.stdout, text.stderr),
            "plan file": (filed.returncode, data, filed.stderr)}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--work", required=True)
    p.add_argument("--python", default=os.path.join(ROOT, "build", "python-env", "bin",
                                                     "python"))
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    compared = refused = 0
    for name, model in models(a.work, a.python):
        for setting in SETTINGS:
            before = compile_with(a.before, model, setting, a.work, "before")
            after = compile_with(a.after, model, setting, a.work, "after")
            for what in before:
                if before[what] != after[what]:
                    print("DIFFERENT: %s %s: %s" % (name, " ".join(setting) or "(defaults)",
                                                    what))
                    for label, r in (("before", before[what]), ("after", after[what])):
                        print("  %s: exit %d, %d bytes, %s" % (
                            label, r[0], len(r[1] or b""), r[2].decode()[-300:].strip()))
                    return 1
            if before["plan text"][0]:
                refused += 1
                print("  refused alike: %s %s: %s" % (
                    name, " ".join(setting),
                    before["plan text"][2].decode().strip().splitlines()[-1][:160]))
            compared += 1
        print("%s: %d settings, the same plans from both" % (name, len(SETTINGS)))
    print("compared %d compilations (%d refused alike by both, with the same message): "
          "the plan text and the plan file byte for byte equal" % (compared, refused))
    return 0


if __name__ == "__main__":
    sys.exit(main())
