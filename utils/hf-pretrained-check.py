#!/usr/bin/env python3
# A checkpoint as users download it, fine-tuned end to end: save_pretrained in
# bf16, sharded (model.safetensors.index.json), config.json with use_cache: true
# -> from_pretrained as transformers 5 returns it (bf16) -> exported with
# zero_export.export_pretrained -> zero-opt at ZeRO stage 3 for 2 ranks ->
# zero-run --init model.onnx --init CHECKPOINT (each rank reads its slices of the
# shards) -> --save-pretrained OUT -> from_pretrained(OUT).
#
#   hf-pretrained-check.py --bin BUILD/bin --work DIR [--steps 5] [--layers 8]
#                          [--dtype bf16|f32] [--without-weights]
#
# (--without-weights: exported from the checkpoint's config alone, its parameters
# never built (zero_export.export_without_weights), trained from the checkpoint.)
#
# (--dtype f32: a float32 checkpoint, whose export holds the Linear weights
# transposed (folded `val_N`): each rank reads and writes columns of them.)
#
# Checked (exit 1 on a mismatch):
#   - the 5 step losses equal PyTorch's own fine-tuning of the same checkpoint
#     (from_pretrained in float32: the master weights) on the same batches,
#     within 1e-4 relative;
#   - the evaluation after the last step (--eval-data, 3 held-out global batches,
#     --eval-every 2: also after steps 2 and 4, between steps whose losses are
#     checked above) equals the mean loss of PyTorch's fine-tuned model in eval()
#     mode on the same batches within 1e-5 relative;
#   - from_pretrained(OUT) loads with no missing or unexpected key, in the
#     checkpoint's dtype, with its config;
#   - its logits (float32) equal zero-run's forward of the saved weights
#     (--mode=inference, --init model.onnx --init OUT) within 1e-4;
#   - the saved weights (in shards of 0.2 MB, with their index) are PyTorch's
#     fine-tuned weights rounded to the checkpoint's dtype: per tensor within 1e-2
#     relative for bf16 (its rounding is 4e-3), 1e-3 for f32 (see
#     hf-finetune-check.py).
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_export  # noqa: E402
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

SEQ, BATCH, WORLD, VOCAB = 16, 2, 2, 256


def make_checkpoint(path, layers, dtype):
    """A Llama (grouped-query attention, untied head) saved as a hub checkpoint
    is: bf16, in shards of about 100 KB, use_cache true in its config."""
    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=layers, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=2 * SEQ,
                                   vocab_size=VOCAB, attention_dropout=0.0, use_cache=True,
                                   tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():  # as trained weights are: no two norms alike
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    model.to(dtype).save_pretrained(path, max_shard_size="100KB")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    p.add_argument("--without-weights", action="store_true")
    a = p.parse_args()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    zero_opt, zero_run = (os.path.join(a.bin, t) for t in ("zero-opt", "zero-run"))
    lr, wd, eps = 3e-3, 0.01, 1e-6  # eps: see hf-parity.py

    ckpt = os.path.join(a.work, "pretrained")
    make_checkpoint(ckpt, a.layers, dtype)
    shards = sorted(f for f in os.listdir(ckpt) if f.endswith(".safetensors"))
    config = json.load(open(os.path.join(ckpt, "config.json")))
    print("checkpoint: %d shards and an index, %s, use_cache %s" % (
        len(shards), config.get("dtype", config.get("torch_dtype")), config["use_cache"]))
    ok = len(shards) > 1 and config["use_cache"] is True

    # The documented export of the model as from_pretrained returns it, or of
    # its config alone.
    onnx_path = os.path.join(a.work, "model.onnx")
    if a.without_weights:
        zero_export.export_without_weights(transformers.AutoConfig.from_pretrained(ckpt),
                                           onnx_path, BATCH, SEQ)
        import onnx
        m = onnx.load(onnx_path, load_external_data=False)
        print("exported without weights: %d initializers (buffers and constants), %d "
              "graph inputs" % (len(m.graph.initializer), len(m.graph.input)))
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(ckpt)
        print("from_pretrained: %s" % model.dtype)
        zero_export.export_pretrained(model, onnx_path, BATCH, SEQ)
        del model

    rng = np.random.RandomState(2)
    data = rng.randint(0, VOCAB, size=4096).astype(np.uint8)
    data_path = os.path.join(a.work, "tokens.u8")
    data.tofile(data_path)
    held_out = rng.randint(0, VOCAB, size=1024).astype(np.uint8)
    eval_path = os.path.join(a.work, "eval.u8")
    held_out.tofile(eval_path)
    plan = os.path.join(a.work, "step.zplan")
    subprocess.run([zero_opt, onnx_path, "-o", plan, "--zero-stage=3",
                    "--world-size=%d" % WORLD, "--optimizer=adamw", "--lr=%r" % lr,
                    "--weight-decay=%r" % wd, "--eps=%r" % eps], check=True)
    if a.without_weights:
        # Without the checkpoint the parameters have no values, and zero-run says so.
        r = subprocess.run([zero_run, plan, "--init", onnx_path, "--data", data_path,
                            "--steps", "1"], capture_output=True, text=True)
        said = "has no values: the model was exported without its weights; give them " \
               "with --init CHECKPOINT" in r.stderr
        print("without --init CHECKPOINT: exit %d, %s" % (r.returncode, "named" if said
                                                           else "NOT NAMED: " + r.stderr))
        ok &= r.returncode != 0 and said
    out = os.path.join(a.work, "tuned")
    log = os.path.join(a.work, "log.json")
    subprocess.run([zero_run, plan, "--init", onnx_path, "--init", ckpt, "--data", data_path,
                    "--steps", str(a.steps), "--log-json", log, "--save-pretrained", out,
                    "--save-shard-mb", "0.2", "--eval-data", eval_path, "--eval-batches", "3",
                    "--eval-every", "2"],
                   check=True)
    records = [json.loads(line) for line in open(log)]
    zero_losses = [r["loss"] for r in records if "loss" in r]
    zero_eval = [r["eval_loss"] for r in records if "eval_loss" in r]

    # PyTorch fine-tunes the same checkpoint (f32 master weights) on the same
    # global batches.
    reference = transformers.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32)
    reference.train()
    opt = torch.optim.AdamW(reference.parameters(), lr=lr, weight_decay=wd, eps=eps)
    tdata = torch.from_numpy(data.astype(np.int64))
    torch_losses = []
    for step in range(a.steps):
        tokens, _ = zero_models.make_batch(tdata, step, WORLD * BATCH, SEQ)
        opt.zero_grad()
        loss = reference(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()
        torch_losses.append(loss.item())
    worst = max(abs(z - t) / abs(t) for z, t in zip(zero_losses, torch_losses))
    for i, (z, t) in enumerate(zip(zero_losses, torch_losses)):
        print("step %d: zero-run %.6f  PyTorch %.6f" % (i + 1, z, t))
    good = len(zero_losses) == a.steps and worst < 1e-4
    print("losses: worst relative difference %.2e (1e-4): %s" % (worst, "ok" if good else
                                                                  "MISMATCH"))
    ok &= good
    reference.eval()
    with torch.no_grad():
        tevals = torch.from_numpy(held_out.astype(np.int64))
        want = sum(reference(input_ids=t, labels=t).loss.item() for t in
                   (zero_models.make_batch(tevals, k, WORLD * BATCH, SEQ)[0]
                    for k in range(3))) / 3
    rel = abs(zero_eval[-1] - want) / abs(want) if zero_eval else float("inf")
    good = len(zero_eval) == 3 and rel < 1e-5  # after steps 2, 4 and 5
    print("eval loss after step %d: zero-run %.6f, PyTorch eval() %.6f, relative "
          "difference %.2e (1e-5): %s" % (a.steps, zero_eval[-1] if zero_eval else
                                          float("nan"), want, rel,
                                          "ok" if good else "MISMATCH"))
    ok &= good

    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(
        out, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    saved = sorted(f for f in os.listdir(out) if f.endswith(".safetensors"))
    good = not problems and loaded.dtype == dtype and len(saved) > 1
    print("--save-pretrained wrote %s and %s" % (", ".join(saved), ", ".join(
        sorted(f for f in os.listdir(out) if f.endswith(".json")))))
    print("from_pretrained(%s): %s, missing/unexpected/mismatched keys: %s: %s" % (
        os.path.basename(out), loaded.dtype, problems or "none", "ok" if good else "MISMATCH"))
    ok &= good
    worst = 0.0
    want = reference.state_dict()
    for name, got in loaded.state_dict().items():
        rel = float((got.float() - want[name]).norm() / max(float(want[name].norm()), 1e-30))
        worst = max(worst, rel)
    bound = 1e-2 if a.dtype == "bf16" else 1e-3
    good = worst < bound
    print("saved weights against PyTorch's fine-tuned ones: worst relative difference "
          "%.2e over %d tensors (%g): %s" % (worst, len(want), bound,
                                             "ok" if good else "MISMATCH"))
    ok &= good

    loaded = loaded.float().eval()
    tokens, _ = zero_models.make_batch(tdata, 0, BATCH, SEQ)
    with torch.no_grad():
        logits = loaded(input_ids=tokens).logits.numpy()
    got = zero_testing.forward_outputs(a.bin, a.work, onnx_path, tokens.numpy(), out)
    err = float(np.max(np.abs(got - logits)))
    good = got.shape == logits.shape and err < 1e-4
    print("logits %s: zero-run's forward of %s against from_pretrained's, max abs "
          "difference %.2e (1e-4): %s" % (list(logits.shape), os.path.basename(out), err,
                                          "ok" if good else "MISMATCH"))
    ok &= good
    print("pretrained checkpoint round trip: %s" % ("ok" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
