#!/usr/bin/env python3
# Kernels and bytes that only move data, per step, in a compiled plan: with views
# (reshapes and contiguous slices read their input in place; stage-3 parameters are
# read in place from their gathered bucket) and without (zero-opt --no-views).
#
#   count-copies.py --bin BUILD/bin --work DIR [--layers 12 --hidden 768 --heads 12
#                   --vocab 50257 --seq 1024] [--stage 3 --world-size 4]
#                   [--precision fp32|bf16]
#
# GPT-2 small by default (utils/gen_gpt_onnx.py, weights never written). Counts every
# kernel by kind, and for the data-movement kernels (reshape, copy, slice,
# transpose, concat, expand) the bytes they write. A measurement of the plan, not a
# test. Run with build/python-env/bin/python (the tests' environment).
import argparse
import collections
import os
import subprocess
import sys

MOVES = ("reshape", "copy", "slice", "transpose", "concat", "expand")


def load_plan(path, pb2):
    sys.path.insert(0, pb2)
    import zplan_pb2  # noqa: E402
    data = open(path, "rb").read()
    plan = zplan_pb2.Plan()
    plan.ParseFromString(data[32:])
    return plan


def kind_name(kernel):
    """The kernel's kind as the plan dialect spells it ("matmul")."""
    return type(kernel).Kind.Name(kernel.kind).lower()


def summary(plan):
    names = [kind_name(k) for k in plan.kernels]
    kernels = collections.Counter(names)
    moved = collections.Counter()
    for k, name in zip(plan.kernels, names):
        if name in MOVES:
            moved[name] += sum(plan.buffers[b].bytes for b in k.outputs)
    views = sum(1 for b in plan.buffers if b.HasField("view_of"))
    return kernels, moved, views, plan.arena_bytes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--stage", type=int, default=3)
    p.add_argument("--world-size", type=int, default=4)
    p.add_argument("--precision", default="fp32")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    model = os.path.join(a.work, "gpt.onnx")
    subprocess.run([sys.executable, os.path.join(here, "gen_gpt_onnx.py"), model,
                    "--layers", str(a.layers), "--hidden", str(a.hidden), "--heads",
                    str(a.heads), "--vocab", str(a.vocab), "--seq", str(a.seq),
                    "--batch", "1"], check=True)
    pb2 = os.path.join(a.work, "pb2")
    os.makedirs(pb2, exist_ok=True)
    proto = os.path.join(here, "..", "include", "zplan")
    subprocess.run(["protoc", "--python_out=" + pb2, "-I", proto,
                    os.path.join(proto, "zplan.proto")], check=True)
    rows = {}
    for name, extra in (("copies", ["--no-views"]), ("views", [])):
        plan = os.path.join(a.work, name + ".zplan")
        subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan,
                        "--zero-stage=%d" % a.stage, "--world-size=%d" % a.world_size,
                        "--precision=" + a.precision] + extra, check=True)
        rows[name] = summary(load_plan(plan, pb2))
    print("GPT %d layers, hidden %d, seq %d, %s, ZeRO stage %d on %d ranks: per step"
          % (a.layers, a.hidden, a.seq, a.precision, a.stage, a.world_size))
    print("%-12s %12s %12s" % ("", "--no-views", "views"))
    (k0, m0, v0, arena0), (k1, m1, v1, arena1) = rows["copies"], rows["views"]
    print("%-12s %12d %12d" % ("kernels", sum(k0.values()), sum(k1.values())))
    for name in MOVES:
        print("%-12s %12d %12d   kernels" % (name, k0[name], k1[name]))
    print("%-12s %12.1f %12.1f   MiB written by data-movement kernels" % (
        "moved", sum(m0.values()) / 2**20, sum(m1.values()) / 2**20))
    print("%-12s %12d %12d   buffers that read another's bytes" % ("views", v0, v1))
    print("%-12s %12.1f %12.1f   MiB (the plan's peak per rank)" % (
        "arena", arena0 / 2**20, arena1 / 2**20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
