#!/usr/bin/env python3
# zero-run, the real DeepSpeed engine and FSDP2 side by side on this machine's CPU:
# one GPT-2 of 27.4M parameters (utils/hf_export.py --size cpu: 6 layers, hidden 512,
# 8 heads, vocabulary 16384, sequence 128), 2 ranks as 2 processes of one thread
# each, every ZeRO stage, fp32 and bf16, the same DeepSpeed config for all three.
# A benchmark, not a test.
#
#   bench-engines.py --bin BUILD/bin [--stages 1,2,3] [--precisions fp32,bf16]
#                    [--steps 8 --warmup 3] [--batch 4] [--rounds 1] [--profile]
#                    [--json OUT.json]
#
# Printed per stage and precision: the median ms per step after the warm-up steps and
# each rank's peak resident memory (VmHWM: zero-run's own figure, measured_peak_bytes;
# the Python engines' ru_maxrss, torch and the interpreter included), for
#   zero-run   zero-opt --deepspeed CONFIG --world-size 2; mpirun -np 2 zero-run
#   DeepSpeed  deepspeed.initialize(config=CONFIG), its CPU accelerator over gloo,
#              torch's AdamW ("torch_adam": true), overlap_comm on
#   FSDP2      fully_shard per block and root (reshard_after_forward on for stage 3,
#              off for stage 2; stage 1 has no FSDP2 counterpart), torch.optim.AdamW;
#              bf16: MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
# and the ratio of zero-run's step to the faster peer's. --rounds R measures each
# engine R times, alternating (this machine's speed drifts), and keeps the median.
# --profile adds zero-run's time per kernel kind (zero-run --profile, rank 0) for each
# fp32 stage: where its step goes.
#
# Each step trains on new samples (docs/Design.md's order); the engines see the same
# batches, and their first losses are printed, which must agree (the parity itself is
# utils/engine-parity.py's).
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_testing  # noqa: E402

zero_testing.use_deepspeed_cpu()

import numpy as np  # noqa: E402
import torch  # noqa: E402

import hf_export  # noqa: E402
import zero_models  # noqa: E402

SEQ, VOCAB_USED = 128, 16384


def config(a, stage, precision):
    cfg = {"train_micro_batch_size_per_gpu": a.batch, "gradient_accumulation_steps": 1,
           "steps_per_print": 1000000,
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01,
                                                     "torch_adam": True}},
           "zero_optimization": {"stage": stage, "overlap_comm": True}}
    if precision == "bf16":
        cfg["bf16"] = {"enabled": True}
    return cfg


def batches(data, rank, a):
    for step in range(a.warmup + a.steps):
        first = step * 2 * a.batch + rank * a.batch
        tokens, _ = zero_models.make_samples(data, first, a.batch, SEQ)
        yield tokens


def rank_main(rank, a, port, engine, cfg, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_SIZE="2")
    torch.set_num_threads(1)
    import torch.distributed as dist
    data = torch.from_numpy(np.fromfile(os.path.join(a.work, "tokens.u16"),
                                        dtype=np.uint16).astype(np.int64))
    model = hf_export.build("gpt2", "cpu", positions=SEQ)
    model.load_state_dict(torch.load(os.path.join(a.work, "initial.pt")))
    times, losses = [], []
    if engine == "deepspeed":
        import deepspeed
        deepspeed.init_distributed(dist_backend="gloo")
        eng, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                       config=cfg)
        for tokens in batches(data, rank, a):
            t = time.perf_counter()
            loss = eng(input_ids=tokens, labels=tokens).loss
            eng.backward(loss)
            eng.step()
            times.append((time.perf_counter() - t) * 1e3)
            losses.append(loss.item())
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        dist.init_process_group("gloo")
        mesh = init_device_mesh("cpu", (2,))
        mp = MixedPrecisionPolicy()
        if "bf16" in cfg:
            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        reshard = cfg["zero_optimization"]["stage"] == 3
        for block in model.transformer.h:
            fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        for tokens in batches(data, rank, a):
            t = time.perf_counter()
            loss = model(input_ids=tokens, labels=tokens).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            times.append((time.perf_counter() - t) * 1e3)
            losses.append(loss.item())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = [None, None]
    dist.all_gather_object(result, {"ms": times, "loss": losses, "peak": peak})
    if rank == 0:
        json.dump(result, open(out, "w"))
    dist.barrier()
    dist.destroy_process_group()


def run_python_engine(a, engine, cfg):
    import torch.multiprocessing as mp
    out = os.path.join(a.work, "result.json")
    mp.spawn(rank_main, args=(a, zero_testing.free_port(), engine, cfg, out), nprocs=2,
             join=True)
    ranks = json.load(open(out))
    ms = statistics.median(max(r["ms"][i] for r in ranks)
                           for i in range(a.warmup, a.warmup + a.steps))
    return {"ms": ms, "peak": [r["peak"] for r in ranks],
            "first_loss": statistics.mean(r["loss"][0] for r in ranks)}


def run_zero(a, cfg, stage, precision, profile=False):
    path = os.path.join(a.work, "ds-%d-%s.json" % (stage, precision))
    json.dump(cfg, open(path, "w"))
    plan = os.path.join(a.work, "s%d-%s.zplan" % (stage, precision))
    subprocess.run([os.path.join(a.bin, "zero-opt"), a.onnx, "--deepspeed", path,
                    "--world-size=2", "-o", plan], check=True, stderr=subprocess.DEVNULL)
    log = os.path.join(a.work, "s%d-%s.log.json" % (stage, precision))
    cmd = zero_testing.launcher(2) + [
        os.path.join(a.bin, "zero-run"), plan, "--device=cpu", "--init", a.onnx,
        "--data", os.path.join(a.work, "tokens.u16"), "--data-format=u16",
        "--steps", str(a.warmup + a.steps), "--log-json", log, "--quiet"]
    if profile:
        return subprocess.run(cmd + ["--profile"], check=True, capture_output=True,
                              text=True).stdout
    subprocess.run(cmd, check=True)
    entries = [json.loads(line) for line in open(log)]
    return {"ms": statistics.median(e["ms"] for e in entries[a.warmup:]),
            "peak": entries[-1]["measured_peak_bytes"], "first_loss": entries[0]["loss"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--stages", type=zero_testing.int_list, default=[1, 2, 3])
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=4, help="each rank's micro-batch")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--json", help="write the figures here too")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        a.work = work
        rng = np.random.RandomState(1)
        rng.randint(0, VOCAB_USED, size=1 << 18).astype(np.uint16).tofile(
            os.path.join(work, "tokens.u16"))
        model = hf_export.build("gpt2", "cpu", positions=SEQ)
        torch.save(model.state_dict(), os.path.join(work, "initial.pt"))
        a.onnx = os.path.join(work, "model.onnx")
        hf_export.export(model, a.onnx, a.batch, SEQ)
        n = sum(q.numel() for q in model.parameters())
        print("GPT-2, %.1fM parameters, sequence %d, micro-batch %d per rank, 2 ranks of "
              "one thread (%s)" % (n / 1e6, SEQ, a.batch, os.uname().machine))
        rows = []
        for precision in a.precisions.split(","):
            for stage in a.stages:
                cfg = config(a, stage, precision)
                engines = ["zero-run", "deepspeed"] + (["fsdp2"] if stage >= 2 else [])
                got = {e: [] for e in engines}
                for _ in range(a.rounds):
                    for e in engines:
                        got[e].append(run_zero(a, cfg, stage, precision) if e == "zero-run"
                                      else run_python_engine(a, e, cfg))
                med = {e: sorted(r, key=lambda x: x["ms"])[len(r) // 2] for e, r in got.items()}
                peer = min((e for e in engines if e != "zero-run"), key=lambda e: med[e]["ms"])
                row = {"stage": stage, "precision": precision,
                       "ratio": med["zero-run"]["ms"] / med[peer]["ms"], "faster_peer": peer}
                row.update({e: med[e] for e in engines})
                rows.append(row)
                print("stage %d %s: " % (stage, precision) + "; ".join(
                    "%s %.1f ms, peak %s MiB, first loss %.5f" % (
                        e, med[e]["ms"], "/".join("%.0f" % (b / 2**20) for b in med[e]["peak"]),
                        med[e]["first_loss"]) for e in engines)
                      + "; zero-run / %s = %.2f" % (peer, row["ratio"]), flush=True)
        print("\n| stage | precision | zero-run ms | DeepSpeed ms | FSDP2 ms | zero-run / "
              "faster peer | peak MiB per rank (zero-run / DeepSpeed / FSDP2) |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            f = r.get("fsdp2")
            print("| %d | %s | %.1f | %.1f | %s | %.2f | %s / %s / %s |" % (
                r["stage"], r["precision"], r["zero-run"]["ms"], r["deepspeed"]["ms"],
                "%.1f" % f["ms"] if f else "-", r["ratio"],
                "%.0f" % (max(r["zero-run"]["peak"]) / 2**20),
                "%.0f" % (max(r["deepspeed"]["peak"]) / 2**20),
                "%.0f" % (max(f["peak"]) / 2**20) if f else "-"))
        if a.profile:
            for stage in a.stages:
                print("\nzero-run --profile, stage %d fp32 (rank 0):" % stage)
                print(run_zero(a, config(a, stage, "fp32"), stage, "fp32", profile=True))
        if a.json:
            json.dump(rows, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
