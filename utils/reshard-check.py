#!/usr/bin/env python3
# Checkpoints reshard: a run of N ranks at ZeRO stage S is stopped at step K
# (--save-checkpoint) and resumed (--resume) by a plan for M ranks at stage S'
# (other bucket sizes, another number of micro-batches). The resumed run must train
# like PyTorch on the same global batches: K steps of G = A N B samples, then steps
# of G' = A' M B from sample K G on (per-step losses and final weights within 1e-4).
# Where the world size is unchanged, it must also match a run that never stopped
# bit for bit.
#
#   reshard-check.py --bin BUILD/bin --work DIR [--steps 10 --stop 4]
#
# Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

LR, WD, BATCH, SEQ = 3e-3, 0.01, 4, 16

# name, (ranks, stage, bucket MB, micro-batches) before and after the stop.
CASES = [
    ("2w-s3-to-3w-s1", (2, 3, 0.02, 1), (3, 1, 0.05, 1)),
    ("4w-s2-to-1w-s0", (4, 2, 0.02, 1), (1, 0, 0.02, 2)),
    ("1w-s0-to-4w-s3", (1, 0, 0.02, 2), (4, 3, 0.01, 1)),
    ("3w-s2-to-2w-s2", (3, 2, 0.02, 1), (2, 2, 0.06, 1)),
    ("2w-s3-to-2w-s1", (2, 3, 0.02, 1), (2, 1, 0.05, 1)),
]


def torch_reference(data, steps, stop, g1, g2):
    """AdamW single-process: `stop` steps of g1 samples, then steps of g2."""
    model = zero_models.test_gpt_module()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    tdata = torch.from_numpy(data.astype(np.int64))
    losses, sample = [], 0
    for step in range(steps):
        g = g1 if step < stop else g2
        tokens, targets = zero_models.make_samples(tdata, sample, g, SEQ)
        sample += g
        opt.zero_grad()
        loss = model(tokens, targets)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--stop", type=int, default=4)
    p.add_argument("--rtol", type=float, default=1e-4)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model, data_path = zero_models.test_gpt(a.work)
    data = np.fromfile(data_path, dtype=np.uint8)

    def compile_plan(work, name, cfg):
        world, stage, bucket, accum = cfg
        plan = os.path.join(work, name + ".zplan")
        subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan,
                        "--optimizer=adamw", "--lr=%r" % LR, "--weight-decay=%r" % WD,
                        "--world-size=%d" % world, "--zero-stage=%d" % stage,
                        "--bucket-size-mb=%r" % bucket, "--grad-accum-steps=%d" % accum],
                       check=True)
        return plan

    def run(work, plan, world, steps, log, extra):
        out = subprocess.run(
            zero_testing.launcher(world) +
            [os.path.join(a.bin, "zero-run"), plan, "--init", model, "--data", data_path,
             "--steps", str(steps), "--log-json", os.path.join(work, log)] + extra,
            check=True, capture_output=True, text=True).stdout
        return [json.loads(line) for line in open(os.path.join(work, log))], out

    ok = True
    for name, before, after in CASES:
        work = os.path.join(a.work, name)
        os.makedirs(work, exist_ok=True)
        plan1, plan2 = compile_plan(work, "before", before), compile_plan(work, "after", after)
        ckpt = os.path.join(work, "ckpt")
        shutil.rmtree(ckpt, ignore_errors=True)
        first, _ = run(work, plan1, before[0], a.stop, "first.json",
                       ["--save-checkpoint", ckpt, "--quiet"])
        trained = os.path.join(work, "resumed.onnx")
        second, out = run(work, plan2, after[0], a.steps, "second.json",
                          ["--resume", ckpt, "--save-weights", trained])
        resumed_line = [l for l in out.splitlines() if l.startswith("resumed from")]
        g1 = before[0] * before[3] * BATCH
        g2 = after[0] * after[3] * BATCH
        losses, state = torch_reference(data, a.steps, a.stop, g1, g2)
        got = [e["loss"] for e in first + second]
        worst_loss = max(abs(z - t) / abs(t) for z, t in zip(got, losses))
        good = len(got) == a.steps and worst_loss < a.rtol
        worst_weight, compared = 0.0, 0
        for init in onnx.load(trained).graph.initializer:
            if init.name not in state:
                continue
            w = nh.to_array(init).astype(np.float64)
            want = state[init.name].astype(np.float64)
            worst_weight = max(worst_weight,
                               np.linalg.norm(w - want) / max(np.linalg.norm(want), 1e-30))
            compared += 1
        good &= compared == len({id(q) for q in zero_models.test_gpt_module().parameters()})
        good &= worst_weight < a.rtol
        note = ""
        if before[0] == after[0] and before[3] == after[3]:
            # The same world: bit for bit what a run that never stopped does.
            straight_onnx = os.path.join(work, "straight.onnx")
            straight, _ = run(work, plan1, before[0], a.steps, "straight.json",
                              ["--save-weights", straight_onnx, "--quiet"])
            same_log = [e["loss"] for e in straight] == got
            with open(straight_onnx, "rb") as f1, open(trained, "rb") as f2:
                same_weights = f1.read() == f2.read()
            note = ", never-stopped run: log %s, weights %s" % (
                "identical" if same_log else "DIFFER",
                "identical" if same_weights else "DIFFER")
            good &= same_log and same_weights
        print("%-16s G %d -> %d: worst loss error %.2e, worst weight error %.2e over %d "
              "tensors (rtol %g)%s: %s" % (name, g1, g2, worst_loss, worst_weight, compared,
                                           a.rtol, note, "ok" if good else "MISMATCH"))
        # Each rank reads its share, not the checkpoint: rank 0's bytes, of all.
        read = [int(w) for w in resumed_line[0].split(" read ")[1].split()[:3:2]] \
            if resumed_line else [0, 0]
        share = read[0] < read[1] or after[0] == 1
        print("  %s%s" % (resumed_line[0] if resumed_line else "no 'resumed from' line",
                          "" if share else ": rank 0 read all of it"))
        ok &= good and bool(resumed_line) and share
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
