#!/usr/bin/env python3
# zero-run --consolidate: a sharded checkpoint as one file.
#
#   consolidate-check.py --bin BUILD/bin --work DIR [--big-hidden 1024 ...]
#
# 1. The test GPT trained on 2 ranks at stage 3 in bf16 (f32 masters, sharded) and
#    on 3 ranks at stage 1 in fp32 (replicated parameters, each stored by one rank)
#    with --save-checkpoint and --save-weights: the safetensors file, read back by
#    the reader below (written from the format's description: 8-byte little-endian
#    header length, JSON header, data), holds every trained initializer of
#    --save-weights bit for bit; with --with-optimizer-state also every exp_avg and
#    exp_avg_sq and Adam's step count; -o OUT.onnx equals --save-weights byte for
#    byte.
# 2. Peak memory: a GPT of a few hundred MB (utils/gen_gpt_onnx.py --weights random)
#    checkpointed by 2 ranks at stage 3; --consolidate's peak resident memory
#    (the kernel's VmHWM, which zero-run reports) stays under twice the largest tensor plus the fixed
#    overhead, measured as the peak of consolidating the small model.
#
# Exit 1 on a mismatch. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "F16": np.float16, "U8": np.uint8, "I8": np.int8}


def read_safetensors(path):
    """{name: (dtype string, shape, raw bytes)} and the metadata, per the format."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    assert (8 + n) % 8 == 0, "the data does not start 8-byte aligned"
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors, end = {}, 0
    for name, t in header.items():
        begin, stop = t["data_offsets"]
        count = int(np.prod(t["shape"])) if t["shape"] else 1
        assert stop - begin == count * np.dtype(DTYPES[t["dtype"]]).itemsize, name
        tensors[name] = (t["dtype"], t["shape"], data[begin:stop])
        end = max(end, stop)
    assert end == len(data), "data beyond the last tensor"
    return tensors, meta


def consolidate_peak_mb(zero_run, args):
    """Peak resident memory (MB) of one zero-run --consolidate, as it reports it (the
    kernel's VmHWM of its own address space: a forked child's ru_maxrss would count
    this Python process too)."""
    out = subprocess.run([zero_run] + args, check=True, capture_output=True,
                         text=True).stdout
    return float(out.split("peak resident memory ")[1].split()[0])


def check_small(a, zero_run, name, world, flags):
    work = os.path.join(a.work, name)
    os.makedirs(work, exist_ok=True)
    model, data = zero_models.test_gpt(work)
    plan = os.path.join(work, "step.zplan")
    subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan,
                    "--world-size=%d" % world, "--bucket-size-mb=0.02"] + flags, check=True)
    ckpt, weights = os.path.join(work, "ckpt"), os.path.join(work, "weights.onnx")
    subprocess.run(zero_testing.launcher(world) +
                   [zero_run, plan, "--init", model, "--data", data, "--steps", "6",
                    "--save-checkpoint", ckpt, "--save-weights", weights, "--quiet"],
                   check=True)
    out_st = os.path.join(work, "model.safetensors")
    out_state = os.path.join(work, "state.safetensors")
    out_onnx = os.path.join(work, "model.onnx")
    subprocess.run([zero_run, "--consolidate", ckpt, "-o", out_st], check=True)
    subprocess.run([zero_run, "--consolidate", ckpt, "-o", out_state,
                    "--with-optimizer-state", "--quiet"], check=True)
    subprocess.run([zero_run, "--consolidate", ckpt, "-o", out_onnx, "--init", model,
                    "--quiet"], check=True)
    saved = {t.name: t for t in onnx.load(weights).graph.initializer}
    trainable = set(zero_models.test_gpt_module().state_dict().keys())
    tensors, meta = read_safetensors(out_st)
    problems = []
    for tname in sorted(trainable & set(saved)):
        if tname not in tensors:
            problems.append("%s is missing" % tname)
            continue
        dtype, shape, raw = tensors[tname]
        want = nh.to_array(saved[tname])
        if dtype != "F32" or list(shape) != list(want.shape) or raw != want.tobytes():
            problems.append("%s differs from --save-weights" % tname)
    extra = set(tensors) - set(saved)
    if extra:
        problems.append("tensors that are no initializers: %s" % sorted(extra)[:3])
    if meta.get("step") != "6":
        problems.append("metadata step %r, not '6'" % meta.get("step"))
    state, _ = read_safetensors(out_state)
    for pname in tensors:
        for suffix in (".exp_avg", ".exp_avg_sq"):
            entry = state.get(pname + suffix)
            if entry is None or list(entry[1]) != list(tensors[pname][1]):
                problems.append("%s%s is missing or misshapen" % (pname, suffix))
            elif not np.frombuffer(entry[2], dtype=np.float32).any():
                problems.append("%s%s is all zero" % (pname, suffix))
    step = state.get("optimizer.step")
    if step is None or step[0] != "I64" or np.frombuffer(step[2], np.int64)[0] != 6:
        problems.append("optimizer.step is not the i64 6")
    with open(out_onnx, "rb") as f1, open(weights, "rb") as f2:
        if f1.read() != f2.read():
            problems.append("-o model.onnx differs from --save-weights")
    print("%-10s %d tensors (%d with optimizer state) equal --save-weights bit for bit, "
          "ONNX identical: %s" % (name, len(tensors), len(state),
                                   "ok" if not problems else "MISMATCH: " + "; ".join(problems)))
    return not problems, ckpt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    # The big model: about 330 MB of f32 weights, the largest the embedding.
    p.add_argument("--big-layers", type=int, default=4)
    p.add_argument("--big-hidden", type=int, default=1024)
    p.add_argument("--big-vocab", type=int, default=32000)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    zero_run = os.path.join(a.bin, "zero-run")
    ok, small_ckpt = check_small(a, zero_run, "bf16-s3-w2", 2,
                                 ["--precision=bf16", "--zero-stage=3"])
    good, _ = check_small(a, zero_run, "fp32-s1-w3", 3, ["--zero-stage=1"])
    ok &= good

    # Peak memory on a model of a few hundred MB, checkpointed by 2 ranks at stage 3.
    work = os.path.join(a.work, "big")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "gpt.onnx")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "gen_gpt_onnx.py"),
                    model, "--layers", str(a.big_layers), "--hidden", str(a.big_hidden),
                    "--heads", "8", "--vocab", str(a.big_vocab), "--seq", "16", "--batch", "1",
                    "--weights", "random"], check=True)
    plan = os.path.join(work, "step.zplan")
    subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan, "--zero-stage=3",
                    "--world-size=2", "--optimizer=sgd", "--momentum=0.9"], check=True)
    tokens = os.path.join(work, "tokens.u32")
    np.random.RandomState(0).randint(0, a.big_vocab, 4096).astype(np.uint32).tofile(tokens)
    ckpt = os.path.join(work, "ckpt")
    subprocess.run([zero_run, plan, "--init", model, "--data", tokens, "--data-format",
                    "u32", "--steps", "1", "--save-checkpoint", ckpt, "--quiet"], check=True)
    base = consolidate_peak_mb(zero_run, ["--consolidate", small_ckpt, "-o",
                                          os.path.join(work, "small.safetensors")])
    out = os.path.join(work, "big.safetensors")
    peak = consolidate_peak_mb(zero_run, ["--consolidate", ckpt, "-o", out])
    tensors, _ = read_safetensors(out)
    sizes = [len(t[2]) for t in tensors.values()]
    largest, total = max(sizes) / 2**20, sum(sizes) / 2**20
    limit = 2 * largest + base
    good = peak < limit
    print("consolidating %.0f MB of parameters (largest tensor %.0f MB): peak resident "
          "memory %.0f MB; limit 2 x %.0f + %.0f MB (the small model's peak) = %.0f MB: %s"
          % (total, largest, peak, largest, base, limit, "ok" if good else "OVER"))
    ok &= good and total > 200
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
