#!/usr/bin/env python3
# Mixed-precision loss scaling and overflow skipping, step by step.
#
#   loss-scaling-check.py --bin BUILD/bin --work DIR
#
# 1. Forced overflow: fp16 with --initial-scale-power=40 (the scaled gradients
#    overflow f16): the logged loss_scale sequence must follow DeepSpeed's rule from
#    the logged skipped flags (hysteresis 2: 2^40, 2^40, 2^39, 2^38, ... until steps
#    stop overflowing), the first steps must be skipped, and a later one not.
# 2. Weights after only skipped steps are bit-identical to the initial ones.
# 3. All ranks skip together: on 2 and 4 ranks, stages 0-3, one rank's gradients
#    overflow (zero-run --test-overflow-rank, as if only its data did): the step is
#    skipped and the gathered weights (every rank's shard) are the initial ones,
#    while the same step without the forced overflow is not skipped.
# 4. Doubling: fp16 with a small scale and --loss-scale-window=3: the scale doubles
#    after every 3 good steps, following the rule.
# 5. A fixed --loss-scale never changes and overflowing steps are still skipped.
# 6. Skipped steps do not advance the learning-rate schedule (DeepSpeed steps its
#    scheduler only with the optimizer): the logged lr of each step is the
#    schedule at iteration k - 1, k the number of steps applied before it.
# Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402
import deepspeed_rules  # noqa: E402
from deepspeed_rules import expected_scales  # noqa: E402


class Runner:
    def __init__(self, a, model, data):
        self.a, self.model, self.data = a, model, data

    def run(self, name, flags, steps, world=1, extra=(), save=False):
        work = os.path.join(self.a.work, name)
        os.makedirs(work, exist_ok=True)
        plan = os.path.join(work, "step.zplan")
        subprocess.run([os.path.join(self.a.bin, "zero-opt"), self.model, "-o", plan,
                        "--world-size=%d" % world, "--bucket-size-mb=0.02"] + flags,
                       check=True)
        log = os.path.join(work, "log.json")
        trained = os.path.join(work, "trained.onnx")
        cmd = zero_testing.launcher(world) + [os.path.join(self.a.bin, "zero-run"), plan, "--init", self.model,
                        "--data", self.data, "--steps", str(steps), "--log-json", log,
                        "--quiet"] + list(extra)
        if save:
            cmd += ["--save-weights", trained]
        subprocess.run(cmd, check=True)
        return [json.loads(line) for line in open(log)], trained


def initializers(path):
    """The weights' bytes (comparable with ==)."""
    return {k: v.tobytes() for k, v in zero_testing.onnx_weights(path).items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model, data = zero_models.test_gpt(a.work)
    r = Runner(a, model, data)
    initial = initializers(model)
    ok = True

    def check(what, good):
        nonlocal ok
        print("%s: %s" % (what, "ok" if good else "MISMATCH"))
        ok &= bool(good)

    # 1. Forced overflow from 2^40.
    log, _ = r.run("forced", ["--precision=fp16", "--initial-scale-power=40"], 40)
    skipped = [s["skipped"] for s in log]
    scales = [s["loss_scale"] for s in log]
    want = expected_scales(skipped, 2.0 ** 40, window=1000, hysteresis=2)
    print("step  loss_scale  skipped")
    for i, (sc, sk) in enumerate(zip(scales, skipped)):
        print("%4d  2^%-8g  %s" % (i + 1, np.log2(sc), sk))
    check("scales follow DeepSpeed's rule from 2^40 with hysteresis 2", scales == want)
    check("the scale sequence starts 2^40, 2^40, 2^39, 2^38",
          scales[:4] == [2.0 ** 40, 2.0 ** 40, 2.0 ** 39, 2.0 ** 38] and all(skipped[:4]))
    check("steps stop overflowing at a smaller scale", not all(skipped))

    # 2. Only skipped steps: the weights are the initial ones, bit for bit.
    _, trained = r.run("forced-2", ["--precision=fp16", "--initial-scale-power=40"], 2,
                       save=True)
    check("weights after 2 skipped steps are bit-identical to the initial ones",
          initializers(trained) == initial)

    # 3. One rank overflows; every rank skips.
    for world in (2, 4):
        for stage in (0, 1, 2, 3):
            flags = ["--precision=bf16", "--zero-stage=%d" % stage]
            name = "one-rank-s%d-w%d" % (stage, world)
            log, trained = r.run(name, flags, 1, world,
                                 extra=["--test-overflow-rank", "%d:1" % (world - 1)],
                                 save=True)
            clean, cleanTrained = r.run(name + "-clean", flags, 1, world, save=True)
            check("stage %d, %d ranks: rank %d alone overflows, the step is skipped on "
                  "every rank (weights unchanged); without it the step trains" % (
                      stage, world, world - 1),
                  log[0]["skipped"] and initializers(trained) == initial and
                  not clean[0]["skipped"] and initializers(cleanTrained) != initial)

    # 4. Doubling after each window of good steps.
    log, _ = r.run("window", ["--precision=fp16", "--initial-scale-power=4",
                              "--loss-scale-window=3"], 12)
    skipped = [s["skipped"] for s in log]
    scales = [s["loss_scale"] for s in log]
    print("window 3 from 2^4: " + " ".join("2^%g%s" % (np.log2(s), "*" if k else "")
                                           for s, k in zip(scales, skipped)))
    check("the scale doubles after every 3 good steps", scales == expected_scales(
        skipped, 16.0, window=3, hysteresis=2) and max(scales) >= 2 ** 6)

    # 5. A fixed scale.
    log, _ = r.run("fixed", ["--precision=fp16", "--loss-scale=1099511627776"], 4)
    check("a fixed scale (2^40) never changes and its overflowing steps are skipped",
          all(s["loss_scale"] == 2.0 ** 40 and s["skipped"] for s in log))

    # 6. The schedule counts applied steps only.
    log, _ = r.run("schedule", ["--precision=fp16", "--initial-scale-power=40",
                                "--lr=1e-3", "--lr-schedule=warmup", "--warmup-type=linear",
                                "--warmup-steps=10"], 30)
    applied, want = 0, []
    for s in log:
        want.append(deepspeed_rules.lr_after_applied("warmup", applied, 1e-3, 10, "linear"))
        applied += not s["skipped"]
    got = [s["lr"] for s in log]
    print("lr: " + " ".join("%g%s" % (l, "*" if s["skipped"] else "") for l, s in zip(got, log)))
    check("overflow-skipped steps do not advance the schedule (%d of 30 skipped)" % (
        sum(s["skipped"] for s in log)),
          any(s["skipped"] for s in log) and not all(s["skipped"] for s in log) and
          max(abs(g - w) for g, w in zip(got, want)) <= 1e-12)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
