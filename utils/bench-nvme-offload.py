#!/usr/bin/env python3
# ZeRO-Infinity on one machine: a GPT whose parameters, gradients and AdamW state
# (16 bytes per parameter in f32) exceed the machine's memory trains with the
# parameters and the optimizer on NVMe, at stage 3 on 2 ranks (mpirun, one process
# per rank), starting from generated weights (--random-init: no host ever holds
# the model). Prints, per rank, the measured peak resident memory against
# --max-memory-gb and the report's host and device bytes; the loss; the NVMe bytes
# each step moved against the report's; and the disk throughput the transfers
# reached (their bytes over the time transfers of that kind were in flight, which
# zero-run measures as they run) against a plain O_DIRECT write and read of the
# same size on the same disk (4 MiB requests, one at a time). Two plans run: NVMe
# reads issued ahead of their readers (the default, as far ahead as the gathers'
# --prefetch-buckets) and each read right before its reader (--nvme-read-ahead=0),
# so the step times show what reading ahead saves.
#
#   bench-nvme-offload.py --bin BUILD/bin --work DIR [--layers 40 --hidden 2048 ...]
#                         [--steps 3] [--max-memory-gb 11]
#
# DIR must be on the disk to measure, with room for the NVMe files (the report's
# file size per rank, twice) and the plain test (the same size); the script checks
# `df` first and stops if it does not fit. Not part of the test suite: minutes of
# I/O. Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def gib(b):
    return b / 2**30


def plain_direct_io(path, total_bytes):
    """Seconds to write then read `total_bytes` (4 MiB requests, one at a time) with
    O_DIRECT: what the disk gives a plain sequential reader and writer."""
    import mmap
    block = 4 << 20
    blocks = max(1, total_bytes // block)
    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(block))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    t0 = time.time()
    for i in range(blocks):
        os.pwrite(fd, buf, i * block)
    os.fsync(fd)
    t1 = time.time()
    os.close(fd)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    t2 = time.time()
    for i in range(blocks):
        os.preadv(fd, [buf], i * block)
    t3 = time.time()
    os.close(fd)
    os.remove(path)
    return blocks * block, t1 - t0, t3 - t2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--layers", type=int, default=40)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--max-memory-gb", type=float, default=11.0)
    p.add_argument("--bucket-size-mb", type=float, default=100.0)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, "gpt.onnx")
    gen = subprocess.run([sys.executable, os.path.join(HERE, "gen_gpt_onnx.py"), model,
                          "--layers", str(a.layers), "--hidden", str(a.hidden),
                          "--heads", str(a.heads), "--vocab", str(a.vocab), "--seq",
                          str(a.seq), "--batch", str(a.batch)],
                         check=True, capture_output=True, text=True).stdout.strip()
    print(gen)
    flags = ["--zero-stage=3", "--world-size=2", "--offload-param=nvme",
             "--offload-optimizer=nvme", "--bucket-size-mb=%g" % a.bucket_size_mb,
             "--max-memory-gb=%g" % a.max_memory_gb]
    # Two plans: NVMe reads issued ahead (as the gathers, --prefetch-buckets) and
    # each read right before its reader (--nvme-read-ahead=0), the same bytes.
    variants = [("reads ahead", []), ("reads at use", ["--nvme-read-ahead=0"])]
    reports = {}
    t0 = time.time()
    for name, extra in variants:
        plan = os.path.join(a.work, "step-%d.zplan" % len(reports))
        subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan] + flags + extra,
                       check=True)
        reports[name] = (plan, json.loads(subprocess.run(
            [os.path.join(a.bin, "zero-opt"), model, "--report=json"] + flags + extra,
            check=True, capture_output=True, text=True).stdout))
    print("compiled in %.1f s" % (time.time() - t0))
    report = reports["reads ahead"][1]
    params = report["parameters"]
    n = report["nvme_bytes"]
    states = 16 * params
    print("model: %s parameters; f32 parameters + gradients + AdamW state: %.1f GB "
          "(%.1f GiB)" % (params, states / 1e9, gib(states)))
    need = 2 * n["file"] + n["file"]  # two ranks' files, then the plain test
    free = shutil.disk_usage(a.work).free
    print("disk at %s: %.1f GiB free, %.1f GiB needed" % (a.work, gib(free), gib(need)))
    if free < need * 1.05:
        print("not enough room on the disk: scale the model down (--layers, --hidden)")
        return 1
    # The token file: random u16 tokens below the vocabulary.
    data = os.path.join(a.work, "tokens.u16")
    if not os.path.exists(data):
        import numpy as np
        np.random.RandomState(0).randint(0, a.vocab, size=1 << 20).astype(np.uint16).tofile(data)
    nvme_dir = os.path.join(a.work, "nvme")
    os.makedirs(nvme_dir, exist_ok=True)
    limit = a.max_memory_gb * 2**30
    finite = True
    busy = {}
    for name, _ in variants:
        plan, r = reports[name]
        d, h, n = r["per_rank_bytes"], r["host_bytes"], r["nvme_bytes"]
        pred = r.get("predicted", {})
        print("\n%s: report per rank: device peak %.2f GiB, host peak %.2f GiB, NVMe file "
              "%.2f GiB (params %.2f, optimizer state %.2f); per step NVMe read %.2f GiB, "
              "written %.2f GiB; predicted NVMe %.1f s, of which the step waits %.1f s" % (
                  name, gib(d["total_peak"]), gib(h["host_peak"]), gib(n["file"]),
                  gib(n["params"]), gib(n["optimizer_state"]), gib(n["read_per_step"]),
                  gib(n["written_per_step"]), pred.get("nvme_ms", 0) / 1e3,
                  pred.get("exposed_nvme_ms", 0) / 1e3))
        log = os.path.join(a.work, "log.json")
        cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", "2",
               os.path.join(a.bin, "zero-run"), plan, "--init", model, "--random-init", "1",
               "--data", data, "--data-format", "u16", "--steps", str(a.steps),
               "--nvme-path", nvme_dir, "--log-json", log]
        t0 = time.time()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        wall = time.time() - t0
        print(out.strip())
        steps = [json.loads(l) for l in open(log)]
        # On the CPU backend the device's arena is host memory too: a rank's resident
        # memory holds both arenas (the report's device and host peaks).
        predicted = d["total_peak"] + h["host_peak"]
        for s in steps:
            measured = s["measured_peak_bytes"]
            print("step %d: loss %.4f, %.1f s; measured peak per rank %s GiB (report: "
                  "device %.2f + host %.2f = %.2f GiB; --max-memory-gb %.1f: %s); NVMe "
                  "read %.2f GiB in %.1f s busy, written %.2f GiB in %.1f s busy (report "
                  "%.2f / %.2f GiB)" % (
                      s["step"], s["loss"], s["ms"] / 1e3,
                      ", ".join("%.2f" % gib(m) for m in measured), gib(d["total_peak"]),
                      gib(h["host_peak"]), gib(predicted), a.max_memory_gb,
                      "within" if max(measured) <= limit else "OVER",
                      gib(s["nvme_bytes"]["read"]), s["nvme_busy_s"]["read"],
                      gib(s["nvme_bytes"]["written"]), s["nvme_busy_s"]["write"],
                      gib(n["read_per_step"]), gib(n["written_per_step"])))
            finite &= s["loss"] == s["loss"] and abs(s["loss"]) < 1e9
        # Throughput: the bytes over the time a transfer of that kind was in flight
        # (rank 0's, measured as they ran), over the steps after the first.
        later = steps[1:] or steps
        rd = sum(s["nvme_bytes"]["read"] for s in later) / sum(s["nvme_busy_s"]["read"] for s in later)
        wr = sum(s["nvme_bytes"]["written"] for s in later) / sum(s["nvme_busy_s"]["write"] for s in later)
        busy[name] = (rd, wr)
        print("%s: mean step after the first %.1f s; zero-run's NVMe transfers (rank 0, "
              "per busy second): read %.2f GB/s, write %.2f GB/s; the two ranks share the "
              "disk and move the same bytes in step, so together about %.2f and %.2f "
              "GB/s; wall time of the run %.1f s" % (
                  name, sum(s["ms"] for s in later) / len(later) / 1e3, rd / 1e9, wr / 1e9,
                  2 * rd / 1e9, 2 * wr / 1e9, wall))
    size, wt, rt = plain_direct_io(os.path.join(a.work, "plain.bin"), n["file"])
    print("\nplain O_DIRECT on the same disk, %.2f GiB: write %.2f GB/s, read %.2f GB/s" % (
        gib(size), size / wt / 1e9, size / rt / 1e9))
    for name, (rd, wr) in busy.items():
        print("%s: both ranks' NVMe throughput against plain O_DIRECT: read %.0f%%, "
              "write %.0f%%" % (name, 100 * 2 * rd / (size / rt), 100 * 2 * wr / (size / wt)))
    print("losses finite: %s" % finite)
    return 0


if __name__ == "__main__":
    sys.exit(main())
