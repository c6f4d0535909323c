#!/usr/bin/env python3
# Checkpoints resume bit-exactly: a run of N steps straight and the same run stopped
# at step K (--save-checkpoint) and resumed (--resume) give bit-identical per-step
# losses (and loss scales, learning rates) and bit-identical saved weights.
#
#   resume-check.py --bin BUILD/bin --work DIR [--steps 12 --stop 5]
#
# Cases: stages 0-3 on 1, 2 and 4 ranks (mpirun), fp32 and bf16, AdamW and SGD, with
# gradient accumulation and a learning-rate schedule, with and without --shuffle;
# fp16 with a loss scaler stopped mid-hysteresis (one overflow seen, the counter at
# 1). Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
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
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--stop", type=int, default=5)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model, data = zero_models.test_gpt(a.work)
    recipe = ["--grad-accum-steps=2", "--lr-schedule=warmup-decay", "--warmup-steps=4",
              "--total-steps=%d" % a.steps, "--bucket-size-mb=0.02"]
    cases = []
    for world in (1, 2, 4):
        for stage in (0, 1, 2, 3):
            cases.append(("s%d-w%d" % (stage, world), world,
                          ["--zero-stage=%d" % stage, "--world-size=%d" % world] + recipe,
                          ["--shuffle", "--seed", "3"] if (stage + world) % 2 else []))
    cases += [
        ("bf16-adamw-s3-w2", 2, ["--precision=bf16", "--zero-stage=3", "--world-size=2"] +
         recipe, ["--shuffle", "--seed", "5"]),
        ("bf16-sgd-s1-w2", 2, ["--precision=bf16", "--optimizer=sgd", "--momentum=0.9",
                               "--lr=0.1", "--zero-stage=1", "--world-size=2"] + recipe, []),
        ("sgd-s2-w4", 4, ["--optimizer=sgd", "--momentum=0.9", "--lr=0.1",
                          "--zero-stage=2", "--world-size=4"] + recipe, []),
        # fp16 from 2^40: step 1 overflows and uses up the hysteresis counter; the
        # checkpoint after it keeps the counter at 1, and the resumed run must halve
        # the scale at its first overflow.
        ("fp16-hysteresis-s2-w2", 2, ["--precision=fp16", "--initial-scale-power=40",
                                      "--zero-stage=2", "--world-size=2"], []),
    ]
    ok = True
    for name, world, flags, run_flags in cases:
        work = os.path.join(a.work, name)
        os.makedirs(work, exist_ok=True)
        plan = os.path.join(work, "step.zplan")
        subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan] + flags,
                       check=True)
        launch = zero_testing.launcher(world)
        stop = 1 if name.startswith("fp16") else a.stop

        def run(steps, log, extra):
            subprocess.run(launch + [os.path.join(a.bin, "zero-run"), plan, "--init", model,
                                     "--data", data, "--steps", str(steps), "--log-json",
                                     os.path.join(work, log), "--quiet"] + run_flags + extra,
                           check=True)
            return [json.loads(line) for line in open(os.path.join(work, log))]

        ckpt = os.path.join(work, "ckpt")
        straight = run(a.steps, "straight.json",
                       ["--save-weights", os.path.join(work, "straight.onnx")])
        first = run(stop, "first.json", ["--save-checkpoint", ckpt])
        second = run(a.steps, "second.json",
                     ["--resume", ckpt, "--save-weights", os.path.join(work, "resumed.onnx")])
        keys = ("loss", "loss_scale", "skipped", "lr")
        got = [[e.get(k) for k in keys] for e in first + second]
        want = [[e.get(k) for k in keys] for e in straight]
        same_log = got == want
        with open(os.path.join(work, "straight.onnx"), "rb") as f1, \
                open(os.path.join(work, "resumed.onnx"), "rb") as f2:
            same_weights = f1.read() == f2.read()
        note = ""
        if name.startswith("fp16"):
            with open(os.path.join(ckpt, "step-1", "manifest.json")) as f:
                counter = int(json.load(f)["loss_scaler"]["hysteresis_counter"])
            note = ", checkpoint's hysteresis counter %d" % counter
            same_log &= counter == 1 and straight[0]["skipped"]
        good = same_log and same_weights
        print("%-24s %d + %d steps: log %s, weights %s%s: %s" % (
            name, stop, a.steps - stop, "identical" if same_log else "DIFFER",
            "identical" if same_weights else "DIFFER", note, "ok" if good else "MISMATCH"))
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
