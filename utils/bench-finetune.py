#!/usr/bin/env python3
# Fine-tuning benchmark: a Llama of 349M parameters (hidden 1024, 24 layers, 16
# query / 8 key-value heads, vocabulary 32000) saved by save_pretrained in bf16
# shards of 200 MB, as a hub checkpoint is, fine-tuned on this machine at ZeRO
# stage 3 on 2 ranks (mpirun, one process each) from the shards; and the report of
# a 7B-class Llama (Llama-2-7B's shape) on 8 ranks with and without offload.
#
#   bench-finetune.py --bin BUILD/bin --work DIR [--seq 128] [--steps 3]
#
# Prints, measured: the export's time (from the config alone), the compile's, the
# run's start (process start to the first step: loading the shards), ms per step,
# the time to write a checkpoint and to --save-pretrained, and each rank's peak
# memory (zero-run's measure) beside the report's total_peak. For the 7B model,
# the report's per-rank bytes (model states, total peak; host bytes with
# offload) and the largest parameter slice a rank stages while loading.
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_export  # noqa: E402
import zero_testing  # noqa: E402

MIB = 1048576.0


def llama(hidden, layers, heads, kv_heads, inter, vocab):
    return transformers.LlamaConfig(hidden_size=hidden, intermediate_size=inter,
                                    num_hidden_layers=layers, num_attention_heads=heads,
                                    num_key_value_heads=kv_heads, vocab_size=vocab,
                                    max_position_embeddings=4096, use_cache=True,
                                    tie_word_embeddings=False)


def timed(cmd):
    start = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.time() - start, out.stdout + out.stderr


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--only-7b", action="store_true", help="skip the 349M fine-tune")
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    zero_opt, zero_run = (os.path.join(a.bin, t) for t in ("zero-opt", "zero-run"))

    if not a.only_7b and fine_tune(a, zero_opt, zero_run):
        return 1
    return report_7b(a, zero_opt)


def fine_tune(a, zero_opt, zero_run):
    cfg = llama(1024, 24, 16, 8, 2816, 32000)
    ckpt = os.path.join(a.work, "pretrained")
    torch.manual_seed(0)
    start = time.time()
    model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    n = sum(q.numel() for q in model.parameters())
    model.save_pretrained(ckpt, max_shard_size="200MB")
    del model
    shards = [f for f in os.listdir(ckpt) if f.endswith(".safetensors")]
    print("checkpoint: %d parameters, %d bf16 shards (%.0f MB), written in %.1f s" % (
        n, len(shards), sum(os.path.getsize(os.path.join(ckpt, f)) for f in shards) / 1e6,
        time.time() - start))

    onnx_path = os.path.join(a.work, "model.onnx")
    start = time.time()
    zero_export.export_without_weights(transformers.AutoConfig.from_pretrained(ckpt),
                                       onnx_path, 1, a.seq)
    print("export from the config alone: %.1f s" % (time.time() - start))
    plan = os.path.join(a.work, "step.zplan")
    secs, out = timed([zero_opt, onnx_path, "--zero-stage=3", "--world-size=2",
                       "--optimizer=adamw", "--lr=1e-5", "--report=json", "-o", plan])
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    total_peak = report["per_rank_bytes"]["total_peak"]
    print("compile (stage 3, 2 ranks): %.1f s; report: total_peak %.0f MiB per rank" % (
        secs, total_peak / MIB))

    data = os.path.join(a.work, "tokens.u16")
    np.random.RandomState(0).randint(0, 32000, size=200000).astype(np.uint16).tofile(data)
    start = time.time()
    run = subprocess.Popen(zero_testing.launcher(2) + [
        zero_run, plan, "--init", onnx_path, "--init", ckpt, "--data", data,
        "--data-format=u16", "--steps", str(a.steps), "--save-checkpoint",
        os.path.join(a.work, "ckpt"), "--save-pretrained", os.path.join(a.work, "tuned")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, first_step = [], None
    for line in run.stdout:
        lines.append(line.rstrip())
        if first_step is None and "step 1/" in line:
            first_step = time.time() - start
    if run.wait() != 0:
        print("\n".join(lines[-20:]))
        return 1
    text = "\n".join(lines)
    ms = [float(x) for x in re.findall(r"step \d+/\d+\s+loss [0-9.]+\s+([0-9.]+) ms/step", text)]
    load = re.search(r"loaded the parameters in ([0-9.]+) s", text)
    ckpt_s = re.findall(r"wrote the checkpoint of step \d+ in ([0-9.]+) s", text)
    save = re.search(r"wrote .*tuned: .* in ([0-9.]+) s", text)
    peaks = re.search(r"peak memory over the run .*: (.*); the plan's arena", text)
    print("start to first step: %.1f s (loading the shards: %s s)" % (
        first_step or -1, load.group(1) if load else "?"))
    print("ms per step: %s (after the first: %.0f)" % (
        ", ".join("%.0f" % x for x in ms), sum(ms[1:]) / max(1, len(ms) - 1)))
    print("checkpoint write: %s s; --save-pretrained: %s s" % (
        ", ".join(ckpt_s), save.group(1) if save else "?"))
    print("peak memory per rank: %s (report's total_peak %.0f MiB)" % (
        peaks.group(1) if peaks else "?", total_peak / MIB))

    return 0


def report_7b(a, zero_opt):
    # 7B-class: Llama-2-7B's shape, from its config alone.
    big = os.path.join(a.work, "llama7b.onnx")
    start = time.time()
    zero_export.export_without_weights(llama(4096, 32, 32, 32, 11008, 32000), big, 1, 2048)
    print("7B export from the config alone: %.1f s" % (time.time() - start))
    for name, flags in [("bf16, stage 3, 8 ranks", []),
                        ("bf16, stage 3, 8 ranks, optimizer and parameters offloaded",
                         ["--offload-optimizer=cpu", "--offload-param=cpu"])]:
        secs, out = timed([zero_opt, big, "--zero-stage=3", "--world-size=8",
                           "--precision=bf16", "--report=json"] + flags)
        r = json.loads(out[out.index("{"):out.rindex("}") + 1])
        b = r["per_rank_bytes"]
        host = r.get("host_bytes", {}).get("host_peak", 0)
        print("7B %s: model states %.0f MiB, total peak %.0f MiB per rank%s (report in "
              "%.1f s)" % (name, b["model_states"] / MIB, b["total_peak"] / MIB,
                           (", host %.0f MiB" % (host / MIB)) if host else "", secs))
    # Loading stages one buffer; the largest parameter slice of 8 ranks is the
    # embedding's (32000 x 4096 f32 / 8).
    print("7B start: each rank stages at most one parameter buffer while loading "
          "(the embedding's slice: %.0f MiB in f32)" % (32000 * 4096 * 4 / 8 / MIB))
    return 0


if __name__ == "__main__":
    sys.exit(main())
