#!/usr/bin/env python3
# Checks zero-opt's --report against the ZeRO paper's arithmetic for Adam: fp32 (P = G
# = 4, K = 8 bytes per parameter) or, with --precision bf16|fp16, mixed precision (P =
# G = 2, K = 12: the f32 master copy, m and v), and against what zero-run measures.
#
#   check-report.py --bin BUILD/bin --work DIR --stage S --world-size N [--precision P]
#
# With Ψ the trainable parameters and Ψp the same after padding each bucket to a
# multiple of N, per-rank model states must be, in bytes (plus the 8-byte step count):
#   stage 0: params PΨ,  grads GΨp (one rank: GΨ), optimizer KΨ
#   stage 1: params PΨ,  grads GΨp,   optimizer KΨp/N
#   stage 2: params PΨ,  grads GΨp/N, optimizer KΨp/N
#   stage 3: params PΨp/N, grads GΨp/N, optimizer KΨp/N
# and the volume 2Ψp for stages 0-2 (0 on one rank at stage 0), 3Ψp for stage 3, in
# elements; mixed precision adds the overflow count's all-reduce (1 element, counted
# twice) on more than one rank.
# Then zero-run trains 2 steps under mpirun and its --log-json must report, per step,
# the predicted collective elements and, per rank, peak_bytes = total_peak.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--stage", type=int, required=True)
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--bucket-size-mb", type=float, default=25.0)
    p.add_argument("--max-live-mb", type=float, default=0.0,
                   help="also check that gathered buckets alive at once stay within it")
    p.add_argument("--prefetch-buckets", type=int, default=2)
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    p.add_argument("--grad-accum-steps", type=int, default=1,
                   help="A micro-batches per step: stages 2-3 reduce-scatter each, into "
                        "sharded accumulators (f32 in mixed precision); stage 3 gathers "
                        "for each")
    p.add_argument("--zero-run", help="the zero-run to measure with (default: BIN/zero-run)")
    p.add_argument("--device", help="zero-run --device (default: zero-run's choice)")
    zero_testing.add_launcher_flag(p)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    model = os.path.join(a.work, "gpt.onnx")
    # Sizes that do not divide the world size, so that buckets are padded.
    subprocess.run([sys.executable, os.path.join(here, "gen_gpt_onnx.py"), model,
                    "--layers", "2", "--hidden", "33", "--heads", "3", "--vocab", "61",
                    "--seq", "16", "--batch", "2", "--weights", "random"],
                   check=True, stdout=subprocess.DEVNULL)
    flags = ["--zero-stage=%d" % a.stage, "--world-size=%d" % a.world_size,
             "--bucket-size-mb=%r" % a.bucket_size_mb, "--max-live-mb=%r" % a.max_live_mb,
             "--prefetch-buckets=%d" % a.prefetch_buckets, "--precision=" + a.precision,
             "--grad-accum-steps=%d" % a.grad_accum_steps]
    r = json.loads(subprocess.run([os.path.join(a.bin, "zero-opt"), model, "--report=json"]
                                  + flags, check=True, capture_output=True,
                                  text=True).stdout)
    psi, psip, n, s = r["parameters"], r["padded_parameters"], a.world_size, a.stage
    step = 8
    P, K = (4, 8) if a.precision == "fp32" else (2, 12)
    G = P
    A = a.grad_accum_steps
    # Accumulated slices (stages 2-3, A > 1) are f32 in mixed precision.
    Gs = 4 if A > 1 and a.precision != "fp32" else G
    expect = {
        0: (P * psi, G * (psip if n > 1 else psi), K * psi + step),
        1: (P * psi, G * psip, K * psip // n + step),
        2: (P * psi, Gs * psip // n, K * psip // n + step),
        3: (P * psip // n, Gs * psip // n, K * psip // n + step),
    }[s]
    flag = 2 if (a.precision != "fp32" and n > 1) else 0
    # Stages 0-1 reduce once per step; 2-3 reduce-scatter per micro-batch, and
    # stage 3 gathers before each micro-batch's forward and backward.
    volume = {0: 0 if n == 1 else 2 * psip, 1: 2 * psip, 2: (A + 1) * psip,
              3: 3 * A * psip}[s] + flag
    got = r["per_rank_bytes"]
    ok = True

    def check(what, have, want):
        nonlocal ok
        flag = "ok" if have == want else "MISMATCH"
        ok &= have == want
        print("  %-34s %12d  expected %12d  %s" % (what, have, want, flag))

    print("%s, stage %d on %d ranks, %d micro-batches per step: Ψ = %d, Ψp = %d" % (
        a.precision, s, n, A, psi, psip))
    # The bool mask is a constant of the plan, not a parameter.
    check("params", got["params"], expect[0])
    check("grads", got["grads"], expect[1])
    check("optimizer_state", got["optimizer_state"], expect[2])
    check("model_states", got["model_states"], sum(expect))
    have_volume = r["comm_elements_per_step"]["volume"]
    if s == 3 and a.bucket_size_mb < 25.0:
        # With small buckets, one that backward never reads (the position
        # embedding's) is not gathered again: between 2 and 3 Ψp.
        in_range = 2 * A * psip + flag < have_volume <= 3 * A * psip + flag
        ok &= in_range
        print("  %-34s %12d  in (2AΨp, 3AΨp] = (%d, %d]  %s" % (
            "volume", have_volume, 2 * A * psip + flag, 3 * A * psip + flag,
            "ok" if in_range else "MISMATCH"))
    else:
        check("volume", have_volume, volume)
    buckets = max(1, round(4 * psi / (a.bucket_size_mb * 1024 * 1024)) + 1)
    if psip - psi >= n * buckets:
        print("  padding larger than expected: %d elements" % (psip - psi))
        ok = False
    budget = int(a.max_live_mb * 1024 * 1024)
    if budget:
        have = got["gathered_peak"]
        flag = "ok" if have <= budget else "OVER BUDGET"
        ok &= have <= budget
        print("  %-34s %12d  budget   %12d  %s" % ("gathered_peak", have, budget, flag))

    # What zero-run measures.
    plan = os.path.join(a.work, "step.zplan")
    subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan] + flags, check=True)
    data = os.path.join(a.work, "tokens.u8")
    with open(data, "wb") as f:
        f.write(bytes(i % 61 for i in range(2000)))
    log = os.path.join(a.work, "log.json")
    launch = zero_testing.launcher(n, a.launcher)
    zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    subprocess.run(launch + [zero_run, plan, "--init", model, "--data", data, "--steps", "2",
                             "--log-json", log, "--quiet"]
                   + (["--device", a.device] if a.device else []), check=True)
    for line in open(log):
        m = json.loads(line)
        for kind in ("all_gather", "reduce_scatter", "all_reduce", "volume"):
            check("measured %s, step %d" % (kind, m["step"]), m["comm_elements"][kind],
                  r["comm_elements_per_step"][kind])
        for rank, peak in enumerate(m["peak_bytes"]):
            check("measured peak_bytes, rank %d" % rank, peak, got["total_peak"])
        check("measured gathered_peak_bytes", m["gathered_peak_bytes"],
              got["gathered_peak"])
        if budget and m["gathered_peak_bytes"] > budget:
            print("  measured gathered_peak_bytes over --max-live-mb")
            ok = False
    print("report: %s" % ("ok" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
