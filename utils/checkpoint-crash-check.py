#!/usr/bin/env python3
# A run that checkpoints every step is killed (SIGKILL) at random moments; each
# time, the checkpoint `latest` names must load and a resumed run must finish.
#
#   checkpoint-crash-check.py --bin BUILD/bin --work DIR [--kills 5 --seed 0]
#
# The ranks are threads of one zero-run process, so one SIGKILL stops all of them
# at once, at any point of writing a rank file, the manifest or `latest`.
# Exit 1 on a failure. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--kills", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = random.Random(a.seed)
    model, data = zero_models.test_gpt(a.work)
    plan = os.path.join(a.work, "step.zplan")
    subprocess.run([os.path.join(a.bin, "zero-opt"), model, "--zero-stage=3",
                    "--world-size=2", "--bucket-size-mb=0.02", "-o", plan], check=True)
    ckpt = os.path.join(a.work, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)  # the first run starts fresh
    zero_run = os.path.join(a.bin, "zero-run")
    base = [zero_run, plan, "--init", model, "--data", data, "--quiet"]
    ok = True
    for kill in range(a.kills):
        resume = ["--resume", ckpt] if os.path.exists(os.path.join(ckpt, "latest")) else []
        proc = subprocess.Popen(base + ["--steps", "100000", "--save-checkpoint", ckpt,
                                        "--checkpoint-every", "1", "--keep-checkpoints", "3"]
                                + resume)
        delay = rng.uniform(0.3, 1.5)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        latest = open(os.path.join(ckpt, "latest")).read().strip()
        step = int(json.load(open(os.path.join(ckpt, latest, "manifest.json")))["step"])
        # The checkpoint loads and training goes on from it.
        r = subprocess.run(base + ["--steps", str(step + 2), "--resume", ckpt],
                           capture_output=True, text=True)
        good = r.returncode == 0
        print("kill %d after %.2f s: latest is %s (step %d); resuming 2 more steps: %s" % (
            kill + 1, delay, latest, step, "ok" if good else "FAILED\n" + r.stderr))
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
