#!/usr/bin/env python3
# Moves a DeepSpeed run to zero-run: a checkpoint written by DeepSpeed's
# engine.save_checkpoint (ZeRO stage 1, 2 or 3, any world size) becomes a zero-run
# checkpoint that `zero-run PLAN --resume OUT` continues on any number of ranks, at
# any ZeRO stage.
#
#   deepspeed-import.py --bin BUILD/bin --model MODEL.onnx --checkpoint DS_DIR
#                       [--tag TAG] -o OUT_DIR
#
# DS_DIR is the folder given to save_checkpoint (TAG: its `latest` unless given);
# MODEL.onnx is the model zero-opt compiles (its parameters named as the PyTorch
# module's, as utils/zero_export.py writes them). What is carried over: every
# parameter (DeepSpeed's f32 master copy), AdamW's exp_avg and exp_avg_sq per
# parameter and its step count, the data position (global_samples), the scheduler's
# iteration (last_batch_iteration + 1) and the accumulation steps.
#
# Why Python: DeepSpeed's checkpoint is torch.save pickles whose layout (flat
# partitions of parameter groups, per-rank padding, ZeRO-3's own partitioning) is
# DeepSpeed's code; its own converter (deepspeed.checkpoint.ds_to_universal, the
# "universal checkpoint") reassembles each parameter and its optimizer state whole,
# and this tool reads that. The zero-run side is not written from scratch either:
# zero-run itself writes an empty checkpoint of MODEL (one rank, stage 0, step 0) and
# this tool puts DeepSpeed's values at the places zero-run's manifest names, then
# computes the checksums again (docs/UserGuide.md, "Checkpoints"). zero-run's reader
# then checks every value as for any checkpoint.
#
# Refused, naming the reason: an fp16 run (its loss scaler's state has no
# counterpart here), an optimizer other than Adam/AdamW, a parameter of MODEL the
# checkpoint lacks or holds in another shape, or one the checkpoint has and MODEL
# does not. Nothing is written then; OUT_DIR is written whole or not at all.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zero_testing import fnv1a64  # noqa: E402

HEADER = struct.Struct("<8sII QQ".replace(" ", ""))  # magic, version, reserved, length, checksum
CHECKSUM_KEY = '"manifest_checksum": "'


def fail(message):
    raise SystemExit("deepspeed-import: error: " + message)


def load_deepspeed(directory, tag, work):
    """(model states of rank 0, {parameter: {"fp32", "exp_avg", "exp_avg_sq"}})."""
    if tag is None:
        latest = os.path.join(directory, "latest")
        if not os.path.isfile(latest):
            fail("%s has no 'latest' file: give --tag" % directory)
        tag = open(latest).read().strip()
    folder = os.path.join(directory, tag)
    model_files = sorted(glob.glob(os.path.join(folder, "*model_states.pt")))
    if not model_files:
        fail("%s holds no DeepSpeed model states (*model_states.pt)" % folder)
    states = torch.load(model_files[0], map_location="cpu", weights_only=False)
    universal = os.path.join(work, "universal")
    # DeepSpeed's own converter reassembles each parameter and its state whole.
    r = subprocess.run([sys.executable, "-m", "deepspeed.checkpoint.ds_to_universal",
                        "--input_folder", folder, "--output_folder", universal,
                        "--num_extract_workers", "1", "--num_merge_workers", "1",
                        # A run outside Megatron has no universal_checkpoint_info
                        # client state; the converter supplies its default.
                        "--inject_missing_state"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("DeepSpeed's ds_to_universal could not read %s:\n%s" % (folder, r.stderr[-2000:]))
    # ZeRO-3's universal tensors come out flat: the shapes are the model states'.
    shapes = {}
    for group in states.get("param_shapes") or []:
        shapes.update({k: list(v) for k, v in group.items()})
    tensors = {}
    root = os.path.join(universal, "zero")
    # A tied parameter (GPT-2's output layer) is DeepSpeed's shared_params alias of
    # the one that holds it: the model has it once.
    aliases = states.get("shared_params") or {}
    for name in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, name)) or name in aliases:
            continue
        entry = {}
        for kind in ("fp32", "exp_avg", "exp_avg_sq", "step"):
            path = os.path.join(root, name, kind + ".pt")
            if os.path.isfile(path):
                value = torch.load(path, map_location="cpu", weights_only=False)
                value = value["param"] if isinstance(value, dict) else value
                if kind != "step" and name in shapes and value.dim() == 1 and \
                        value.numel() == int(np.prod(shapes[name])):
                    value = value.reshape(shapes[name])
                entry[kind] = value
        tensors[name] = entry
    return states, tensors


def template(bin_dir, model, work):
    """An empty zero-run checkpoint of `model` (one rank, stage 0, AdamW, step 0)."""
    plan = os.path.join(work, "template.zplan")
    tokens = os.path.join(work, "tokens.u8")
    with open(tokens, "wb") as f:
        f.write(bytes(range(256)) * 16)
    subprocess.run([os.path.join(bin_dir, "zero-opt"), model, "--world-size=1",
                    "--zero-stage=0", "--optimizer=adamw", "-o", plan],
                   check=True, stderr=subprocess.DEVNULL)
    folder = os.path.join(work, "template")
    subprocess.run([os.path.join(bin_dir, "zero-run"), plan, "--device=cpu", "--init", model,
                    "--data", tokens, "--steps", "0", "--save-checkpoint", folder, "--quiet"],
                   check=True)
    return os.path.join(folder, "step-0")


def fill(step_dir, states, tensors):
    """Puts DeepSpeed's values into the template's rank file; returns the manifest."""
    manifest = json.load(open(os.path.join(step_dir, "manifest.json")))
    rank_path = os.path.join(step_dir, "rank-0.bin")
    blob = bytearray(open(rank_path, "rb").read())
    magic, version, reserved, length, _ = HEADER.unpack_from(blob)
    if magic != b"ZEROCKPT" or length != len(blob) - HEADER.size:
        fail("zero-run's template checkpoint is not what this tool reads (format %d)" % version)
    payload = memoryview(blob)[HEADER.size:]
    steps = int(states["global_steps"])
    used = set()
    for b in manifest["buffers"]:
        name, offset, nbytes = b["name"], int(b.get("offset", 0)), int(b["bytes"])
        shape = [int(d) for d in b.get("shape", [])]
        if name == "optimizer.step":
            value = np.array(steps, dtype=np.int64)
        else:
            param, kind = name, "fp32"
            for suffix in (".exp_avg_sq", ".exp_avg"):
                if name.endswith(suffix) and b["role"] == "state":
                    param, kind = name[:-len(suffix)], suffix[1:]
                    break
            if b["role"] == "state" and kind == "fp32":
                fail("zero-run's state %s has no DeepSpeed counterpart (AdamW's exp_avg "
                     "and exp_avg_sq only)" % name)
            if param not in tensors or kind not in tensors[param]:
                fail("the DeepSpeed checkpoint has no %s for parameter %s" % (kind, param))
            used.add(param)
            value = tensors[param][kind].detach().to(torch.float32).numpy()
            if list(value.shape) != shape:
                fail("parameter %s: DeepSpeed's %s has shape %s, the model's %s"
                     % (param, kind, list(value.shape), shape))
        if b["dtype"] not in ("f32", "i64") or value.nbytes != nbytes:
            fail("zero-run's buffer %s (%s, %d bytes) is not what this tool fills"
                 % (name, b["dtype"], nbytes))
        payload[offset:offset + nbytes] = value.tobytes()
    extra = sorted(set(tensors) - used)
    if extra:
        fail("the DeepSpeed checkpoint holds parameters the model does not: %s"
             % ", ".join(extra))
    chunk = int(manifest["chunk_bytes"])
    f = manifest["files"][0]
    f["checksum"] = "%016x" % fnv1a64(payload)
    f["chunk_checksums"] = ["%016x" % fnv1a64(payload[i:i + chunk])
                            for i in range(0, len(payload), chunk)]
    HEADER.pack_into(blob, 0, magic, version, reserved, length, int(f["checksum"], 16))
    with open(rank_path, "wb") as out:
        out.write(blob)
    return manifest


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True, help="the folder of zero-opt and zero-run")
    p.add_argument("--model", required=True, help="the ONNX model zero-opt compiles")
    p.add_argument("--checkpoint", required=True, help="the folder save_checkpoint wrote")
    p.add_argument("--tag", help="the checkpoint's tag (default: its 'latest')")
    p.add_argument("-o", "--output", required=True, help="the zero-run checkpoint to write")
    a = p.parse_args()
    if os.path.exists(a.output):
        fail("%s exists: give a new folder" % a.output)
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    parent = os.path.dirname(os.path.abspath(a.output))
    with tempfile.TemporaryDirectory(dir=parent) as work:
        states, tensors = load_deepspeed(a.checkpoint, a.tag, work)
        ds = states.get("ds_config", {})
        if ds.get("fp16", {}).get("enabled"):
            fail("an fp16 run: its loss scaler's state has no counterpart in zero-run "
                 "(bf16 and fp32 runs import)")
        kind = str(ds.get("optimizer", {}).get("type", "AdamW")).lower()
        if kind not in ("adam", "adamw"):
            fail("optimizer %s: only Adam and AdamW import" % kind)
        step_dir = template(a.bin, a.model, work)
        manifest = fill(step_dir, states, tensors)
        steps = int(states["global_steps"])
        manifest["step"] = str(steps)
        manifest["samples"] = str(int(states["global_samples"]))
        scheduler = states.get("lr_scheduler") or {}
        manifest["schedule_iteration"] = str(int(scheduler.get("last_batch_iteration",
                                                                steps - 1)) + 1)
        manifest["grad_accum_steps"] = int(ds.get("gradient_accumulation_steps", 1))
        manifest["manifest_checksum"] = "0" * 16
        text = json.dumps(manifest, indent=2) + "\n"
        at = text.index(CHECKSUM_KEY) + len(CHECKSUM_KEY)
        text = text[:at] + "%016x" % fnv1a64(text.encode()) + text[at + 16:]
        with open(os.path.join(step_dir, "manifest.json"), "w") as f:
            f.write(text)
        # zero-run names the step folder and `latest` as it does for its own.
        out = os.path.join(work, "out")
        os.makedirs(out)
        shutil.move(step_dir, os.path.join(out, "step-%d" % steps))
        with open(os.path.join(out, "latest"), "w") as f:
            f.write("step-%d" % steps)
        os.rename(out, a.output)
    print("%s: DeepSpeed step %d (%d samples, ZeRO stage %s, %d parameters) as a zero-run "
          "checkpoint in %s" % (a.checkpoint, steps, int(states["global_samples"]),
                                ds.get("zero_optimization", {}).get("stage", 0), len(tensors),
                                a.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
