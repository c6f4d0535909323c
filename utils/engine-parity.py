#!/usr/bin/env python3
# One DeepSpeed config, two engines: the real DeepSpeed engine (or PyTorch's FSDP2)
# and zero-run train the same model on the same samples per rank, and every step's
# loss and the final weights must agree.
#
#   engine-parity.py --bin BUILD/bin --work DIR --engine deepspeed|fsdp2
#                    --model gpt|llama|hf-llama [--stages 1,2,3] [--steps 12]
#                    [--grad-accum 2] [--clip 0.05] [--scheduler WarmupDecayLR]
#                    [--world-size 2] [--loss-rtol 1e-6] [--weight-rtol 1e-5]
#
# For each stage the driver writes one DeepSpeed JSON config (micro-batch, gradient
# accumulation, clipping, AdamW, the scheduler, zero_optimization with small buckets
# and a small persistence threshold, so that this small model has several buckets
# and sharded parameters) and gives the same file to
#   - deepspeed.initialize (DeepSpeed's CPU accelerator, gloo, one process per rank,
#     one thread each), or, --engine fsdp2, to a loop that reads the same keys:
#     fully_shard on each block and the root over a CPU device mesh (gloo),
#     reshard_after_forward on for stage 3 and off for stage 2 (FSDP2's ZeRO-2),
#     torch.optim.AdamW, torch's clip_grad_norm_, DeepSpeed's own scheduler class
#     (deepspeed.runtime.lr_schedules) stepped after each optimizer step as
#     DeepSpeed's engine steps it, gradient sync only on a step's last micro-batch;
#   - zero-opt --deepspeed CONFIG --world-size N, then zero-run on N ranks (threads).
# Both read the same samples: rank r's micro-batch m of step s is global samples
# s*G + (m*N + r)*B ... + B - 1 (G = A*N*B, docs/Design.md's data order). The step's
# loss is the mean of its A*N micro-batch losses (DeepSpeed's: all-reduced here).
#
# Models: the project's GPT and Llama-style model (utils/zero_models.py, exported
# by utils/zero_export.py), and a Hugging Face LlamaForCausalLM from a tiny config
# (utils/hf_export.py: random weights, grouped-query attention) exported as a user
# would (torch.onnx.export with input_ids and labels; the model shifts the labels).
#
# Checked: each step's loss within --loss-rtol (relative), the learning rate each
# step used within 1e-9 of DeepSpeed's scheduler, the gradient norm (with clipping)
# within --norm-rtol of DeepSpeed's get_global_grad_norm (DeepSpeed engine only), and
# every trained tensor (DeepSpeed's: its optimizer's f32 copy) within --weight-rtol
# (|w - w_ref| / |w_ref|, Frobenius), the model's buffers bit for bit. Exit 1 on a
# mismatch.
#
# --precision bf16 adds "bf16": {"enabled": true}. The recipes differ, so only the
# mixed-precision tolerances hold: DeepSpeed's bf16 runs the module itself in bf16
# (norms, softmax and the loss too; f32 master weights in its optimizer), zero-opt's
# --precision=bf16 is autocast's (bf16 matrix products, f32 elsewhere). The project's
# GPT and Llama-style model cannot run under DeepSpeed's bf16 at all (their f32
# buffers meet bf16 activations: "expected m1 and m2 to have the same dtype"); the
# Hugging Face Llama can.
#
# DeepSpeed's CPU accelerator JIT-builds one C++ op (its shared-memory all-reduce)
# the first time; it is kept beside the Python environment
# (VENV-torch-extensions), as the environment is kept, not in the build folder.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_export  # noqa: E402
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

VOCAB, SEQ, HEADS, LAYERS = 64, 16, 4, 2
LR = 3e-3

# DeepSpeed's schedulers zero-opt reads, each with its own parameters.
SCHEDULERS = {
    "none": None,
    "WarmupLR": {"warmup_min_lr": 0.0, "warmup_max_lr": LR, "warmup_num_steps": 4,
                 "warmup_type": "linear"},
    "WarmupDecayLR": {"warmup_min_lr": 0.0, "warmup_max_lr": LR, "warmup_num_steps": 4,
                      "warmup_type": "linear", "total_num_steps": 16},
    "WarmupCosineLR": {"warmup_num_steps": 4, "warmup_type": "log", "total_num_steps": 16,
                       "warmup_min_ratio": 0.1, "cos_min_ratio": 0.05},
}


def deepspeed_accepts(key):
    """Whether DeepSpeed's ZeRO config (pydantic, extra keys forbidden) takes `key`."""
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    return any(key in (name, field.alias)
               for name, field in DeepSpeedZeroConfig.model_fields.items())


def tutorial_sections(a):
    """--tutorial-config's zero_optimization as zero-opt reads it (the file's own),
    and as DeepSpeed 0.19.8 takes it: the tutorial's `cpu_offload_params` (DeepSpeed
    now spells it `cpu_offload_param`) becomes offload_param to the CPU, and a key
    DeepSpeed refuses (the misspelled `stage3_param_persitance_threshold`) is left
    out, said here; zero-opt warns about it and takes the default, as DeepSpeed's
    default is what a run without the key gets."""
    zero = json.load(open(a.tutorial_config))["zero_optimization"]
    ds = {}
    for key, value in zero.items():
        if key == "cpu_offload_params":
            if value:
                ds["offload_param"] = {"device": "cpu"}
        elif deepspeed_accepts(key):
            ds[key] = value
        else:
            print("%s: DeepSpeed refuses zero_optimization.%s; it is left out of "
                  "DeepSpeed's copy" % (a.tutorial_config, key))
    return zero, ds


def deepspeed_config(a, stage, zero_section=None):
    """The config of one case; `zero_section` replaces its zero_optimization."""
    cfg = {
        "train_micro_batch_size_per_gpu": a.batch,
        "gradient_accumulation_steps": a.grad_accum,
        "steps_per_print": 1000000,
        # eps 1e-6, not 1e-8: the key projection's bias has a gradient of zero in
        # exact arithmetic (softmax ignores a shift shared by a row of scores), and
        # Adam would scale its rounding noise, which differs between any two
        # implementations, to full-size steps (as utils/hf-parity.py says).
        "optimizer": {"type": "AdamW",
                      "params": {"lr": LR, "betas": [0.9, 0.999], "eps": 1e-6,
                                 "weight_decay": 0.01, "torch_adam": True}},
        "zero_optimization": {
            "stage": stage,
            # Elements: a few buckets for this model, and, at stage 3, every
            # weight matrix sharded (the norms and biases kept whole).
            "reduce_bucket_size": 5000,
            "allgather_bucket_size": 5000,
            "stage3_prefetch_bucket_size": 5000,
            "stage3_param_persistence_threshold": 100,
            "overlap_comm": True,
        },
    }
    if zero_section is not None:
        cfg["zero_optimization"] = dict(zero_section)
    if a.clip > 0:
        cfg["gradient_clipping"] = a.clip
    z = cfg["zero_optimization"]
    if "offload_optimizer" in z or z.get("cpu_offload"):
        del cfg["optimizer"]["params"]["torch_adam"]  # DeepSpeed's CPU Adam, as below
    if a.offload_optimizer:
        # DeepSpeed's own CPU Adam (its cpu_adam op), not torch's.
        cfg["zero_optimization"]["offload_optimizer"] = {"device": "cpu"}
        cfg["optimizer"]["params"].pop("torch_adam", None)
    if a.precision == "bf16":
        cfg["bf16"] = {"enabled": True}
    if SCHEDULERS[a.scheduler]:
        cfg["scheduler"] = {"type": a.scheduler, "params": dict(SCHEDULERS[a.scheduler])}
    return cfg


def build_model(a):
    if a.model == "hf-llama":
        return hf_export.build("llama", positions=2 * SEQ)
    torch.manual_seed(0)
    return zero_models.build(a.model, layers=LAYERS, hidden=a.hidden, heads=HEADS,
                             vocab=VOCAB, seq=SEQ)


def loss_of(a, model, tokens, targets):
    """The model's mean loss on one micro-batch; a Hugging Face model takes the
    window as input_ids and labels and shifts them itself (as zero-run feeds it)."""
    if a.model == "hf-llama":
        return model(input_ids=tokens, labels=tokens).loss
    return model(tokens, targets)


def blocks_of(a, model):
    """The transformer blocks FSDP2 shards one by one."""
    return model.model.layers if a.model == "hf-llama" else model.blocks


# --- the reference engines, one process per rank --------------------------------

def micro_batches(data, step, rank, a):
    """Rank `rank`'s micro-batches of `step` (docs/Design.md's order)."""
    g = a.grad_accum * a.world_size * a.batch
    for m in range(a.grad_accum):
        first = step * g + (m * a.world_size + rank) * a.batch
        yield zero_models.make_samples(data, first, a.batch, SEQ)


def train_deepspeed(a, cfg, model, data, rank):
    import deepspeed
    engine, optimizer, _, scheduler = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=cfg)
    losses, lrs, norms = [], [], []
    for step in range(a.steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        total = 0.0
        for tokens, targets in micro_batches(data, step, rank, a):
            loss = loss_of(a, engine, tokens, targets)
            engine.backward(loss)
            engine.step()
            total += loss.item()
        losses.append(total)
        norm = engine.get_global_grad_norm()
        norms.append(float(norm) if norm is not None else float("nan"))
        if step + 1 == a.checkpoint_at:
            # DeepSpeed's own checkpoint; the run goes on, as a run that saves does.
            engine.save_checkpoint(os.path.join(a.work, "stage%d" % cfg["zero_optimization"]
                                                ["stage"], "deepspeed-checkpoint"))
    # The optimizer's f32 parameters (with bf16, the module holds bf16 copies), whole
    # at every stage; buffers from the module.
    from deepspeed.utils import safe_get_full_fp32_param
    state = {k: v.detach().clone() for k, v in engine.module.named_buffers()}
    for k, p in engine.module.named_parameters():
        state[k] = safe_get_full_fp32_param(p).detach().clone()
    engine.destroy()
    return losses, lrs, norms, state


def train_fsdp2(a, cfg, model, data, rank):
    import torch.distributed as dist
    from deepspeed.runtime import lr_schedules
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (a.world_size,))
    reshard = cfg["zero_optimization"]["stage"] == 3
    for block in blocks_of(a, model):
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    p = cfg["optimizer"]["params"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=p["lr"], betas=tuple(p["betas"]),
                                  eps=p["eps"], weight_decay=p["weight_decay"])
    scheduler = None
    if "scheduler" in cfg:
        scheduler = getattr(lr_schedules, cfg["scheduler"]["type"])(
            optimizer, **cfg["scheduler"]["params"])
    losses, lrs = [], []
    for step in range(a.steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        total = 0.0
        for m, (tokens, targets) in enumerate(micro_batches(data, step, rank, a)):
            model.set_requires_gradient_sync(m == a.grad_accum - 1)
            loss = loss_of(a, model, tokens, targets)
            (loss / a.grad_accum).backward()
            total += loss.item()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        optimizer.step()
        optimizer.zero_grad()
        if scheduler is not None:
            scheduler.step()
        losses.append(total)
    state = {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone()
             for k, v in model.state_dict().items()}
    dist.barrier()
    return losses, lrs, [], state


def rank_main(rank, a, port, cases):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(a.world_size),
                      LOCAL_SIZE=str(a.world_size))
    torch.set_num_threads(1)
    import torch.distributed as dist
    if a.engine == "deepspeed":
        import deepspeed
        deepspeed.init_distributed(dist_backend="gloo")
    else:
        dist.init_process_group("gloo")
    data = torch.from_numpy(np.fromfile(os.path.join(a.work, "tokens.u8"),
                                        dtype=np.uint8).astype(np.int64))
    initial = torch.load(os.path.join(a.work, "initial.pt"))
    for stage, work in cases:
        cfg = json.load(open(os.path.join(work, "ds_config.json")))
        model = build_model(a)
        model.load_state_dict(initial)
        train = train_deepspeed if a.engine == "deepspeed" else train_fsdp2
        losses, lrs, norms, state = train(a, cfg, model, data, rank)
        sums = torch.tensor(losses, dtype=torch.float64)
        dist.all_reduce(sums)
        if rank == 0:
            n = a.grad_accum * a.world_size
            json.dump({"loss": [v / n for v in sums.tolist()], "lr": lrs, "grad_norm": norms},
                      open(os.path.join(work, "reference.json"), "w"))
            np.savez(os.path.join(work, "reference.npz"),
                     **{k: v.numpy() for k, v in state.items()})
        dist.barrier()
    dist.destroy_process_group()


def run_reference(a, cases):
    """Every case's reference run in one set of rank processes (the engines start
    once: DeepSpeed's start costs seconds per process)."""
    import torch.multiprocessing as mp
    mp.spawn(rank_main, args=(a, zero_testing.free_port(), cases), nprocs=a.world_size,
             join=True)


def prebuild_deepspeed_ops(a):
    """DeepSpeed's CPU accelerator builds its ops at first use (its shared-memory
    all-reduce; cpu_adam for optimizer offload): once, here, rather than in each
    rank at once."""
    from deepspeed.accelerator import get_accelerator
    names = ["ShareMemCommBuilder"] + (["CPUAdamBuilder"] if a.cpu_adam else [])
    for name in names:
        builder = get_accelerator().create_op_builder(name)
        if builder is None:
            raise SystemExit("DeepSpeed's CPU accelerator has no %s" % name)
        builder.load(verbose=False)


# --- zero-run --------------------------------------------------------------------

def run_zero(a, work, onnx_path, data_path):
    plan = os.path.join(work, "step.zplan")
    config = os.path.join(work, "zero_config.json")
    if not os.path.exists(config):
        config = os.path.join(work, "ds_config.json")
    subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "--deepspeed",
                    config, "--world-size=%d" % a.world_size,
                    "-o", plan], check=True, stderr=subprocess.DEVNULL)
    log = os.path.join(work, "zero-run.json")
    trained = os.path.join(work, "trained.onnx")
    subprocess.run([os.path.join(a.bin, "zero-run"), plan, "--device=cpu", "--init", onnx_path,
                    "--data", data_path, "--steps", str(a.steps), "--log-json", log,
                    "--save-weights", trained, "--quiet"], check=True)
    return [json.loads(line) for line in open(log)], trained


def resume_imported(a, stage, work, onnx_path, data_path):
    """DeepSpeed's checkpoint imported (utils/deepspeed-import.py) and resumed by
    zero-run on each of --resume-world-sizes ranks, with as many micro-batches per
    step as keep DeepSpeed's global batch: its next losses against DeepSpeed's own
    continuation."""
    imported = os.path.join(work, "imported")
    shutil.rmtree(imported, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "deepspeed-import.py"),
                    "--bin", a.bin, "--model", onnx_path, "--checkpoint",
                    os.path.join(work, "deepspeed-checkpoint"), "-o", imported], check=True)
    ref = json.load(open(os.path.join(work, "reference.json")))["loss"][a.checkpoint_at:]
    ok = True
    g = a.grad_accum * a.world_size * a.batch
    for world in a.resume_world_sizes:
        if g % (world * a.batch):
            raise SystemExit("the global batch %d is no whole number of micro-batches of %d "
                             "on %d ranks" % (g, a.batch, world))
        accum = g // (world * a.batch)
        plan = os.path.join(work, "resume-w%d.zplan" % world)
        subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "--deepspeed",
                        os.path.join(work, "ds_config.json"), "--world-size=%d" % world,
                        "--grad-accum-steps=%d" % accum, "-o", plan],
                       check=True, stderr=subprocess.DEVNULL)
        log = os.path.join(work, "resumed-w%d.json" % world)
        r = subprocess.run([os.path.join(a.bin, "zero-run"), plan, "--device=cpu", "--init",
                            onnx_path, "--data", data_path, "--steps", str(a.steps),
                            "--resume", imported, "--log-json", log],
                           capture_output=True, text=True)
        sys.stdout.write("".join(l + "\n" for l in r.stdout.splitlines() if "resumed" in l))
        if r.returncode != 0:
            print(r.stderr)
            return False
        got = [json.loads(line)["loss"] for line in open(log)]
        worst = max((abs(x - y) / abs(y) for x, y in zip(got, ref)), default=float("inf"))
        good = len(got) == len(ref) == a.steps - a.checkpoint_at and worst <= a.loss_rtol
        print("stage %d checkpoint of DeepSpeed's step %d resumed by zero-run on %d ranks "
              "(%d micro-batches each): steps %d-%d, worst loss difference from DeepSpeed's "
              "continuation %.2e (limit %g): %s"
              % (stage, a.checkpoint_at, world, accum, a.checkpoint_at + 1, a.steps, worst,
                 a.loss_rtol, "ok" if good else "MISMATCH"))
        for i, (x, y) in enumerate(zip(got, ref)):
            print("%4d  %13.9f  %13.9f" % (a.checkpoint_at + i + 1, x, y))
        ok &= good
    return ok


def compare(a, stage, work, onnx_path, parameters, trainable, entries, trained, folded,
            layouts):
    ref = json.load(open(os.path.join(work, "reference.json")))
    state = dict(np.load(os.path.join(work, "reference.npz")))
    name = "DeepSpeed" if a.engine == "deepspeed" else "FSDP2"
    ok = len(entries) == a.steps
    print("%s, ZeRO stage %d, %d ranks, %d micro-batches per step, clip %g, %s:"
          % (a.model, stage, a.world_size, a.grad_accum, a.clip, a.scheduler))
    print("step  zero-run loss   %-13s  rel. error" % (name + " loss"))
    worst = 0.0
    for i, (e, r) in enumerate(zip(entries, ref["loss"])):
        rel = abs(e["loss"] - r) / abs(r)
        worst = max(worst, rel)
        print("%4d  %13.9f  %13.9f   %.2e" % (i + 1, e["loss"], r, rel))
    ok &= worst <= a.loss_rtol
    if a.scheduler != "none":
        worst_lr = max(abs(e.get("lr", float("nan")) - r) for e, r in zip(entries, ref["lr"]))
        print("learning rates: worst difference from the rates %s used %.2e (limit 1e-9)"
              % (name, worst_lr))
        ok &= worst_lr <= 1e-9
    if a.clip > 0 and ref["grad_norm"]:
        worst_norm = max(abs(e.get("grad_norm", float("nan")) - r) / r
                         for e, r in zip(entries, ref["grad_norm"]))
        clipped = sum(r > a.clip for r in ref["grad_norm"])
        print("gradient norms: worst relative difference from DeepSpeed's %.2e (limit "
              "%g); %d of %d steps clipped" % (worst_norm, a.norm_rtol, clipped, a.steps))
        ok &= worst_norm <= a.norm_rtol and clipped > 0
    before = {t.name: nh.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
    worst_w, compared, buffers, moved = 0.0, 0, 0, 0
    covered = set()  # the parameters compared, directly or through a fold
    for init in onnx.load(trained).graph.initializer:
        got = nh.to_array(init)
        if init.name not in trainable:
            buffers += 1
            if got.tobytes() != before[init.name].tobytes():
                print("initializer %s is not trained but changed" % init.name)
                ok = False
            continue
        want = hf_export.expected_value(init.name, got.shape, state, folded,
                                        layouts).astype(np.float64)
        rel = np.linalg.norm(got.astype(np.float64) - want) / max(np.linalg.norm(want), 1e-30)
        worst_w = max(worst_w, rel)
        compared += 1
        covered.add(folded.get(init.name, init.name))
        moved += not np.array_equal(want, before[init.name].astype(np.float64))
        if rel > a.weight_rtol:
            print("weight %s differs from %s's: relative error %.2e" % (init.name, name, rel))
            ok = False
    missing = sorted(set(parameters) - covered)
    if missing:
        print("parameters not in zero-run's weights: %s" % ", ".join(missing))
    ok &= compared == len(trainable) and moved == compared and not missing
    print("stage %d: worst loss error %.2e (limit %g), worst weight error %.2e over %d "
          "tensors, all trained (limit %g), %d buffers bit for bit: %s"
          % (stage, worst, a.loss_rtol, worst_w, compared, a.weight_rtol, buffers,
             "ok" if ok else "MISMATCH"))
    return ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--engine", choices=["deepspeed", "fsdp2"], required=True)
    p.add_argument("--model", choices=["gpt", "llama", "hf-llama"], default="gpt")
    p.add_argument("--stages", type=zero_testing.int_list, default=[1, 2, 3])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--batch", type=int, default=2, help="each rank's micro-batch")
    p.add_argument("--grad-accum", type=int, default=2)
    p.add_argument("--clip", type=float, default=0.05)
    p.add_argument("--scheduler", choices=sorted(SCHEDULERS), default="WarmupDecayLR")
    p.add_argument("--hidden", type=int, default=32, help="the model's width")
    p.add_argument("--tutorial-config",
                   help="a DeepSpeed config (../shared/deepspeed's): its zero_optimization "
                        "section, and its stage, replace the driver's")
    p.add_argument("--offload-optimizer", action="store_true",
                   help="offload_optimizer to the CPU (DeepSpeed: its cpu_adam op)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--checkpoint-at", type=int, default=0,
                   help="DeepSpeed saves a checkpoint after this many steps; "
                        "utils/deepspeed-import.py makes it zero-run's, and zero-run "
                        "resumes it on each of --resume-world-sizes")
    p.add_argument("--resume-world-sizes", type=zero_testing.int_list, default=[2, 3])
    p.add_argument("--loss-rtol", type=float, default=1e-6)
    p.add_argument("--weight-rtol", type=float, default=1e-5)
    p.add_argument("--norm-rtol", type=float, default=1e-5)
    a = p.parse_args()
    if a.engine == "fsdp2" and any(s not in (2, 3) for s in a.stages):
        p.error("--engine fsdp2 compares stages 2 (reshard_after_forward off) and 3 (on)")
    a.work = os.path.abspath(a.work)
    os.makedirs(a.work, exist_ok=True)
    zero_testing.use_deepspeed_cpu()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    rng = np.random.RandomState(1)
    data_path = os.path.join(a.work, "tokens.u8")
    rng.randint(0, VOCAB, size=4096).astype(np.uint8).tofile(data_path)
    initial = build_model(a)
    torch.save(initial.state_dict(), os.path.join(a.work, "initial.pt"))
    onnx_path = os.path.join(a.work, "model.onnx")
    # Trained initializers: name -> the parameter it is (or was folded from by the
    # exporter, laid out as `layouts` says).
    folded, layouts = {}, {}
    if a.model == "hf-llama":
        hf_export.export(initial, onnx_path, a.batch, SEQ)
        parameters = {k for k, _ in initial.named_parameters()}
        folded = hf_export.folded_sources(onnx_path, parameters)
        state0 = {k: v.detach().numpy() for k, v in initial.state_dict().items()}
        exported = {t.name: nh.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
        layouts = {n: hf_export.layout(exported[n], state0[src])
                   for n, src in folded.items() if n in exported}
        trainable = (parameters | set(layouts)) & set(exported)
    else:
        trainable = set(zero_models.export(initial, onnx_path, a.batch, SEQ, VOCAB))
        parameters = trainable

    cases = []
    if a.tutorial_config:
        zero, ds = tutorial_sections(a)
        a.stages = [int(zero.get("stage", 0))]
    for stage in a.stages:
        work = os.path.join(a.work, "stage%d" % stage)
        os.makedirs(work, exist_ok=True)
        if a.tutorial_config:
            # zero-opt reads the tutorial's own section; DeepSpeed its copy.
            with open(os.path.join(work, "zero_config.json"), "w") as f:
                json.dump(deepspeed_config(a, stage, zero), f, indent=2)
            with open(os.path.join(work, "ds_config.json"), "w") as f:
                json.dump(deepspeed_config(a, stage, ds), f, indent=2)
        else:
            with open(os.path.join(work, "ds_config.json"), "w") as f:
                json.dump(deepspeed_config(a, stage), f, indent=2)
        cases.append((stage, work))
    # Without torch_adam (optimizer offload), DeepSpeed runs its own CPU Adam.
    a.cpu_adam = any("torch_adam" not in json.load(open(os.path.join(w, "ds_config.json")))
                     ["optimizer"]["params"] for _, w in cases)
    if a.engine == "deepspeed":
        prebuild_deepspeed_ops(a)
    run_reference(a, cases)
    ok = True
    for stage, work in cases:
        if a.checkpoint_at:
            ok &= resume_imported(a, stage, work, onnx_path, data_path)
            continue
        entries, trained = run_zero(a, work, onnx_path, data_path)
        ok &= compare(a, stage, work, onnx_path, parameters, trainable, entries, trained,
                      folded, layouts)
    print("all agree" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
