#!/usr/bin/env python3
# Mixed-precision training against a PyTorch reference of the same recipe.
#
#   mixed-precision-parity.py --bin BUILD/bin --work DIR [--steps 30]
#       [--precision bf16,fp16] [--zero-stage 0,1,2,3] [--world-size 1,2,4]
#       [--zero-run ZERO_RUN --device cuda --launcher threads]
#       [--grad-accum-steps A --clip-grad-norm C --lr-schedule KIND]
#
# The test GPT (utils/zero_models.py) trains 30 AdamW steps in zero-run, compiled
# with zero-opt --precision, and in PyTorch (the tests' environment's torch, CPU) with the recipe
# written out below: 16-bit weights cast from an f32 master copy; matrix products on
# 16-bit operands with f32 results rounded to 16 bits; the elementwise ops between
# them on 16-bit values (computed in f32, rounded once); f32 LayerNorm, softmax and
# loss; gradients rounded to 16 bits wherever the value they belong to is 16-bit;
# DeepSpeed's loss scaling for fp16; AdamW in f32 on the master copy. 16-bit values
# are held as f32 tensors rounded to bf16/f16 (CPU PyTorch 1.13 has no f16 matmul).
#
# Checks, for every precision, stage and world size:
#   - per-step loss within --rtol (1e-2) relative of the reference's;
#   - per-step loss within 3% of zero-run's own fp32 run (same stage, world);
# and once: master weights are real (LayerNorm weights starting at 1.0 move under
# AdamW with lr 1e-3, which a 16-bit-only update would round back to 1.0).
# Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
import argparse
import copy
import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deepspeed_rules  # noqa: E402
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class Round(torch.autograd.Function):
    """A value stored in 16 bits: rounded forward, and its gradient rounded too."""

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = dtype
        return x.to(dtype).to(torch.float32)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype).to(torch.float32), None


class Recipe:
    """The forward of zero_models.GPT as zero-opt's autocast compiles it."""

    def __init__(self, dtype, gelu="none"):
        self.dtype = dtype
        self.approximate = gelu

    def r(self, x):
        return Round.apply(x, self.dtype)

    def const(self, c):  # a scalar constant meeting a 16-bit tensor takes its type
        return float(torch.tensor(c).to(self.dtype).float())

    def linear(self, x16, w16, b16):
        y = self.r(torch.matmul(x16, w16.t()))
        return y if b16 is None else self.r(y + b16)

    def layer_norm(self, x16, w16, b16):  # f32, on the f32 values of its operands
        return F.layer_norm(x16, x16.shape[-1:], w16, b16, 1e-5)

    def gelu(self, x16):  # nn.GELU as exported: x * (1 + erf(x / sqrt 2)) * 0.5
        if self.approximate == "tanh":  # one op (compute.gelu_tanh), rounded once
            return self.r(F.gelu(x16, approximate="tanh"))
        t = self.r(x16 / self.const(math.sqrt(2.0)))
        t = self.r(torch.erf(t))
        t = self.r(t + self.const(1.0))
        t = self.r(x16 * t)
        return self.r(t * self.const(0.5))

    def forward(self, model, p16, tokens, targets):
        B, T = tokens.shape
        x = self.r(p16["wte.weight"][tokens] + p16["wpe.weight"][:T])
        for i, blk in enumerate(model.blocks):
            q = lambda n: p16["blocks.%d.%s" % (i, n)]  # noqa: E731
            C = x.shape[-1]
            h = self.layer_norm(x, q("ln1.weight"), q("ln1.bias"))
            qkv = self.linear(self.r(h), q("qkv.weight"), q("qkv.bias"))
            qq, kk, vv = qkv.split(C, dim=2)
            hd = C // blk.heads
            qq = qq.reshape(B, T, blk.heads, hd).transpose(1, 2)
            kk = kk.reshape(B, T, blk.heads, hd).transpose(1, 2)
            vv = vv.reshape(B, T, blk.heads, hd).transpose(1, 2)
            att = self.r(torch.matmul(qq, kk.transpose(-2, -1)))
            att = self.r(att * self.const(1.0 / math.sqrt(hd)))
            att = att + blk.mask[:T, :T]  # f32 mask: the sum is f32
            att = self.r(F.softmax(att, dim=-1))
            y = self.r(torch.matmul(att, vv)).transpose(1, 2).reshape(B, T, C)
            x = self.r(x + self.linear(y, q("proj.weight"), q("proj.bias")))
            h = self.layer_norm(x, q("ln2.weight"), q("ln2.bias"))
            f = self.gelu(self.linear(self.r(h), q("fc.weight"), q("fc.bias")))
            x = self.r(x + self.linear(f, q("fc_out.weight"), q("fc_out.bias")))
        h = self.layer_norm(x, p16["ln_f.weight"], p16["ln_f.bias"])
        logits = self.linear(self.r(h), p16["wte.weight"], None)  # tied head
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def reference(a, model, precision, lr, wd, data, steps, global_batch, seq):
    """Per-step losses, skipped flags, learning rates and gradient norms of the
    recipe, single process on the global batch: the unscaled gradients clipped as
    torch.nn.utils.clip_grad_norm_ does (--clip-grad-norm), the learning rate from
    the schedule at the number of steps not skipped so far (--lr-schedule)."""
    recipe = Recipe(DTYPES[precision], a.gelu)
    names = [n for n, _ in model.named_parameters()]
    master = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(list(master.values()), lr=lr, weight_decay=wd)
    if precision == "fp16":
        scaler = deepspeed_rules.DynamicLossScaler(2.0 ** 16)
    else:
        scaler = deepspeed_rules.DynamicLossScaler(1.0, dynamic=False)
    tdata = torch.from_numpy(data.astype(np.int64))
    losses, skipped, lrs, norms = [], [], [], []
    applied = 0
    for step in range(steps):
        tokens, targets = zero_models.make_batch(tdata, step, global_batch, seq)
        p16 = {n: master[n].to(recipe.dtype).float().requires_grad_() for n in names}
        loss = recipe.forward(model, p16, tokens, targets)
        (loss * scaler.scale).backward()
        grads = {n: p16[n].grad.to(recipe.dtype).float() / scaler.scale for n in names}
        overflow = any(not torch.isfinite(g).all() for g in grads.values())
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())))
        if a.lr_schedule != "constant":
            step_lr = deepspeed_rules.lr_after_applied(a.lr_schedule, applied, lr, 5,
                                                       "linear", steps)
            for group in opt.param_groups:
                group["lr"] = step_lr
            lrs.append(step_lr)
        if not overflow:
            coef = min(1.0, a.clip_grad_norm / (norm + 1e-6)) if a.clip_grad_norm else 1.0
            for n in names:
                master[n].grad = grads[n] * coef
            opt.step()
            applied += 1
        losses.append(loss.item())
        skipped.append(overflow)
        norms.append(norm)
        scaler.update(overflow)
    return losses, skipped, lrs, norms


def run_zero(a, onnx_path, data_path, work, flags, world, steps, save=None):
    os.makedirs(work, exist_ok=True)
    plan = os.path.join(work, "step.zplan")
    subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "-o", plan] + flags,
                   check=True)
    log = os.path.join(work, "log.json")
    launch = zero_testing.launcher(world, a.launcher)
    cmd = launch + [a.zero_run, plan, "--init", onnx_path, "--data", data_path,
                    "--steps", str(steps), "--log-json", log, "--quiet"]
    if a.device:
        cmd += ["--device", a.device]
    if save:
        cmd += ["--save-weights", save]
    subprocess.run(cmd, check=True)
    return [json.loads(line) for line in open(log)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--zero-run", help="the zero-run to test (default: BIN/zero-run)")
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--fp32-rtol", type=float, default=0.03)
    p.add_argument("--precision", default="bf16,fp16")
    p.add_argument("--zero-stage", type=zero_testing.int_list, default=[0, 1, 2, 3])
    p.add_argument("--world-size", type=zero_testing.int_list, default=[1, 2, 4])
    p.add_argument("--device", help="zero-run --device (default: zero-run's choice)")
    zero_testing.add_launcher_flag(p)
    p.add_argument("--skip-master-check", action="store_true",
                   help="only the parity runs")
    p.add_argument("--gelu", choices=["none", "tanh"], default="none",
                   help="the GPT's GELU: the exact form, or GPT-2's tanh form")
    p.add_argument("--grad-accum-steps", type=int, default=1)
    p.add_argument("--clip-grad-norm", type=float, default=0.0)
    p.add_argument("--lr-schedule", default="constant",
                   choices=["constant", "warmup", "warmup-decay", "warmup-cosine"],
                   help="with 5 linear warm-up steps over --steps")
    a = p.parse_args()
    a.zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    os.makedirs(a.work, exist_ok=True)
    vocab, seq, batch, lr, wd = 64, 16, 4, 3e-3, 0.01

    rng = np.random.RandomState(1)
    data = rng.randint(0, vocab, size=4096).astype(np.uint8)
    data_path = os.path.join(a.work, "tokens.u8")
    data.tofile(data_path)
    torch.manual_seed(0)
    initial = zero_models.build("gpt", layers=2, hidden=32, heads=4, vocab=vocab, seq=seq,
                                gelu=a.gelu)
    onnx_path = os.path.join(a.work, "model.onnx")
    zero_models.export(initial, onnx_path, batch, seq, vocab)
    common = ["--optimizer=adamw", "--lr=%r" % lr, "--weight-decay=%r" % wd,
              "--bucket-size-mb=0.02"]
    if a.grad_accum_steps > 1:
        common.append("--grad-accum-steps=%d" % a.grad_accum_steps)
    if a.clip_grad_norm > 0:
        common.append("--clip-grad-norm=%r" % a.clip_grad_norm)
    if a.lr_schedule != "constant":
        common += ["--lr-schedule=" + a.lr_schedule, "--warmup-steps=5",
                   "--warmup-type=linear"]
        if a.lr_schedule != "warmup":
            common.append("--total-steps=%d" % a.steps)

    ok = True
    for world in a.world_size:
        for precision in a.precision.split(","):
            ref, ref_skipped, ref_lrs, ref_norms = reference(
                a, copy.deepcopy(initial), precision, lr, wd, data, a.steps,
                a.grad_accum_steps * world * batch, seq)
            for stage in a.zero_stage:
                flags = common + ["--world-size=%d" % world, "--zero-stage=%d" % stage]
                work = os.path.join(a.work, "%s-s%d-w%d" % (precision, stage, world))
                fp32 = run_zero(a, onnx_path, data_path, work + "-fp32", flags, world,
                                a.steps)
                got = run_zero(a, onnx_path, data_path, work,
                               flags + ["--precision=" + precision], world, a.steps)
                worst_ref = worst_fp32 = 0.0
                print("%s, ZeRO stage %d on %d ranks, %d steps" % (
                    precision, stage, world, a.steps))
                print("step  zero-run loss  reference     fp32 zero-run  skipped (zero-run/ref)")
                for i, (g, r, f) in enumerate(zip(got, ref, fp32)):
                    worst_ref = max(worst_ref, abs(g["loss"] - r) / abs(r))
                    worst_fp32 = max(worst_fp32, abs(g["loss"] - f["loss"]) / abs(f["loss"]))
                    print("%4d  %12.7f  %12.7f  %12.7f   %s/%s" % (
                        i + 1, g["loss"], r, f["loss"], g["skipped"], ref_skipped[i]))
                good = (len(got) == a.steps and worst_ref < a.rtol and
                        worst_fp32 < a.fp32_rtol)
                if ref_lrs: # the same skipped steps give the same rates, exactly
                    same = [g["skipped"] for g in got] == ref_skipped
                    worst_lr = max(abs(g["lr"] - l) for g, l in zip(got, ref_lrs))
                    print("learning rates: worst difference %.2e (limit 1e-9)" % worst_lr)
                    good &= same and worst_lr <= 1e-9
                if a.clip_grad_norm > 0:
                    worst_norm = max(abs(g["grad_norm"] - n) / n for g, n, k in
                                     zip(got, ref_norms, ref_skipped) if not k)
                    print("gradient norms: worst relative error %.2e (rtol %g)" % (
                        worst_norm, a.rtol))
                    good &= worst_norm < a.rtol
                print("%s stage %d, %d ranks: worst loss error %.2e vs the reference "
                      "(rtol %g), %.2e vs fp32 (rtol %g): %s" % (
                          precision, stage, world, worst_ref, a.rtol, worst_fp32,
                          a.fp32_rtol, "ok" if good else "MISMATCH"))
                ok &= good

    if a.skip_master_check:
        return 0 if ok else 1
    # Master weights are real: LayerNorm weights at 1.0 move by lr-sized steps that
    # bf16 (spacing 2^-8 above 1, 2^-9 below) cannot hold.
    ones = copy.deepcopy(initial)
    with torch.no_grad():
        for m in ones.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.fill_(1.0)
    ones_path = os.path.join(a.work, "ln-ones.onnx")
    zero_models.export(ones, ones_path, batch, seq, vocab)
    trained = os.path.join(a.work, "ln-ones-trained.onnx")
    run_zero(a, ones_path, data_path, os.path.join(a.work, "ln-ones"),
             ["--optimizer=adamw", "--lr=1e-3", "--precision=bf16"], 1, 5, save=trained)
    moved = 0
    for init in onnx.load(trained).graph.initializer:
        if "ln" in init.name and init.name.endswith("weight"):
            w = nh.to_array(init).astype(np.float32)
            as_bf16 = torch.from_numpy(w).to(torch.bfloat16).float().numpy()
            moved += int(np.sum((w != 1.0) & (w != as_bf16)))
    print("LayerNorm weights at 1.0 after 5 bf16 AdamW steps (lr 1e-3): %d elements "
          "moved to values bf16 cannot hold: %s" % (moved, "ok" if moved else "MISMATCH"))
    ok &= moved > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
