#!/usr/bin/env python3
# Trains one model for K steps in zero-run and in PyTorch (CPU) from
# the same initial weights on the same batches (docs/Design.md's data order), and checks
# that per-step losses and final weights agree.
#
#   train-parity.py --bin BUILD/bin --work DIR --model gpt|mlp|llama
#                   --optimizer adamw|sgd [--steps 20] [--rtol 1e-4]
#                   [--world-size N[,N...] --zero-stage S[,S...]
#                   --bucket-size-mb M --persistence-threshold E]
#                   [--grad-accum-steps A] [--clip-grad-norm C]
#                   [--lr-schedule warmup|warmup-decay|
#                   warmup-cosine --warmup-steps W --warmup-type log|linear
#                   --total-steps T --warmup-min-lr L --cos-min-ratio R
#                   --warmup-min-ratio R]
#
# Clipping and schedules follow torch.nn.utils.clip_grad_norm_ and DeepSpeed's
# WarmupLR / WarmupDecayLR / WarmupCosineLR formulas, written out below; the logged
# lr must be within 1e-9 of the formula and grad_norm within --rtol of PyTorch's
# total norm.
#
# With N ranks, zero-run runs under `mpirun -np N` (or, --launcher threads, as N
# threads of one process) with micro-batch B each and A micro-batches per step
# (gradient accumulation), and PyTorch trains single-process on the global batch
# A*N*B: ZeRO must give the same training, to float rounding.
#
# Lists of world sizes and stages run every combination from one export (one
# PyTorch reference per world size). The model is exported with its zero.trainable
# metadata (utils/zero_export.py), so buffers (masks, rotary tables) are not trained.
#
# Weights are compared per tensor: |w - w_torch| / |w_torch| (Frobenius norms), so a
# tensor passes when it is the same tensor to float rounding; initializers that are
# not trained must come back bit-identical. Exit 1 on a mismatch.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import copy
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deepspeed_rules  # noqa: E402
import zero_models  # noqa: E402
import zero_testing  # noqa: E402


def build_model(name, vocab, seq, gelu="none", hidden=32, heads=4):
    torch.manual_seed(0)
    if name == "mlp":
        return zero_models.MLP(vocab=vocab, hidden=24)
    return zero_models.build(name, layers=2, hidden=hidden, heads=heads, vocab=vocab, seq=seq,
                             gelu=gelu)


def scheduled_lr(a, lr, applied):
    """The rate --lr-schedule and its flags give the step after `applied` ones."""
    return deepspeed_rules.lr_after_applied(
        a.lr_schedule, applied, lr, a.warmup_steps, a.warmup_type, a.total_steps,
        a.warmup_min_lr, None, a.cos_min_ratio, a.warmup_min_ratio)


def torch_reference(a, model, optimizer, lr, momentum, wd, data, steps, global_batch, seq):
    """Trains `model` (in place) single-process on the global batch; per-step losses,
    learning rates and gradient norms (before clipping)."""
    params = list(model.parameters())
    if optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=wd)
    tdata = torch.from_numpy(data.astype(np.int64))
    losses, lrs, norms = [], [], []
    model.train()
    for step in range(steps):
        tokens, targets = zero_models.make_batch(tdata, step, global_batch, seq)
        if a.lr_schedule != "constant":
            step_lr = scheduled_lr(a, lr, step)  # no step is skipped in f32
            for group in opt.param_groups:
                group["lr"] = step_lr
            lrs.append(step_lr)
        opt.zero_grad()
        loss = model(tokens, targets)
        loss.backward()
        if a.clip_grad_norm > 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(params, a.clip_grad_norm)))
        opt.step()
        losses.append(loss.item())
    return losses, lrs, norms


def compare(a, model, trainable, exported, log, trained, reference, stage, world):
    """Losses, learning rates, gradient norms and trained weights against PyTorch's;
    initializers outside the trainable set (buffers) must come back bit-identical.
    True when all agree."""
    torch_losses, torch_lrs, torch_norms = reference
    entries = [json.loads(line) for line in open(log)]
    zero_losses = [e["loss"] for e in entries]
    ok = True
    if torch_lrs:
        worst_lr = max(abs(e.get("lr", float("nan")) - l) for e, l in zip(entries, torch_lrs))
        good = worst_lr <= 1e-9
        print("learning rates: worst difference from the formula %.2e (limit 1e-9): %s"
              % (worst_lr, "ok" if good else "MISMATCH"))
        ok &= good
    if torch_norms:
        worst_norm = max(abs(e.get("grad_norm", float("nan")) - n) / n
                         for e, n in zip(entries, torch_norms))
        clipped = sum(n > a.clip_grad_norm for n in torch_norms)
        good = worst_norm < a.rtol
        print("gradient norms: worst relative error %.2e (rtol %g); %d of %d steps clipped: %s"
              % (worst_norm, a.rtol, clipped, len(torch_norms), "ok" if good else "MISMATCH"))
        ok &= good
    worst_loss = 0.0
    print("%s + %s, %d steps, ZeRO stage %d on %d ranks, %d micro-batches per step" % (
        a.model, a.optimizer, a.steps, stage, world, a.grad_accum_steps))
    print("step  zero-run loss   PyTorch loss   rel. error")
    for i, (z, t) in enumerate(zip(zero_losses, torch_losses)):
        rel = abs(z - t) / abs(t)
        worst_loss = max(worst_loss, rel)
        print("%4d  %13.8f  %13.8f   %.2e" % (i + 1, z, t, rel))
    if len(zero_losses) != a.steps or worst_loss >= a.rtol:
        ok = False

    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    before = {t.name: t for t in onnx.load(exported).graph.initializer}
    worst_weight = 0.0
    compared = buffers = 0
    for init in onnx.load(trained).graph.initializer:
        if init.name not in trainable:
            # Not trained: exactly the exported bytes.
            same = nh.to_array(init).tobytes() == nh.to_array(before[init.name]).tobytes()
            buffers += 1
            if not same:
                print("initializer %s is not trained but changed" % init.name)
                ok = False
            continue
        got = nh.to_array(init).astype(np.float64)
        want = state[init.name].astype(np.float64)
        rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
        worst_weight = max(worst_weight, rel)
        compared += 1
        if rel >= a.rtol:
            print("weight %s differs: relative error %.2e" % (init.name, rel))
            ok = False
    n_params = len({id(p) for p in model.parameters()})
    if compared != n_params:
        print("compared %d weights, the model has %d parameters" % (compared, n_params))
        ok = False
    print("stage %d, %d ranks: worst loss error %.2e, worst weight error %.2e over %d "
          "tensors (rtol %g), %d untrained initializers compared bit for bit: %s"
          % (stage, world, worst_loss, worst_weight, compared, a.rtol, buffers,
             "ok" if ok else "MISMATCH"))
    return ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--zero-run", help="the zero-run to test (default: BIN/zero-run)")
    p.add_argument("--work", required=True)
    p.add_argument("--model", choices=zero_models.MODELS, required=True)
    p.add_argument("--optimizer", choices=["adamw", "sgd"], required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--world-size", type=zero_testing.int_list, default=[1],
                   help="ranks, or a comma-separated list (each trained and compared)")
    p.add_argument("--zero-stage", type=zero_testing.int_list, default=[0],
                   help="ZeRO stage, or a comma-separated list")
    # Small buckets by default, so that even these small models have several.
    p.add_argument("--bucket-size-mb", type=float, default=0.02)
    p.add_argument("--persistence-threshold", type=int, default=0)
    p.add_argument("--prefetch-buckets", type=int, default=2)
    p.add_argument("--max-live-mb", type=float, default=0.0)
    p.add_argument("--no-overlap", action="store_true")
    p.add_argument("--device", help="zero-run --device (default: zero-run's choice)")
    zero_testing.add_launcher_flag(p)
    p.add_argument("--grad-accum-steps", type=int, default=1)
    p.add_argument("--clip-grad-norm", type=float, default=0.0)
    p.add_argument("--lr-schedule", default="constant",
                   choices=["constant", "warmup", "warmup-decay", "warmup-cosine"])
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--warmup-type", choices=["log", "linear"], default="log")
    p.add_argument("--total-steps", type=int, default=20)
    p.add_argument("--warmup-min-lr", type=float, default=0.0)
    p.add_argument("--cos-min-ratio", type=float, default=0.0001)
    p.add_argument("--warmup-min-ratio", type=float, default=0.0)
    p.add_argument("--seq", type=int, default=16, help="the sequence length")
    p.add_argument("--hidden", type=int, default=32, help="the GPT's width")
    p.add_argument("--heads", type=int, default=4, help="the GPT's attention heads")
    p.add_argument("--gelu", choices=["none", "tanh"], default="none",
                   help="the GPT's GELU: the exact form, or GPT-2's tanh form")
    p.add_argument("--batch", type=int, default=4, help="each rank's micro-batch")
    a = p.parse_args()
    zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    os.makedirs(a.work, exist_ok=True)
    vocab, seq, batch = 64, a.seq, a.batch
    lr = a.lr if a.lr is not None else (3e-3 if a.optimizer == "adamw" else 0.1)
    wd = a.weight_decay if a.weight_decay is not None else (0.01 if a.optimizer == "adamw" else 0.0)

    # A token file: u8 is enough for this vocabulary; varied but reproducible.
    rng = np.random.RandomState(1)
    data = rng.randint(0, vocab, size=4096).astype(np.uint8)
    data_path = os.path.join(a.work, "tokens.u8")
    data.tofile(data_path)

    initial = build_model(a.model, vocab, seq, a.gelu, a.hidden, a.heads)
    onnx_path = os.path.join(a.work, "model.onnx")
    trainable = set(zero_models.export(initial, onnx_path, batch, seq, vocab))

    ok = True
    for world in a.world_size:
        # PyTorch on the same batches: the global batch of `world` ranks.
        model = copy.deepcopy(initial)
        reference = torch_reference(a, model, a.optimizer, lr, a.momentum, wd, data,
                                    a.steps, a.grad_accum_steps * world * batch, seq)
        for stage in a.zero_stage:
            work = os.path.join(a.work, "s%d-w%d" % (stage, world))
            os.makedirs(work, exist_ok=True)
            plan = os.path.join(work, "step.zplan")
            flags = ["--optimizer=" + a.optimizer, "--lr=%r" % lr, "--weight-decay=%r" % wd,
                     "--world-size=%d" % world, "--zero-stage=%d" % stage,
                     "--bucket-size-mb=%r" % a.bucket_size_mb,
                     "--persistence-threshold=%d" % a.persistence_threshold,
                     "--prefetch-buckets=%d" % a.prefetch_buckets,
                     "--max-live-mb=%r" % a.max_live_mb]
            if a.no_overlap:
                flags.append("--no-overlap")
            if a.clip_grad_norm > 0:
                flags.append("--clip-grad-norm=%r" % a.clip_grad_norm)
            if a.grad_accum_steps > 1:
                flags.append("--grad-accum-steps=%d" % a.grad_accum_steps)
            if a.lr_schedule != "constant":
                # Each schedule with the parameters of its DeepSpeed class.
                flags += ["--lr-schedule=" + a.lr_schedule,
                          "--warmup-steps=%d" % a.warmup_steps,
                          "--warmup-type=" + a.warmup_type]
                if a.lr_schedule != "warmup":
                    flags.append("--total-steps=%d" % a.total_steps)
                if a.lr_schedule == "warmup-cosine":
                    flags += ["--cos-min-ratio=%r" % a.cos_min_ratio,
                              "--warmup-min-ratio=%r" % a.warmup_min_ratio]
                else:
                    flags.append("--warmup-min-lr=%r" % a.warmup_min_lr)
            if a.optimizer == "sgd":
                flags.append("--momentum=%r" % a.momentum)
            subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "-o", plan] + flags,
                           check=True)
            log = os.path.join(work, "log.json")
            trained = os.path.join(work, "trained.onnx")
            launch = zero_testing.launcher(world, a.launcher)
            subprocess.run(launch + [zero_run, plan, "--init", onnx_path,
                                     "--data", data_path, "--steps", str(a.steps),
                                     "--log-json", log, "--save-weights", trained, "--quiet"]
                           + (["--device", a.device] if a.device else []), check=True)
            ok &= compare(a, model, trainable, onnx_path, log, trained, reference,
                          stage, world)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
