#!/usr/bin/env python3
# Memory and optimizer offload on the GPU, for GPT-2 small (one rank, ZeRO stage 2):
# each plan's step time and its measured peak device memory (zero-run's
# measured_peak_bytes: cudaMemGetInfo's memory in use over what was in use before the
# plan's arena) next to the plan's peak from the compiler's report, for
#   fp32             no budget
#   fp32-budget      --max-memory-gb at half of fp32's peak (recomputation)
#   fp32-offload     --offload-optimizer=cpu
#   bf16, bf16-offload
# and checks that offload trains like no offload (losses within 1e-4 in fp32, 1e-2
# in bf16: the host's AdamW against the GPU's, whose compiler may fuse a multiply and
# an add that the host rounds twice).
# Runs on the GPU machine with its python3; the plans and their reports come compiled
# (utils/gpu-checks.sh bundle: BUNDLE/mem), the weights are made here.
#
#   gpu-memory.py --zero-run BUNDLE/bin/zero-run --dir BUNDLE/mem [--model small|tiny]
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402

PLANS = ["fp32", "fp32-budget", "fp32-offload", "bf16", "bf16-offload"]
PAIRS = [("fp32", "fp32-offload", 1e-4), ("bf16", "bf16-offload", 1e-2)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zero-run", required=True)
    p.add_argument("--dir", required=True, help="the bundle's compiled plans and reports")
    p.add_argument("--model", choices=sorted(zero_models.GPU_BENCH_MODELS), default="small")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    cfg = zero_models.GPU_BENCH_MODELS[a.model]
    budgets = json.load(open(os.path.join(a.dir, a.model + "-budgets.json")))
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        model, data = zero_models.gpu_bench_inputs(tmp, cfg)
        for name in PLANS:
            plan = os.path.join(a.dir, "%s-%s.zplan" % (a.model, name))
            log = os.path.join(tmp, name + ".json")
            subprocess.run([a.zero_run, plan, "--init", model, "--data", data,
                            "--data-format", "u16", "--steps", str(a.warmup + a.steps),
                            "--log-json", log, "--device", "cuda", "--quiet"], check=True)
            steps = [json.loads(l) for l in open(log)]
            report = json.load(open(os.path.join(a.dir, "%s-%s.json" % (a.model, name))))
            runs[name] = dict(
                ms=statistics.median(s["ms"] for s in steps[a.warmup:]),
                losses=[s["loss"] for s in steps],
                measured=max(s["measured_peak_bytes"][0] for s in steps),
                planned=report["per_rank_bytes"]["total_peak"],
                host=report.get("host_bytes", {}).get("host_peak", 0),
                budget=budgets.get(name))
    mib = lambda b: b / 2**20
    print("GPT-2 %s (%s), one rank, ZeRO stage 2, on the GPU: step time and peak device "
          "memory (MiB)" % (a.model, ", ".join("%s %s" % kv for kv in cfg.items())))
    print("  %-14s %9s %10s %10s %10s %8s %8s" % ("plan", "ms/step", "plan peak",
                                                 "measured", "over plan", "budget", "host"))
    for name in PLANS:
        r = runs[name]
        print("  %-14s %9.1f %10.1f %10.1f %10.1f %8s %8.1f" % (
            name, r["ms"], mib(r["planned"]), mib(r["measured"]),
            mib(r["measured"] - r["planned"]),
            "%.1f" % mib(r["budget"]) if r["budget"] else "-", mib(r["host"])))
    ok = True
    for base, off, rtol in PAIRS:
        worst = max(abs(x - y) / abs(x) for x, y in zip(runs[base]["losses"],
                                                          runs[off]["losses"]))
        good = worst <= rtol and len(runs[base]["losses"]) == len(runs[off]["losses"])
        print("  %s vs %s: step time %.2f x, device peak %.2f x, losses within %.2e "
              "(limit %g): %s" % (
                  off, base, runs[off]["ms"] / runs[base]["ms"],
                  runs[off]["measured"] / max(runs[base]["measured"], 1), worst, rtol,
                  "ok" if good else "MISMATCH"))
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
