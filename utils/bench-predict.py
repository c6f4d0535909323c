#!/usr/bin/env python3
# Predicts, with zero-opt's cost model and published H100 figures (--machine
# h100-nvlink: NVLink inside nodes of 8 GPUs, InfiniBand NDR between them), the
# training step of GPT-2 small, medium and XL on 8, 64 and 512 ranks with every ZeRO
# stage: step time, exposed (not overlapped) communication, per-rank memory. The
# weights are never written (gen_gpt_onnx.py --weights none). A benchmark, not a
# test. Run with build/python-env/bin/python (the tests' environment).
#
#   bench-predict.py --bin BUILD/bin [--micro-batch 4] [--seq 1024]
import argparse
import json
import os
import subprocess
import sys
import tempfile

MODELS = [("GPT-2 125M", 12, 768, 12), ("GPT-2 350M", 24, 1024, 16),
          ("GPT-2 1.5B", 48, 1600, 25)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--machine", default="h100-nvlink")
    p.add_argument("--ranks", type=int, nargs="*", default=[8, 64, 512])
    a = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    gib = 1024.0 ** 3
    print("predicted on %s, sequence %d, micro-batch %d per rank, fp32 Adam" % (
        a.machine, a.seq, a.micro_batch))
    print("%-11s %5s %5s %10s %11s %10s %13s %11s" % (
        "model", "ranks", "stage", "step ms", "exposed ms", "comm ms", "states GiB", "peak GiB"))
    with tempfile.TemporaryDirectory() as tmp:
        for name, layers, hidden, heads in MODELS:
            model = os.path.join(tmp, "gpt.onnx")
            subprocess.run([sys.executable, os.path.join(here, "gen_gpt_onnx.py"), model,
                            "--layers", str(layers), "--hidden", str(hidden), "--heads",
                            str(heads), "--vocab", "50257", "--seq", str(a.seq), "--batch",
                            str(a.micro_batch)], check=True, stdout=subprocess.DEVNULL)
            for ranks in a.ranks:
                for stage in range(4):
                    out = subprocess.run([os.path.join(a.bin, "zero-opt"), model,
                                          "--zero-stage=%d" % stage,
                                          "--world-size=%d" % ranks,
                                          "--machine=" + a.machine, "--report=json"],
                                         check=True, capture_output=True, text=True).stdout
                    r = json.loads(out)
                    pr, mem = r["predicted"], r["per_rank_bytes"]
                    print("%-11s %5d %5d %10.1f %11.1f %10.1f %13.2f %11.2f" % (
                        name, ranks, stage, pr["step_ms"], pr["exposed_comm_ms"],
                        pr["comm_ms"], mem["model_states"] / gib, mem["total_peak"] / gib))
    return 0


if __name__ == "__main__":
    sys.exit(main())
