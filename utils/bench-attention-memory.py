#!/usr/bin/env python3
# The step's transient memory against the sequence length, fused attention or its
# parts: the report's figures (zero-opt --report=json), for a GPT of GPT-2 small's
# shape (12 layers, hidden 768, 12 heads, vocabulary 50257) in bf16 by default.
#
#   bench-attention-memory.py --bin BUILD/bin --work DIR [--seq 1024,2048]
#                             [--batch 8] [--precision bf16] [--layers 12]
#
# Exports each length with utils/make_gpt.py (external data: about 0.5 GB each),
# compiles with and without --no-attention-fusion and prints, per length, the
# transient and total peaks and their growth over the first length.
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def report(bindir, model, precision, extra):
    out = subprocess.run([os.path.join(bindir, "zero-opt"), model, "--report=json",
                          "--precision=" + precision] + extra,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["per_rank_bytes"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seq", default="1024,2048")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--precision", default="bf16")
    p.add_argument("--layers", type=int, default=12)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    gib = float(1 << 30)
    first = {}
    print("%-6s %-6s %16s %16s %8s" % ("T", "attn", "transient GiB", "total GiB", "growth"))
    for t in [int(x) for x in a.seq.split(",")]:
        model = os.path.join(a.work, "gpt-%d.onnx" % t)
        if not os.path.exists(model):
            # Traced without autograd: the export's forward would otherwise keep
            # every layer's T x T scores (24 GB at T = 2048, batch 8).
            args = [model, "--layers", str(a.layers), "--hidden", "768", "--heads", "12",
                    "--vocab", "50257", "--seq", str(t), "--batch", str(a.batch),
                    "--external-data"]
            subprocess.run([sys.executable, "-c",
                            "import runpy, sys, torch; torch.set_grad_enabled(False); "
                            "sys.argv = sys.argv[1:]; "
                            "runpy.run_path(sys.argv[0], run_name='__main__')",
                            os.path.join(HERE, "make_gpt.py")] + args,
                           check=True, capture_output=True)
        for name, extra in [("fused", []), ("parts", ["--no-attention-fusion"])]:
            r = report(a.bin, model, a.precision, extra)
            first.setdefault(name, r["transient_peak"])
            print("%-6d %-6s %16.2f %16.2f %7.2fx" % (
                t, name, r["transient_peak"] / gib, r["total_peak"] / gib,
                r["transient_peak"] / first[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
