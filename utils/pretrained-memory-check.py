#!/usr/bin/env python3
# Memory of a fine-tune from a sharded checkpoint, measured: a Llama of 31M
# parameters saved in bf16 shards, exported without its weights, compiled at
# ZeRO stage 3 for 2 ranks, trained 2 steps under mpirun (one process per rank)
# from the shards, writing a checkpoint and --save-pretrained.
#
#   pretrained-memory-check.py --bin BUILD/bin --work DIR
#
# Each rank's resident memory over the run (what zero-run measures above what
# the process held before its arena: loading, steps, checkpoint, saving) must be
# at most the report's total_peak plus 10% plus the staging zero-run states for
# its writes (one parameter's slice and its converted copy); before, a rank held
# the whole model in f32 while loading and its checkpoint file twice while
# writing it. Exit 1 otherwise.
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_export  # noqa: E402
import zero_testing  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    zero_opt, zero_run = (os.path.join(a.bin, t) for t in ("zero-opt", "zero-run"))
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=512, intermediate_size=1376,
                                   num_hidden_layers=8, num_attention_heads=8,
                                   num_key_value_heads=4, max_position_embeddings=128,
                                   vocab_size=8000, use_cache=True, tie_word_embeddings=False)
    ckpt = os.path.join(a.work, "pretrained")
    transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(
        ckpt, max_shard_size="20MB")
    onnx_path = os.path.join(a.work, "model.onnx")
    zero_export.export_without_weights(transformers.AutoConfig.from_pretrained(ckpt),
                                       onnx_path, 2, 64)
    plan = os.path.join(a.work, "step.zplan")
    report = json.loads(subprocess.run(
        [zero_opt, onnx_path, "--zero-stage=3", "--world-size=2", "--report=json", "-o", plan],
        check=True, capture_output=True, text=True).stdout)
    total_peak = report["per_rank_bytes"]["total_peak"]
    data = os.path.join(a.work, "tokens.u8")
    np.random.RandomState(0).randint(0, 256, size=100000).astype(np.uint8).tofile(data)
    run = subprocess.run(zero_testing.launcher(2) + [
        zero_run, plan, "--init", onnx_path, "--init", ckpt, "--data", data, "--steps", "2",
        "--save-checkpoint", os.path.join(a.work, "ckpt"), "--save-pretrained",
        os.path.join(a.work, "tuned")], check=True, capture_output=True, text=True).stdout
    print(run.strip().splitlines()[-2])
    print(run.strip().splitlines()[-1])
    staging = max(float(x) for x in re.findall(r"staging at most ([0-9.]+) MB", run)) * 1e6
    peaks = [float(x) * 1048576 for x in
             re.findall(r"rank \d+ ([0-9.]+) MiB", run.strip().splitlines()[-1])]
    bound = 1.1 * total_peak + staging
    ok = len(peaks) == 2 and all(p <= bound for p in peaks)
    print("measured peaks %s MiB against the report's total_peak %.1f MiB + 10%% + staging "
          "%.1f MiB = %.1f MiB: %s" % ([round(p / 1048576, 1) for p in peaks],
                                       total_peak / 1048576, staging / 1048576,
                                       bound / 1048576, "ok" if ok else "OVER"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
