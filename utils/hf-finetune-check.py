#!/usr/bin/env python3
# Fine-tuning a Hugging Face checkpoint: save_pretrained -> zero-run --init
# model.safetensors -> trained safetensors -> load_state_dict in PyTorch.
#
#   hf-finetune-check.py --bin BUILD/bin --work DIR --model llama|qwen2 [--steps 5]
#
# (Tiny GPT-2 is not among them: its exporter folds the position embedding's
# first T rows into a new initializer, which no PyTorch name holds; zero-run
# refuses such a model with a safetensors checkpoint, naming the initializer.)
#
# The checkpoint (save_pretrained's model.safetensors) holds other weights than the
# exported model.onnx, so every trained value must come from the checkpoint, by
# PyTorch name (a folded Linear weight transposed). zero-run trains --steps AdamW steps from it and writes
# trained.safetensors; PyTorch trains the same checkpoint on the same batches.
# Checked:
#   - model.load_state_dict(safetensors.torch.load_file(trained.safetensors)) takes
#     the file as it is (strict: no key missing or extra);
#   - the run's checkpoint, consolidated with --init model.onnx, holds the same
#     tensors under the same names;
#   - those weights are PyTorch's own fine-tuned weights within 1e-3 (relative, per
#     tensor): a weight read under the wrong name or layout is off by its whole
#     size, while Adam turns the two trainers' different roundings of small
#     gradients into differences near 1e-4 on a few small biases;
#   - the loaded model's logits equal zero-run's forward (--mode=inference, --init
#     model.onnx --init trained.safetensors) within 1e-5.
# Exit 1 on a mismatch.
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import safetensors.torch
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_export  # noqa: E402
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

SEQ, BATCH = 16, 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", choices=["llama", "qwen2"], required=True)
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    lr, wd, eps = 3e-3, 0.01, 1e-6  # eps: see hf-parity.py
    zero_opt, zero_run = (os.path.join(a.bin, t) for t in ("zero-opt", "zero-run"))

    rng = np.random.RandomState(2)
    data = rng.randint(0, hf_export.TINY_VOCAB, size=4096).astype(np.uint8)
    data_path = os.path.join(a.work, "tokens.u8")
    data.tofile(data_path)

    # The checkpoint, and an export of the same architecture with other weights.
    pretrained = hf_export.build(a.model, positions=SEQ * 2, seed=1)
    checkpoint = os.path.join(a.work, "pretrained")
    pretrained.save_pretrained(checkpoint)
    onnx_path = os.path.join(a.work, "model.onnx")
    hf_export.export(hf_export.build(a.model, positions=SEQ * 2, seed=0), onnx_path, BATCH, SEQ)

    plan = os.path.join(a.work, "step.zplan")
    subprocess.run([zero_opt, onnx_path, "-o", plan, "--optimizer=adamw", "--lr=%r" % lr,
                    "--weight-decay=%r" % wd, "--eps=%r" % eps], check=True)
    trained = os.path.join(a.work, "trained.safetensors")
    # A checkpoint folder left by an earlier run (of another build) is refused.
    shutil.rmtree(os.path.join(a.work, "ckpt"), ignore_errors=True)
    subprocess.run([zero_run, plan, "--init", onnx_path, "--init",
                    os.path.join(checkpoint, "model.safetensors"), "--data", data_path,
                    "--steps", str(a.steps), "--save-weights", trained, "--save-checkpoint",
                    os.path.join(a.work, "ckpt"), "--quiet"], check=True)
    # The run's checkpoint, consolidated by PyTorch name.
    consolidated = os.path.join(a.work, "consolidated.safetensors")
    subprocess.run([zero_run, "--consolidate", os.path.join(a.work, "ckpt"), "-o",
                    consolidated, "--init", onnx_path], check=True, stdout=subprocess.DEVNULL)

    # PyTorch fine-tunes the same checkpoint on the same batches.
    reference = hf_export.build(a.model, positions=SEQ * 2, seed=1)
    opt = torch.optim.AdamW(reference.parameters(), lr=lr, weight_decay=wd, eps=eps)
    tdata = torch.from_numpy(data.astype(np.int64))
    for step in range(a.steps):
        tokens, _ = zero_models.make_batch(tdata, step, BATCH, SEQ)
        opt.zero_grad()
        reference(input_ids=tokens, labels=tokens).loss.backward()
        opt.step()

    ok = True
    loaded = hf_export.build(a.model, positions=SEQ * 2, seed=3)
    result = loaded.load_state_dict(safetensors.torch.load_file(trained), strict=True)
    print("load_state_dict(load_file(%s)): %d keys, strict: ok (%s)" % (
        os.path.basename(trained), len(loaded.state_dict()), result))
    ckpt = safetensors.torch.load_file(consolidated)
    same = sorted(ckpt) == sorted(loaded.state_dict()) and all(
        torch.equal(ckpt[k], v) for k, v in safetensors.torch.load_file(trained).items())
    print("--consolidate -o %s --init model.onnx: %s" % (
        os.path.basename(consolidated), "the same tensors, bit for bit" if same else "MISMATCH"))
    ok &= same
    worst = 0.0
    want = reference.state_dict()
    for name, got in loaded.state_dict().items():
        rel = float((got - want[name]).norm() / max(float(want[name].norm()), 1e-30))
        worst = max(worst, rel)
        if rel >= 1e-3:
            print("weight %s differs from PyTorch's fine-tuned one: %.2e" % (name, rel))
            ok = False
    print("trained weights against PyTorch's: worst relative error %.2e over %d tensors"
          % (worst, len(want)))

    tokens, _ = zero_models.make_batch(tdata, 0, BATCH, SEQ)
    with torch.no_grad():
        logits = loaded(input_ids=tokens).logits.numpy()
    got = zero_testing.forward_outputs(a.bin, a.work, onnx_path, tokens.numpy(), trained)
    err = float(np.max(np.abs(got - logits)))
    good = got.shape == logits.shape and np.allclose(got, logits, rtol=1e-5, atol=1e-5)
    print("logits %s: zero-run's forward against the loaded model's, max abs difference "
          "%.2e (rtol 1e-5, atol 1e-5): %s" % (list(logits.shape), err, "ok" if good else
                                               "MISMATCH"))
    ok &= good
    print("%s fine-tuning round trip: %s" % (a.model, "ok" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
