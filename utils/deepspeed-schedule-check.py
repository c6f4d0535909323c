#!/usr/bin/env python3
"""The learning rate of every step zero-run takes equals DeepSpeed's own.

For each scheduler a DeepSpeed config can name (WarmupLR, WarmupDecayLR,
WarmupCosineLR; log and linear warm-ups; parameters given and left to DeepSpeed's
defaults), zero-opt compiles the config, zero-run trains with it and logs the rate
of each step; the reference is the `deepspeed` package from PyPI
(utils/requirements.txt), its lr_schedules classes driven the way its engine
drives them (deepspeed/runtime/engine.py: the scheduler is built on the optimizer
from the config's params, and stepped after each optimizer step that was not
skipped for overflow). fp16 runs skip steps (a dynamic scale that starts too high,
and a rank's forced overflow); one run is stopped and resumed from a checkpoint.
The rates must be equal, bit for bit.

    <python-env>/bin/python utils/deepspeed-schedule-check.py --bin build/bin --work DIR

Exit 1 on a difference.
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from deepspeed.runtime import lr_schedules

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, optimizer lr, scheduler, precision, extra zero-run flags)
CASES = [
    ("warmup-log", 3e-3, {"type": "WarmupLR", "params": {
        "warmup_min_lr": 1e-4, "warmup_max_lr": 2e-3, "warmup_num_steps": 6}}, "fp32", []),
    # warmup_max_lr left out: WarmupLR takes the optimizer's rate.
    ("warmup-linear-default-max", 3e-3, {"type": "WarmupLR", "params": {
        "warmup_num_steps": 5, "warmup_type": "linear"}}, "bf16", []),
    ("decay-linear-fp16", 3e-3, {"type": "WarmupDecayLR", "params": {
        "warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 4,
        "warmup_type": "linear", "total_num_steps": 12}}, "fp16", ["--test-overflow-rank", "0:7"]),
    # warmup_max_lr left out: WarmupDecayLR's own default (0.001), not the optimizer's.
    ("decay-log-default-max", 3e-3, {"type": "WarmupDecayLR", "params": {
        "warmup_num_steps": 3, "total_num_steps": 10}}, "fp32", []),
    ("cosine-log-fp16", 2e-3, {"type": "WarmupCosineLR", "params": {
        "total_num_steps": 12, "warmup_num_steps": 4, "warmup_min_ratio": 0.1,
        "cos_min_ratio": 0.05}}, "fp16", ["--test-overflow-rank", "0:9"]),
    ("cosine-linear", 2e-3, {"type": "WarmupCosineLR", "params": {
        "total_num_steps": 9, "warmup_num_steps": 3, "warmup_type": "linear"}}, "fp32", []),
]
STEPS = 16


def config(lr, scheduler, precision):
    c = {"train_micro_batch_size_per_gpu": 2,
         "optimizer": {"type": "AdamW", "params": {"lr": lr}},
         "scheduler": scheduler}
    if precision == "bf16":
        c["bf16"] = {"enabled": True}
    if precision == "fp16":
        # 2^18 overflows the first steps; hysteresis 1 halves at once.
        c["fp16"] = {"enabled": True, "initial_scale_power": 18, "hysteresis": 1}
    return c


def deepspeed_rates(lr, scheduler, skipped):
    """The rate DeepSpeed's engine gives each step, given which steps overflowed."""
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([param], lr=lr)
    cls = getattr(lr_schedules, scheduler["type"])
    sched = cls(optimizer, **scheduler["params"])
    rates = []
    for overflow in skipped:
        rates.append(optimizer.param_groups[0]["lr"])
        if not overflow:
            sched.step()
    return rates


def run(bin_dir, args, **kw):
    subprocess.run(args, check=True, **kw)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    zero_opt, zero_run = (os.path.join(a.bin, t) for t in ("zero-opt", "zero-run"))
    model = os.path.join(a.work, "gpt.onnx")
    subprocess.run([sys.executable, os.path.join(HERE, "make_gpt.py"), model, "--layers", "1",
                    "--hidden", "32", "--seq", "16", "--vocab", "256", "--batch", "2"],
                   check=True, stderr=subprocess.DEVNULL)
    data = os.path.join(HERE, "..", "LICENSE")
    failed = False
    for name, lr, scheduler, precision, extra in CASES:
        work = os.path.join(a.work, name)
        os.makedirs(work, exist_ok=True)
        cfg, plan, log = (os.path.join(work, f) for f in ("ds.json", "step.zplan", "log.json"))
        with open(cfg, "w") as f:
            json.dump(config(lr, scheduler, precision), f)
        run(a.bin, [zero_opt, model, "--deepspeed", cfg, "-o", plan], stderr=subprocess.DEVNULL)
        if name == "decay-linear-fp16":
            # Stopped after 7 steps and resumed: the schedule's position carries over.
            ck = os.path.join(work, "ck")
            run(a.bin, [zero_run, plan, "--init", model, "--data", data, "--steps", "7",
                        "--save-checkpoint", ck, "--log-json", log + ".first", "--quiet"]
                + extra)
            run(a.bin, [zero_run, plan, "--init", model, "--data", data, "--steps", str(STEPS),
                        "--resume", ck, "--log-json", log + ".rest", "--quiet"])
            entries = [json.loads(l) for f in (log + ".first", log + ".rest") for l in open(f)]
        else:
            run(a.bin, [zero_run, plan, "--init", model, "--data", data, "--steps", str(STEPS),
                        "--log-json", log, "--quiet"] + extra)
            entries = [json.loads(l) for l in open(log)]
        skipped = [e.get("skipped", False) for e in entries]
        got = [e["lr"] for e in entries]
        want = deepspeed_rates(lr, scheduler, skipped)
        ok = len(got) == STEPS and got == want
        failed |= not ok
        print("%-28s %s  %d steps, %d skipped" % (name, "ok  " if ok else "FAIL", len(got),
                                                 sum(skipped)))
        if not ok:
            for step, (g, w, s) in enumerate(zip(got, want, skipped)):
                print("  step %2d %s zero-run %.17g DeepSpeed %.17g%s" % (
                    step + 1, "skipped" if s else "       ", g, w, "" if g == w else "  <--"))
    if failed:
        print("learning rates differ from DeepSpeed's")
        return 1
    print("every step's learning rate equals DeepSpeed's lr_schedules (deepspeed %s)" %
          __import__("deepspeed").__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
