#!/usr/bin/env python3
# Splits a safetensors file into the layouts a save_pretrained folder can have,
# and broken ones, under OUT/:
#   sharded/   two shards and model.safetensors.index.json (as save_pretrained
#              writes with max_shard_size)
#   absent/    the same index, the second shard missing
#   escape/    an index naming a shard outside its folder ('../all.safetensors')
#   wrongfile/ an index that puts a tensor in the shard without it
#
#   shard-checkpoint.py ALL.safetensors OUT
import json
import os
import shutil
import sys

from safetensors.numpy import load_file, save_file


def write(folder, shards, weight_map, copy=None):
    os.makedirs(folder, exist_ok=True)
    for name, tensors in shards.items():
        if copy is None or name in copy:
            save_file(tensors, os.path.join(folder, name), metadata={"format": "pt"})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def main():
    src, out = sys.argv[1], sys.argv[2]
    tensors = load_file(src)
    names = sorted(tensors)
    half = len(names) // 2
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    shards = {files[0]: {n: tensors[n] for n in names[:half]},
              files[1]: {n: tensors[n] for n in names[half:]}}
    weight_map = {n: files[0] if k < half else files[1] for k, n in enumerate(names)}
    for d in ("sharded", "absent", "escape", "wrongfile"):
        shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    write(os.path.join(out, "sharded"), shards, weight_map)
    write(os.path.join(out, "absent"), shards, weight_map, copy={files[0]})
    escape = dict(weight_map)
    escape[names[0]] = "../all.safetensors"
    write(os.path.join(out, "escape"), shards, escape)
    wrong = dict(weight_map)
    wrong[names[-1]] = files[0]
    write(os.path.join(out, "wrongfile"), shards, wrong)


if __name__ == "__main__":
    main()
