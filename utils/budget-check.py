#!/usr/bin/env python3
# zero-opt --max-memory-gb: a plan compiled under a tight budget (half the peak the
# plan has without one) fits it, trains bit-identically to the plan without a
# budget (recomputed activations are the same ops on the same operands), and the
# memory zero-run measures while it trains (each rank's growth of its process's peak
# resident set: ranks are mpirun processes) stays under the budget.
#
#   budget-check.py --bin BUILD/bin --work DIR [--steps 4]
#
# The test GPT with 4 layers, a longer sequence and a bigger batch (activations
# dominate its memory, and the runtime's own few MiB are small beside them), at
# stages 0-3 on 1, 2 and 4 ranks. Prints each plan's peak without and with the
# budget (the plan's arena, per rank), the largest measured peak, and what the budget
# chose.
# Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    # Batch 48: the runtime's own ~5 MiB (MPI, threads) must stay small beside the
    # budget, which fusion made smaller (at batch 16, 4 ranks measured 21.6 MB against
    # a 21.55 MB budget: the plan's 16.3 MB and the runtime's 5.3; at batch 32, once
    # the loss's gradient was written over the logits, 19.56 MB against 19.35).
    model, data = zero_models.test_gpt(a.work, seq=128, batch=48, layers=4)
    zero_opt, zero_run = os.path.join(a.bin, "zero-opt"), os.path.join(a.bin, "zero-run")
    ok = True
    for world in (1, 2, 4):
        for stage in (0, 1, 2, 3):
            work = os.path.join(a.work, "s%d-w%d" % (stage, world))
            os.makedirs(work, exist_ok=True)
            flags = ["--zero-stage=%d" % stage, "--world-size=%d" % world,
                     "--bucket-size-mb=0.02"]
            report = json.loads(subprocess.run(
                [zero_opt, model, "--report=json"] + flags, check=True,
                capture_output=True, text=True).stdout)
            peak = report["per_rank_bytes"]["total_peak"]
            budget_gb = peak / 2 / 2**30
            plans = {}
            for name, extra in (("free", []), ("budget", ["--max-memory-gb=%r" % budget_gb])):
                plans[name] = os.path.join(work, name + ".zplan")
                r = subprocess.run([zero_opt, model, "-o", plans[name]] + flags + extra,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print("s%d-w%d: %s plan does not compile:\n%s" % (stage, world, name,
                                                                     r.stderr))
                    return 1
                if name == "budget":
                    chose = r.stderr.strip().splitlines()[-1]
            tight = json.loads(subprocess.run(
                [zero_opt, model, "--report=json", "--max-memory-gb=%r" % budget_gb] + flags,
                check=True, capture_output=True, text=True).stdout)
            tight_peak = tight["per_rank_bytes"]["total_peak"]
            runs = {}
            for name, plan in plans.items():
                log, weights = (os.path.join(work, name + ext) for ext in (".json", ".onnx"))
                subprocess.run(zero_testing.launcher(world) +
                               [zero_run, plan, "--init", model, "--data", data,
                                "--steps", str(a.steps), "--log-json", log,
                                "--save-weights", weights, "--quiet"], check=True)
                steps = [json.loads(l) for l in open(log)]
                if name == "budget":
                    measured = max(max(s["measured_peak_bytes"]) for s in steps)
                with open(weights, "rb") as f:
                    runs[name] = ([s["loss"] for s in steps], f.read())
            same = runs["free"] == runs["budget"]
            fits = tight_peak <= budget_gb * 2**30
            measured_fits = 0 < measured <= budget_gb * 2**30
            good = same and fits and measured_fits
            print("stage %d, %d rank(s): peak %d bytes without a budget, %d under %d (%s), "
                  "%d measured; losses and weights %s: %s" % (
                      stage, world, peak, tight_peak, int(budget_gb * 2**30),
                      chose.replace("zero-opt: ", ""), measured,
                      "identical" if same else "DIFFER", "ok" if good else "MISMATCH"))
            ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
