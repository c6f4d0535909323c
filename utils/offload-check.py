#!/usr/bin/env python3
# zero-opt --offload-optimizer=cpu (ZeRO-Offload): the optimizer runs on the host,
# its master weights and state in host memory; --offload-param=cpu (stage 3): each
# rank's parameter slices live in host memory and cross to the device for each
# gather; =nvme keeps either in each rank's NVMe file (zero-run --nvme-path)
# between their uses. Training with offload must match training without it: bit-identical
# losses and weights on the CPU backend (the same kernels on the same values),
# within --rtol on the CUDA backend (the host's optimizer kernels against the GPU's).
#
#   offload-check.py --bin BUILD/bin --work DIR [--device cpu|cuda] [--zero-run Z]
#                    [--rtol 0] [--quick]
#
# Cases: stages 1-3 on 1, 2 and 4 ranks (AdamW, f32); bf16; fp16 with dynamic loss
# scaling, gradient clipping, gradient accumulation and a learning-rate schedule (the
# runtime learning rate and the overflow flag cross to the host); SGD with momentum;
# parameter offload at stage 3 on 1 and 2 ranks, f32 and bf16, with the optimizer on
# the device and offloaded too; both on NVMe at stage 3 (1 and 2 ranks, f32 and
# bf16), the optimizer alone on NVMe at stage 2, the parameters on NVMe with the
# optimizer in host memory and the other way round.
# --quick: the stage 1-3 cases on 2 ranks, one bf16 case, two parameter offload
# cases and one NVMe case (for the emulated GPU).
# A checkpoint saved by either plan resumes in the other (the same losses follow).
# Prints the device and host bytes of each offloaded plan, and checks that the bytes
# zero-run copied each step, and read from and wrote to the NVMe files (counted as
# the transfers ran), are the report's. Exit 1 on a mismatch.
# Run with build/python-env/bin/python (the tests' environment).
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

# (label, stage, ranks, flags, what the offloaded plan adds)
OPT = ["--offload-optimizer=cpu"]
PARAM = ["--offload-param=cpu"]
OPT_NVME = ["--offload-optimizer=nvme"]
PARAM_NVME = ["--offload-param=nvme"]
FULL = [("", stage, world, [], OPT) for stage in (1, 2, 3) for world in (1, 2, 4)] + [
    ("bf16", 2, 2, ["--precision=bf16"], OPT),
    ("bf16", 3, 2, ["--precision=bf16"], OPT),
    ("fp16-clip-accum-warmup", 2, 2, [
        "--precision=fp16", "--clip-grad-norm=0.5", "--grad-accum-steps=2",
        "--lr-schedule=warmup", "--warmup-steps=3"], OPT),
    ("sgd-momentum", 1, 2, ["--optimizer=sgd", "--momentum=0.9"], OPT),
] + [("param%s%s" % ("-opt" if opt else "", "-" + prec if prec != "fp32" else ""), 3, world,
      ["--precision=" + prec], PARAM + (OPT if opt else []))
     for world in (1, 2) for prec in ("fp32", "bf16") for opt in (False, True)] + [
    ("nvme%s" % ("-" + prec if prec != "fp32" else ""), 3, world, ["--precision=" + prec],
     PARAM_NVME + OPT_NVME) for world in (1, 2) for prec in ("fp32", "bf16")] + [
    ("opt-nvme", 2, 2, [], OPT_NVME),
    ("param-nvme-opt-cpu-bf16", 3, 2, ["--precision=bf16"], PARAM_NVME + OPT),
    ("param-cpu-opt-nvme", 3, 2, [], PARAM + OPT_NVME)]
QUICK = [("", stage, 2, [], OPT) for stage in (1, 2, 3)] + [
    ("bf16", 2, 1, ["--precision=bf16"], OPT),
    ("param", 3, 2, [], PARAM),
    ("param-opt-bf16", 3, 2, ["--precision=bf16"], PARAM + OPT),
    ("nvme-bf16", 3, 2, ["--precision=bf16"], PARAM_NVME + OPT_NVME)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--zero-run", help="the zero-run binary (default: BIN/zero-run)")
    p.add_argument("--rtol", type=float, default=0.0,
                   help="0: bit-identical; else the largest relative difference allowed")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model, data = zero_models.test_gpt(a.work)
    zero_opt = os.path.join(a.bin, "zero-opt")
    zero_run = a.zero_run or os.path.join(a.bin, "zero-run")
    ok = True
    for label, stage, world, extra, offloaded in QUICK if a.quick else FULL:
        name = "s%d-w%d%s" % (stage, world, "-" + label if label else "")
        work = os.path.join(a.work, name)
        os.makedirs(work, exist_ok=True)
        flags = ["--zero-stage=%d" % stage, "--world-size=%d" % world,
                 "--bucket-size-mb=0.02"] + extra
        runs, report = {}, None
        nvme = any(f.endswith("=nvme") for f in offloaded)
        # The NVMe files go in a folder of the case's (zero-run makes and removes them).
        nvme_flags = {"none": [], "cpu": ["--nvme-path", work] if nvme else []}
        for offload in ("none", "cpu"):
            plan = os.path.join(work, offload + ".zplan")
            plan_flags = flags + (offloaded if offload == "cpu" else [])
            subprocess.run([zero_opt, model, "-o", plan] + plan_flags, check=True)
            if offload == "cpu":
                report = json.loads(subprocess.run(
                    [zero_opt, model, "--report=json"] + plan_flags,
                    check=True, capture_output=True, text=True).stdout)
            log, saved = (os.path.join(work, offload + ext) for ext in (".json", ".onnx"))
            # Ranks are threads of one zero-run (the offload is per rank).
            subprocess.run([zero_run, plan, "--init", model, "--data", data,
                            "--device", a.device, "--steps", str(a.steps),
                            "--log-json", log, "--save-weights", saved, "--quiet"] +
                           nvme_flags[offload], check=True)
            runs[offload] = ([json.loads(l)["loss"] for l in open(log)], zero_testing.onnx_weights(saved))
            if offload == "cpu":
                # zero-run counts the copies as they run: the report's figures.
                steps = [json.loads(l) for l in open(log)]
                copied = {(s["copied_bytes"]["to_host"], s["copied_bytes"]["to_device"])
                          for s in steps}
                host = report["host_bytes"]
                expected = (host["to_host_per_step"], host["to_device_per_step"])
                if copied != {expected}:
                    print("%s: zero-run copied %s bytes per step, the report says %s" %
                          (name, sorted(copied), expected))
                    ok = False
                if nvme:
                    moved = {(s["nvme_bytes"]["read"], s["nvme_bytes"]["written"])
                             for s in steps}
                    n = report["nvme_bytes"]
                    expected = (n["read_per_step"], n["written_per_step"])
                    if moved != {expected} or expected[0] == 0:
                        print("%s: zero-run read/wrote %s NVMe bytes per step, the report "
                              "says %s" % (name, sorted(moved), expected))
                        ok = False
                    # Busy time is measured around the transfers: some for each kind.
                    if not all(s["nvme_busy_s"]["read"] > 0 and s["nvme_busy_s"]["write"] > 0
                               for s in steps):
                        print("%s: an NVMe busy time is not positive: %s" %
                              (name, [s["nvme_busy_s"] for s in steps]))
                        ok = False
                    left = [f for f in os.listdir(work) if f.endswith(".nvme")]
                    if left:
                        print("%s: zero-run left its NVMe files behind: %s" % (name, left))
                        ok = False
        # A checkpoint of either plan resumes in the other: the same step follows.
        half = a.steps // 2
        for saver, resumer in (("cpu", "none"), ("none", "cpu")):
            ckpt = os.path.join(work, "ckpt-" + saver)
            log = os.path.join(work, "resumed-" + resumer + ".json")
            subprocess.run([zero_run, os.path.join(work, saver + ".zplan"), "--init", model,
                            "--data", data, "--device", a.device, "--steps", str(half),
                            "--save-checkpoint", ckpt, "--checkpoint-every", str(half),
                            "--quiet"] + nvme_flags[saver], check=True)
            subprocess.run([zero_run, os.path.join(work, resumer + ".zplan"), "--init",
                            model, "--data", data, "--device", a.device, "--steps",
                            str(a.steps), "--resume", ckpt, "--log-json", log, "--quiet"] +
                           nvme_flags[resumer], check=True)
            resumed = [json.loads(l)["loss"] for l in open(log)]
            if resumed != runs[resumer][0][half:]:
                print("%s: resumed with %s from %s's checkpoint: losses %s, not %s" % (
                    name, resumer, saver, resumed, runs[resumer][0][half:]))
                ok = False
        (loss0, w0), (loss1, w1) = runs["none"], runs["cpu"]
        if a.rtol == 0:
            same = loss0 == loss1 and w0.keys() == w1.keys() and all(
                w0[k].tobytes() == w1[k].tobytes() for k in w0)
            worst = 0.0 if same else float("inf")
        else:
            worst = max([abs(x - y) / max(abs(x), 1e-30) for x, y in zip(loss0, loss1)] +
                        [float(np.max(np.abs(w0[k].astype(np.float64) - w1[k]) /
                                      np.maximum(np.abs(w0[k].astype(np.float64)), 1e-3)))
                         for k in w0])
            same = len(loss0) == len(loss1) == a.steps and w0.keys() == w1.keys() and \
                worst <= a.rtol
        host = report.get("host_bytes", {})
        print("%-30s device peak %9d, host %9d bytes (params %d, optimizer state %d), "
              "NVMe file %d, copied %d/%d; %s: %s" % (
                  name, report["per_rank_bytes"]["total_peak"], host.get("host_peak", 0),
                  host.get("params", 0), host.get("optimizer_state", 0),
                  report.get("nvme_bytes", {}).get("file", 0),
                  host.get("to_host_per_step", 0),
                  host.get("to_device_per_step", 0),
                  "identical" if a.rtol == 0 and same else "worst relative %.2e" % worst,
                  "ok" if same and host else "MISMATCH"))
        ok &= same and bool(host)
        # Parameter offload leaves no slice on the device (the test GPT keeps no
        # parameter replicated).
        if "--offload-param=cpu" in offloaded and (
                report["per_rank_bytes"]["params"] != 0 or host.get("params", 0) == 0):
            print("%s: parameter offload left %d bytes of parameters on the device, %d on "
                  "the host" % (name, report["per_rank_bytes"]["params"], host.get("params", 0)))
            ok = False
        # NVMe offload leaves what it moves in neither device nor host memory.
        n = report.get("nvme_bytes", {})
        for flag, key in (("--offload-param=nvme", "params"),
                          ("--offload-optimizer=nvme", "optimizer_state")):
            if flag in offloaded and (host.get(key, 0) != 0 or n.get(key, 0) == 0 or
                                      report["per_rank_bytes"][key] > 8):
                print("%s: %s: %s bytes on the device, %d on the host, %d in the NVMe file" % (
                    name, flag, report["per_rank_bytes"][key], host.get(key, 0),
                    n.get(key, 0)))
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
