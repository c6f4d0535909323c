#!/usr/bin/env python3
# Times one training step (forward, backward, AdamW) of a GPT of a few million
# parameters in zero-run and in PyTorch eager (CPU) on this machine,
# and prints both and their ratio. A benchmark, not a test.
#
#   bench-train-step.py --bin BUILD/bin [--threads N] [--layers 4 --hidden 256
#                       --heads 8 --vocab 256 --seq 128 --batch 8] [--steps 20 --warmup 3]
#                       [--precision bf16|fp16] [--recompute cheap|blocks] [--offload]
#                       [--profile] [--repeat R] [--unfused] [--attention-parts]
#                       [--separate-epilogue]
#
# With --precision, zero-run also runs the step compiled with zero-opt --precision
# (and, for bf16, PyTorch under torch.autocast("cpu", torch.bfloat16)), next to fp32.
# With --recompute, zero-run also runs the fp32 step with activation checkpointing,
# next to the extra FLOPs and the peak saved that zero-opt's report gives for it.
# With --offload, zero-run also runs the step as ZeRO stage 2 on one rank (in
# --precision) with and without --offload-optimizer=cpu, next to the report's device
# and host bytes: on the CPU backend the "device" is the host too, so this measures
# what the split costs (the copies, the host kernels' thread), not a PCIe link.
# With --repeat R, the fp32 figures are measured R times, zero-run and PyTorch
# alternating (this machine's speed drifts by several percent from minute to
# minute), and the median of the R ratios is printed with each.
# With --unfused, zero-run also runs the fp32 step compiled with zero-opt --no-fusion
# (a kernel per elementwise op), next to the fused one.
# With --attention-parts, zero-run also runs the fp32 step compiled with zero-opt
# --no-attention-fusion (attention as its parts: scores, mask, softmax, values), the
# two alternating --repeat times (at least 3), and prints both medians.
# With --separate-epilogue, likewise against the step compiled with zero-opt
# --no-epilogue-fusion (a product's bias and residual added by kernels of their own).
# With --profile, zero-run's fp32 run also prints its time per kernel kind (zero-run
# --profile), a separate run after the timed one so profiling does not slow the figure.
#
# Both train the same model on the same batches (docs/Design.md's data order); the figure
# is the median step time after the warm-up steps. zero-run gets N threads (default:
# every core). PyTorch's fp32 step is timed at one thread and at N, each in a process
# of its own (OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set before torch loads: Debian's
# torch does its GEMMs in the same OpenBLAS as zero-run, and torch.set_num_threads
# alone would leave that pool at every core); its best is the figure compared (on a
# small CPU, PyTorch is often slower at N threads than at one).
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def thread_count():
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return str(os.cpu_count() or 1)


THREADS = thread_count()
os.environ["OMP_NUM_THREADS"] = THREADS
os.environ["OPENBLAS_NUM_THREADS"] = THREADS

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=int(THREADS),
                   help="threads for both (default: every core)")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="also time the step in this mixed precision")
    p.add_argument("--recompute", choices=["cheap", "blocks"],
                   help="also time the fp32 step with this recomputation")
    p.add_argument("--offload", action="store_true",
                   help="also time stage 2 on one rank with and without optimizer offload")
    p.add_argument("--repeat", type=int, default=1,
                   help="measure the fp32 step this many times, alternating the two")
    p.add_argument("--profile", action="store_true",
                   help="also print zero-run's time per kernel kind for the fp32 step")
    p.add_argument("--unfused", action="store_true",
                   help="also time the fp32 step compiled with --no-fusion")
    p.add_argument("--separate-epilogue", action="store_true",
                   help="also time the fp32 step with a product's bias and residual added "
                        "by kernels of their own (--no-epilogue-fusion), alternating")
    p.add_argument("--attention-parts", action="store_true",
                   help="also time the fp32 step compiled with --no-attention-fusion")
    p.add_argument("--torch-only", action="store_true",
                   help="(internal) print PyTorch's fp32 step time at --threads as JSON")
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    torch.manual_seed(0)
    model = zero_models.GPT(a.layers, a.hidden, a.heads, a.vocab, a.seq)
    n_params = sum(t.numel() for t in model.parameters())
    data = np.random.RandomState(0).randint(0, a.vocab, size=200000).astype(np.uint8)
    tdata = torch.from_numpy(data.astype(np.int64))
    total = a.warmup + a.steps

    def torch_step_ms(autocast):
        m = copy.deepcopy(model)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        times = []
        m.train()
        for step in range(total):
            tokens, targets = zero_models.make_batch(tdata, step, a.batch, a.seq)
            start = time.perf_counter()
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = m(tokens, targets)
            loss.backward()
            opt.step()
            if step >= a.warmup:
                times.append((time.perf_counter() - start) * 1000.0)
        return statistics.median(times)

    if a.torch_only:
        # The export first, as when PyTorch was timed in the main process: its step
        # then runs faster here (one thread: ~280 instead of ~310 ms; the cause was
        # not pinned down), and the figure compared is PyTorch's best.
        with tempfile.TemporaryDirectory() as tmp:
            zero_models.export(model, os.path.join(tmp, "gpt.onnx"), a.batch, a.seq, a.vocab)
        print(json.dumps({"ms": torch_step_ms(False)}))
        return

    def torch_best_ms():
        """PyTorch's fp32 step at one thread and at --threads, each in its own
        process: (the faster one's ms, its threads, {threads: ms})."""
        by_threads = {}
        for threads in sorted({1, a.threads}):
            args = [sys.executable, os.path.abspath(__file__), "--bin", a.bin,
                    "--torch-only", "--threads", str(threads)]
            for name in ("layers", "hidden", "heads", "vocab", "seq", "batch", "steps",
                         "warmup"):
                args += ["--" + name, str(getattr(a, name))]
            out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
            by_threads[threads] = json.loads(out.strip().splitlines()[-1])["ms"]
        best = min(by_threads, key=by_threads.get)
        return by_threads[best], best, by_threads

    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = os.path.join(tmp, "gpt.onnx")
        zero_models.export(model, onnx_path, a.batch, a.seq, a.vocab)
        data_path = os.path.join(tmp, "tokens.u8")
        data.tofile(data_path)
        def zero_run(precision, flags=()):
            name = precision + "".join(flags).replace("-", "").replace("=", "")
            plan = os.path.join(tmp, name + ".zplan")
            subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "--optimizer=adamw",
                            "--precision=" + precision, "-o", plan] + list(flags), check=True)
            log = os.path.join(tmp, name + ".json")
            subprocess.run([os.path.join(a.bin, "zero-run"), plan, "--init", onnx_path,
                            "--data", data_path, "--steps", str(total), "--log-json", log,
                            "--quiet"], check=True)
            return statistics.median(
                [json.loads(line)["ms"] for line in open(log)][a.warmup:])

        z = zero_run("fp32")
        profile = None
        if a.profile:
            profile = subprocess.run(
                [os.path.join(a.bin, "zero-run"), os.path.join(tmp, "fp32.zplan"), "--init",
                 onnx_path, "--data", data_path, "--steps", str(total), "--quiet",
                 "--profile"], check=True, capture_output=True, text=True).stdout
        zunfused = zero_run("fp32", ["--no-fusion"]) if a.unfused else None
        def alternating(flag):
            """The default step's times and those with `flag`, alternating (this
            machine's speed drifts)."""
            times = ([], [])
            for _ in range(max(3, a.repeat)):
                times[0].append(zero_run("fp32"))
                times[1].append(zero_run("fp32", [flag]))
            return times
        comparisons = []  # (what the default does, what the flag does, flag, times)
        if a.attention_parts:
            comparisons.append(("attention fused", "as its parts", "--no-attention-fusion",
                                alternating("--no-attention-fusion")))
        if a.separate_epilogue:
            comparisons.append(("bias and residual in the product", "added by kernels",
                                "--no-epilogue-fusion", alternating("--no-epilogue-fusion")))
        zmixed = zero_run(a.precision) if a.precision != "fp32" else None
        zrecompute = report = None
        if a.recompute:
            flags = ["--recompute=" + a.recompute]
            zrecompute = zero_run("fp32", flags)
            report = json.loads(subprocess.run(
                [os.path.join(a.bin, "zero-opt"), onnx_path, "--optimizer=adamw",
                 "--report=json"] + flags, check=True, capture_output=True,
                text=True).stdout)
        offload = {}
        if a.offload:
            for mode in ("none", "cpu"):
                flags = ["--zero-stage=2", "--world-size=1", "--offload-optimizer=" + mode]
                offload[mode] = (zero_run(a.precision, flags), json.loads(subprocess.run(
                    [os.path.join(a.bin, "zero-opt"), onnx_path, "--optimizer=adamw",
                     "--precision=" + a.precision, "--report=json"] + flags, check=True,
                    capture_output=True, text=True).stdout))

    t, t_threads, t_all = torch_best_ms()
    pairs = [(z, t)]  # (zero-run, PyTorch's best) ms of each alternating measurement
    if a.repeat > 1:
        with tempfile.TemporaryDirectory() as tmp:
            onnx_path = os.path.join(tmp, "gpt.onnx")
            zero_models.export(model, onnx_path, a.batch, a.seq, a.vocab)
            data_path = os.path.join(tmp, "tokens.u8")
            data.tofile(data_path)
            plan = os.path.join(tmp, "fp32.zplan")
            subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "--optimizer=adamw",
                            "-o", plan], check=True)
            for _ in range(a.repeat - 1):
                log = os.path.join(tmp, "repeat.json")
                subprocess.run([os.path.join(a.bin, "zero-run"), plan, "--init", onnx_path,
                                "--data", data_path, "--steps", str(total), "--log-json",
                                log, "--quiet"], check=True)
                zr = statistics.median([json.loads(line)["ms"] for line in open(log)][a.warmup:])
                pairs.append((zr, torch_best_ms()[0]))
    ratios = [zr / tr for zr, tr in pairs]
    tmixed = torch_step_ms(True) if a.precision == "bf16" else None
    tokens_per_step = a.batch * a.seq
    print("GPT: %d layers, hidden %d, %d heads, vocab %d, sequence %d, micro-batch %d: "
          "%.2fM parameters" % (a.layers, a.hidden, a.heads, a.vocab, a.seq, a.batch,
                                n_params / 1e6))
    print("training step (forward, backward, AdamW), median of %d steps after %d warm-up"
          % (a.steps, a.warmup))
    print("  zero-run        %8.1f ms/step  %8.0f tokens/s  (%d threads)" % (
        z, tokens_per_step / z * 1000, a.threads))
    print("  PyTorch eager   %8.1f ms/step  %8.0f tokens/s  (its best: %s)" % (
        t, tokens_per_step / t * 1000,
        ", ".join("%.1f ms at %d thread%s" % (ms, n, "" if n == 1 else "s")
                  for n, ms in sorted(t_all.items()))))
    print("  zero-run / PyTorch step time: %.2f" % (z / t))
    if len(ratios) > 1:
        print("  over %d alternating measurements: ratios %s, median %.2f" % (
            len(ratios), " ".join("%.2f" % r for r in ratios), statistics.median(ratios)))
        print("    (zero-run / PyTorch ms: %s)" % ", ".join("%.1f / %.1f" % p for p in pairs))
    if zunfused is not None:
        print("  zero-run --no-fusion %3.1f ms/step  (the fused step: %.2f x this)" % (
            zunfused, z / zunfused))
    for default, other, flag, (mine, theirs) in comparisons:
        print("  zero-run, %s %.1f ms/step, %s (%s) %.1f ms/step: %.2f x (medians of %d "
              "alternating runs: %s; %s)" % (
                  default, statistics.median(mine), other, flag, statistics.median(theirs),
                  statistics.median(mine) / statistics.median(theirs), len(mine),
                  " ".join("%.1f" % x for x in mine), " ".join("%.1f" % x for x in theirs)))
    if zmixed is not None:
        print("  zero-run %s    %8.1f ms/step  %8.0f tokens/s  (%.2f x its fp32 step)" % (
            a.precision, zmixed, tokens_per_step / zmixed * 1000, zmixed / z))
    if tmixed is not None:
        print("  PyTorch autocast bf16 %6.1f ms/step  %8.0f tokens/s  (%.2f x its fp32 step)"
              % (tmixed, tokens_per_step / tmixed * 1000, tmixed / t))
        print("  zero-run bf16 / PyTorch autocast bf16 step time: %.2f" % (zmixed / tmixed))
    if zrecompute is not None:
        r = report["recompute"]
        print("  zero-run --recompute=%s %6.1f ms/step  (%.2f x without; the report: %.1f%% "
              "more FLOPs, %.1f%% more predicted time on its 'cpu' model, %.2f MiB of "
              "%.2f MiB peak saved)" % (
                  a.recompute, zrecompute, zrecompute / z,
                  100 * r["extra_flops"] / r["step_flops"],
                  100 * r["extra_ms"] / (report["predicted"]["step_ms"] - r["extra_ms"]),
                  r["saved_peak_bytes"] / 2**20,
                  (report["per_rank_bytes"]["total_peak"] + r["saved_peak_bytes"]) / 2**20))
    if offload:
        (none_ms, none_r), (cpu_ms, cpu_r) = offload["none"], offload["cpu"]
        h = cpu_r["host_bytes"]
        print("  ZeRO stage 2, one rank, %s: %6.1f ms/step, device peak %.2f MiB" % (
            a.precision, none_ms, none_r["per_rank_bytes"]["total_peak"] / 2**20))
        print("  ... --offload-optimizer=cpu: %6.1f ms/step (%.2f x), device peak %.2f MiB, "
              "host %.2f MiB, %.2f MiB copied each way per step" % (
                  cpu_ms, cpu_ms / none_ms, cpu_r["per_rank_bytes"]["total_peak"] / 2**20,
                  h["host_peak"] / 2**20, h["to_device_per_step"] / 2**20))
    if profile is not None:
        print("zero-run --profile, fp32, %d steps:" % total)
        print(profile.rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
