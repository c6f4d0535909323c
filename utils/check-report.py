#!/usr/bin/python3
# Checks zero-opt's --report against DESIGN.md's arithmetic for fp32 Adam (P = G = 4,
# K = 8 bytes per parameter) and against what zero-run measures.
#
#   check-report.py --bin BUILD/bin --work DIR --stage S --world-size N
#
# With Ψ the trainable parameters and Ψp the same after padding each bucket to a
# multiple of N, per-rank model states must be, in bytes (plus the 8-byte step count):
#   stage 0: params 4Ψ,  grads 4Ψp (one rank: 4Ψ), optimizer 8Ψ
#   stage 1: params 4Ψ,  grads 4Ψp,   optimizer 8Ψp/N
#   stage 2: params 4Ψ,  grads 4Ψp/N, optimizer 8Ψp/N
#   stage 3: params 4Ψp/N, grads 4Ψp/N, optimizer 8Ψp/N
# and the volume 2Ψp for stages 0-2 (0 on one rank at stage 0), 3Ψp for stage 3.
# Then zero-run trains 2 steps under mpirun and its --log-json must report, per step,
# the predicted collective elements and, per rank, peak_bytes = total_peak.
# Run with Debian's /usr/bin/python3 (python3-onnx, numpy).
import argparse
import json
import os
import subprocess
import sys


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
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    model = os.path.join(a.work, "gpt.onnx")
    # Sizes that do not divide the world size, so that buckets are padded.
    subprocess.run(["/usr/bin/python3", os.path.join(here, "gen_gpt_onnx.py"), model,
                    "--layers", "2", "--hidden", "33", "--heads", "3", "--vocab", "61",
                    "--seq", "16", "--batch", "2", "--weights", "random"],
                   check=True, stdout=subprocess.DEVNULL)
    flags = ["--zero-stage=%d" % a.stage, "--world-size=%d" % a.world_size,
             "--bucket-size-mb=%r" % a.bucket_size_mb, "--max-live-mb=%r" % a.max_live_mb,
             "--prefetch-buckets=%d" % a.prefetch_buckets]
    r = json.loads(subprocess.run([os.path.join(a.bin, "zero-opt"), model, "--report=json"]
                                  + flags, check=True, capture_output=True,
                                  text=True).stdout)
    psi, psip, n, s = r["parameters"], r["padded_parameters"], a.world_size, a.stage
    step = 8
    expect = {
        0: (4 * psi, 4 * (psip if n > 1 else psi), 8 * psi + step),
        1: (4 * psi, 4 * psip, 8 * psip // n + step),
        2: (4 * psi, 4 * psip // n, 8 * psip // n + step),
        3: (4 * psip // n, 4 * psip // n, 8 * psip // n + step),
    }[s]
    volume = 0 if (s == 0 and n == 1) else (3 if s == 3 else 2) * psip
    got = r["per_rank_bytes"]
    ok = True

    def check(what, have, want):
        nonlocal ok
        flag = "ok" if have == want else "MISMATCH"
        ok &= have == want
        print("  %-34s %12d  expected %12d  %s" % (what, have, want, flag))

    print("stage %d on %d ranks: Ψ = %d, Ψp = %d" % (s, n, psi, psip))
    # The bool mask is a constant of the plan, not a parameter.
    check("params", got["params"], expect[0])
    check("grads", got["grads"], expect[1])
    check("optimizer_state", got["optimizer_state"], expect[2])
    check("model_states", got["model_states"], sum(expect))
    have_volume = r["comm_elements_per_step"]["volume"]
    if s == 3 and a.bucket_size_mb < 25.0:
        # With small buckets, one that backward never reads (the position
        # embedding's) is not gathered again: between 2 and 3 Ψp.
        in_range = 2 * psip < have_volume <= 3 * psip
        ok &= in_range
        print("  %-34s %12d  in (2Ψp, 3Ψp] = (%d, %d]  %s" % (
            "volume", have_volume, 2 * psip, 3 * psip, "ok" if in_range else "MISMATCH"))
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
    launch = []
    if n > 1:
        launch = ["mpirun", "-np", str(n), "--oversubscribe"]
        if os.geteuid() == 0:
            launch.append("--allow-run-as-root")
    subprocess.run(launch + [os.path.join(a.bin, "zero-run"), plan, "--init", model,
                             "--data", data, "--steps", "2", "--log-json", log, "--quiet"],
                   check=True)
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
