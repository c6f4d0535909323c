#!/usr/bin/env python3
"""The GPU step in one prepared call: `utils/gpu-checks.sh quick` runs this on the
GPU machine (bundle built here), `gpu-checks.sh rehearse-quick` on the emulated
build (tiny models, PyTorch on the CPU; ctest gpu-checks-quick-rehearsal).

    gpu-quick.py --bundle B --zero-run ZR --out DIR [--rehearsal] [--budget-s 460]
    gpu-quick.py --check-entry DIR      (what the ctest asks of a rehearsal's output)

In this order, each step timed:
  1. the libraries zero-run loads (--check-cuda-libraries), the GPU, PyTorch;
  2. GPT-2 small bf16, 3 steps: every fallback counted (zero-run's "fallbacks:" line:
     cuDNN refusals forward and backward, GELUs and bias gradients outside the
     epilogue, interpreter kernels; a step not captured as one CUDA graph);
  3. a --no-fusion plan (the GPT of check 3) captured as a graph;
  4. fp32: two direct runs (--no-cuda-graph), then the graph's replay, 5 steps: the
     losses and saved weights compared bit for bit;
  5. the generated kernels (NVRTC) against the interpreter kernel (check 3h's cases);
  6. compute-sanitizer memcheck on one step of the tiny GPT in bf16;
  7. GPT-2 small fp32 and bf16 at micro-batch 8 and 32 against PyTorch eager and
     torch.compile (utils/bench-gpu.py), with the per-kernel profile at micro-batch 8;
  8. zero-run --calibrate, and the cost model's prediction (zero-opt --report with
     the published h100-nvlink figures, made with the bundle) beside the measured step.
It writes DIR/GPURuns-entry.md (a docs/GPURuns.md entry: tables ready to commit),
DIR/quick.json (every figure) and DIR/machine.json (the calibration, for
`zero-opt --machine DIR/machine.json --report` here). A step that fails is said and
the rest still run; past the time budget the benchmarks left are skipped, by name.
Exit 1 when a check failed.
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
START = time.monotonic()


def elapsed():
    return time.monotonic() - START


def say(text):
    print("[%4.0fs] %s" % (elapsed(), text), flush=True)


def run(cmd, env=None, timeout=None):
    """(return code, stdout, stderr) of `cmd`; a missing program is code 127."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except FileNotFoundError as e:
        return 127, "", str(e)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %s s" % timeout


def losses(path):
    try:
        return [json.loads(line)["loss"] for line in open(path)]
    except (OSError, ValueError, KeyError):
        return []


def fallbacks(stderr):
    """zero-run's fallback counts ({what: count}) and whether a step was not captured."""
    counts = {}
    for line in stderr.splitlines():
        m = re.search(r": fallbacks: (.*)$", line)
        if m:
            for part in m.group(1).split("; "):
                n, _, what = part.partition(" ")
                counts[what] = counts.get(what, 0) + int(n)
    uncaptured = [l for l in stderr.splitlines() if "not as one CUDA graph" in l]
    return counts, uncaptured


class Quick:
    def __init__(self, a):
        self.a = a
        self.B = a.bundle
        self.zr = a.zero_run
        self.py = sys.executable
        self.out = a.out
        self.results = {"checks": [], "bench": [], "failed": False}
        os.makedirs(self.out, exist_ok=True)
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)

    def check(self, name, ok, detail):
        """Records one check's result (ok: True, False, or None for not run)."""
        mark = {True: "passed", False: "FAILED", None: "not run"}[ok]
        say("%s: %s: %s" % (name, mark, detail))
        self.results["checks"].append({"check": name, "ok": ok, "detail": detail,
                                       "at_s": round(elapsed())})
        if ok is False:
            self.results["failed"] = True

    def inputs(self, model, folder):
        """GPU_BENCH_MODELS[model]'s weights and tokens in WORK/folder, made once."""
        sys.path.insert(0, HERE)
        import zero_models
        folder = os.path.join(self.work, folder)
        made = os.path.join(folder, "gpt.onnx"), os.path.join(folder, "tokens.u16")
        if not all(map(os.path.exists, made)):
            os.makedirs(folder, exist_ok=True)
            made = zero_models.gpu_bench_inputs(folder, zero_models.GPU_BENCH_MODELS[model])
        return made

    def gpt_small_inputs(self):
        """GPT-2 small's (the tiny GPT's in a rehearsal), shared with bench-gpu.py --work."""
        return self.inputs("tiny" if self.a.rehearsal else "small", "bench")

    # 1.
    def libraries(self):
        rc, out, err = run([self.zr, "--check-cuda-libraries"])
        self.results["libraries"] = (out + err).strip()
        gpu = "emulated GPU (rehearsal)" if self.a.rehearsal else ""
        if not self.a.rehearsal:
            _, smi, _ = run(["nvidia-smi", "-L"])
            gpu = smi.strip().splitlines()[0] if smi.strip() else "unknown GPU"
        _, torch_out, _ = run([self.py, "-c", "import torch; print(torch.__version__, "
                               "torch.backends.cudnn.version())"])
        self.results["gpu"] = gpu
        self.results["torch"] = torch_out.strip()
        self.check("1. libraries", rc == 0, self.results["libraries"].replace("\n", "; "))

    # 2.
    def bf16_fallbacks(self):
        model, data = self.gpt_small_inputs()
        plan = os.path.join(self.B, "bench", "tiny-bf16.zplan" if self.a.rehearsal
                            else "step-bf16.zplan")
        log = os.path.join(self.work, "bf16.json")
        rc, _, err = run([self.zr, plan, "--init", model, "--data", data, "--data-format",
                          "u16", "--steps", "3", "--device", "cuda", "--log-json", log,
                          "--quiet"])
        counts, uncaptured = fallbacks(err)
        self.results["fallbacks"] = counts
        self.results["uncaptured"] = uncaptured
        l = losses(log)
        detail = "losses %s; fallbacks: %s; graph: %s" % (
            ", ".join("%.4f" % x for x in l),
            ", ".join("%d %s" % (n, w) for w, n in sorted(counts.items())) or "none",
            "captured" if not uncaptured else uncaptured[0])
        if rc != 0:
            detail += "; exit %d: %s" % (rc, err.strip()[-400:])
        self.check("2. GPT-2 small bf16, 3 steps", rc == 0 and len(l) == 3, detail)

    # 3.
    def unfused_captured(self):
        plan = os.path.join(self.B, "gpt", "step-unfused.zplan")
        rc, _, err = run([self.zr, plan, "--init", os.path.join(self.B, "gpt", "gpt.onnx"),
                          "--data", os.path.join(self.B, "gpt", "text.u8"), "--steps", "3",
                          "--device", "cuda", "--quiet"])
        _, uncaptured = fallbacks(err)
        ok = rc == 0 and not uncaptured
        self.check("3. --no-fusion plan captured", ok,
                   "captured" if ok else (uncaptured or [err.strip()[-400:]])[0])

    # 4.
    def replay_equals_direct(self):
        gpt = os.path.join(self.B, "gpt")
        base = [self.zr, os.path.join(gpt, "step.zplan"), "--init", os.path.join(gpt, "gpt.onnx"),
                "--data", os.path.join(gpt, "text.u8"), "--steps", "5", "--device", "cuda",
                "--quiet"]
        outs = {}
        for name, extra in (("direct-a", ["--no-cuda-graph"]), ("direct-b", ["--no-cuda-graph"]),
                            ("graph", [])):
            log = os.path.join(self.work, "fp32-%s.json" % name)
            weights = os.path.join(self.work, "fp32-%s.safetensors" % name)
            rc, _, err = run(base + extra + ["--log-json", log, "--save-weights", weights])
            if rc != 0:
                self.check("4. fp32 replay against direct", False,
                           "%s exited %d: %s" % (name, rc, err.strip()[-400:]))
                return
            outs[name] = (losses(log), open(weights, "rb").read())
        same = lambda x, y: outs[x][0] == outs[y][0] and outs[x][1] == outs[y][1]
        dd, gd = same("direct-a", "direct-b"), same("graph", "direct-a")
        self.results["direct_equals_direct"], self.results["replay_equals_direct"] = dd, gd
        self.check("4. fp32 direct against direct, then replay against direct", dd and gd,
                   "direct/direct: %s; replay/direct: %s (5 steps' losses and weights)" % (
                       "same bits" if dd else "DIFFER", "same bits" if gd else "DIFFER"))

    # 5.
    def generated_kernels(self):
        # A rehearsal checks one model's cases, 2 steps (the emulator compiles slowly).
        extra = ["--models", "gpt-tanh", "--steps", "2"] if self.a.rehearsal else []
        rc, out, err = run([self.py, os.path.join(HERE, "fused-kernels-bitwise.py"), "--bin",
                            os.path.join(self.B, "bin"), "--zero-run", self.zr, "--prebuilt",
                            os.path.join(self.B, "generated")] + extra)
        lines = [l for l in (out + err).splitlines() if l.strip()]
        self.check("5. generated kernels against the interpreter, bit for bit", rc == 0,
                   lines[-1] if lines else "exit %d" % rc)

    # 6.
    def sanitizer(self):
        if self.a.rehearsal:
            self.check("6. compute-sanitizer memcheck", None,
                       "rehearsal: the emulator checks every access itself")
            return
        tool = shutil.which("compute-sanitizer") or next(
            iter(glob.glob("/usr/local/cuda*/bin/compute-sanitizer")), None)
        if not tool:
            self.check("6. compute-sanitizer memcheck", False,
                       "compute-sanitizer not found (PATH, /usr/local/cuda*/bin)")
            return
        m, d = self.inputs("tiny", "tiny")
        rc, out, err = run([tool, "--tool", "memcheck", "--error-exitcode", "3",
                            "--leak-check", "no", self.zr,
                            os.path.join(self.B, "bench", "tiny-bf16.zplan"),
                            "--init", m, "--data", d, "--data-format", "u16", "--steps", "1",
                            "--quiet"], timeout=240)
        summary = [l for l in (out + err).splitlines() if "ERROR SUMMARY" in l]
        self.check("6. compute-sanitizer memcheck, tiny GPT bf16, 1 step", rc == 0,
                   summary[-1].strip() if summary else "exit %d: %s" % (rc, err.strip()[-300:]))

    # 7.
    def benchmarks(self):
        cases = [("fp32", 8), ("bf16", 8), ("fp32", 32), ("bf16", 32)]
        for index, (precision, batch) in enumerate(cases):
            # The rehearsal's tiny GPT runs at micro-batch 2 and 4 instead.
            shown = {8: 2, 32: 4}[batch] if self.a.rehearsal else batch
            name = "%s micro-batch %d" % (precision, shown)
            if elapsed() > self.a.budget_s:
                self.check("7. benchmark " + name, None,
                           "skipped: %.0f s used of the %d s budget" % (elapsed(),
                                                                         self.a.budget_s))
                continue
            if self.a.rehearsal:
                stem = "tiny" if batch == 8 else "tiny-b4"
                plan = os.path.join(self.B, "bench", stem + ("-bf16" if precision == "bf16"
                                                             else "") + ".zplan")
                # torch.compile on the CPU takes tens of seconds: the first case only.
                extra = ["--model", "tiny", "--torch-device", "cpu", "--steps", "1",
                         "--warmup", "1", "--batch", str(shown)] + (
                             ["--no-compile"] if index else [])
            else:
                stem = "step" if batch == 8 else "step-b32"
                plan = os.path.join(self.B, "bench", stem + ("-bf16" if precision == "bf16"
                                                             else "") + ".zplan")
                extra = ["--batch", str(batch), "--steps", "5", "--warmup", "2"]
            figures = os.path.join(self.work, "bench-%s-%d.json" % (precision, batch))
            cmd = [self.py, os.path.join(HERE, "bench-gpu.py"), "--zero-run", self.zr,
                   "--plan", plan, "--precision", precision, "--work",
                   os.path.join(self.work, "bench"), "--json", figures] + extra
            if batch != 8:
                cmd.append("--no-profile")
            rc, out, err = run(cmd)
            print(out.rstrip())
            if rc != 0:
                self.check("7. benchmark " + name, False, err.strip()[-400:])
                continue
            b = json.load(open(figures))
            self.results["bench"].append(b)
            self.check("7. benchmark " + name, True, "zero-run %.1f ms, eager %.1f ms%s" % (
                b["zero_run"]["ms"], b["eager"]["ms"],
                ", torch.compile %.1f ms" % b["compiled"]["ms"] if b["compiled"] else ""))

    # 8.
    def calibrate(self):
        machine = os.path.join(self.out, "machine.json")
        cmd = [self.zr, "--calibrate", machine, "--device", "cuda"]
        if self.a.rehearsal:
            cmd.append("--test-calibrate-small")
        rc, out, err = run(cmd, timeout=180)
        self.results["machine"] = json.load(open(machine)) if rc == 0 else None
        predicted = {}
        for f in glob.glob(os.path.join(self.B, "quick", "predicted-*.json")):
            key = os.path.basename(f)[len("predicted-"):-len(".json")]
            predicted[key] = json.load(open(f))["predicted"]["step_ms"]
        self.results["predicted"] = predicted
        self.check("8. zero-run --calibrate", rc == 0,
                   "wrote machine.json" if rc == 0 else err.strip()[-300:])

    def entry(self):
        """The docs/GPURuns.md entry, as markdown."""
        r = self.results
        commit = open(os.path.join(self.B, "quick", "commit.txt")).read().strip() \
            if os.path.exists(os.path.join(self.B, "quick", "commit.txt")) else "unknown"
        date = datetime.date.today().isoformat()
        lines = ["## %s: %s (gpu-checks.sh quick)%s" % (
                     date, r.get("gpu", "unknown GPU"),
                     " REHEARSAL on the emulator: the figures mean nothing"
                     if self.a.rehearsal else ""), "",
                 "zero-run and the plans: commit %s. PyTorch and its cuDNN: %s." % (
                     commit, r.get("torch") or "not found"),
                 "Libraries: %s. Took %.0f s." % (
                     (r.get("libraries") or "").replace("\n", "; "), elapsed()), "",
                 "### Checks: %s" % ("FAILED" if r["failed"] else "all passed"), "",
                 "| check | result |", "| --- | --- |"]
        for c in r["checks"]:
            mark = {True: "", False: "**FAILED**: ", None: "not run: "}[c["ok"]]
            lines.append("| %s | %s%s |" % (c["check"], mark, c["detail"].replace("|", "/")))
        if r["bench"]:
            lines += ["", "### Step time (GPT-2 small, seq 1024)", "",
                      "| precision | micro-batch | zero-run | PyTorch eager | torch.compile "
                      "| / eager | / compile | predicted |", "| --- " * 8 + "|"]
            for b in r["bench"]:
                z, e, c = b["zero_run"], b["eager"], b["compiled"]
                mfu = " (MFU %.1f%%)" % (100 * z["mfu"]) if z.get("mfu") else ""
                pred = r.get("predicted", {}).get("%s-b%d" % (b["precision"], b["batch"]))
                lines.append("| %s | %d | %.1f ms%s | %.1f ms | %s | %.2f | %s | %s |" % (
                    b["precision"], b["batch"], z["ms"], mfu, e["ms"],
                    "%.1f ms" % c["ms"] if c else "-", z["ms"] / e["ms"],
                    "%.2f" % (z["ms"] / c["ms"]) if c else "-",
                    "%.1f ms" % pred if pred is not None else "-"))
            lines += ["", "Predicted: zero-opt's cost model with the published h100-nvlink "
                      "figures; `machine.json` (zero-run --calibrate, this run) gives the "
                      "calibrated prediction: `zero-opt PLAN_MODEL --machine machine.json "
                      "--report`."]
            for b in r["bench"]:
                if b["profile"]:
                    lines += ["", "zero-run's time per kernel kind, %s, micro-batch %d:" % (
                        b["precision"], b["batch"]), "",
                        "| kind | ms | share | kernels |", "| --- | --- | --- | --- |"]
                    lines += ["| %s | %.3f | %.1f%% | %d |" % (p["kind"], p["ms"], p["share"],
                                                              p["count"]) for p in b["profile"]]
        return "\n".join(lines) + "\n"


def check_entry(out):
    """Whether OUT holds a whole run's entry: every step's check, the four step
    times, a profile; exit 1 naming what is missing."""
    entry = open(os.path.join(out, "GPURuns-entry.md")).read()
    results = json.load(open(os.path.join(out, "quick.json")))
    missing = []
    for n in range(1, 9):
        if not any(c["check"].startswith("%d." % n) for c in results["checks"]):
            missing.append("check %d" % n)
    for section in ("## ", "### Checks: all passed", "### Step time", "time per kernel kind",
                    "| precision | micro-batch | zero-run |"):
        if section not in entry:
            missing.append("the entry's '%s'" % section)
    if len(results["bench"]) != 4:
        missing.append("4 step times (has %d)" % len(results["bench"]))
    if not results.get("machine"):
        missing.append("the calibrated machine")
    if missing:
        print("gpu-quick: the entry in %s lacks: %s" % (out, ", ".join(missing)))
        return 1
    print("gpu-quick: the entry in %s has every check, 4 step times and a profile" % out)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle")
    p.add_argument("--zero-run")
    p.add_argument("--out")
    p.add_argument("--rehearsal", action="store_true")
    p.add_argument("--budget-s", type=int, default=460,
                   help="past this many seconds the benchmarks left are skipped")
    p.add_argument("--check-entry", metavar="OUT", help="only check the entry a run wrote")
    a = p.parse_args()
    if a.check_entry:
        return check_entry(a.check_entry)
    if not (a.bundle and a.zero_run and a.out):
        p.error("--bundle, --zero-run and --out are required")
    q = Quick(a)
    for step in (q.libraries, q.bf16_fallbacks, q.unfused_captured, q.replay_equals_direct,
                 q.generated_kernels, q.sanitizer, q.benchmarks, q.calibrate):
        try:
            step()
        except Exception as e:  # a broken step is a failed check, the others still run
            q.check(step.__name__, False, "%s: %s" % (type(e).__name__, e))
    entry = q.entry()
    with open(os.path.join(a.out, "GPURuns-entry.md"), "w") as f:
        f.write(entry)
    with open(os.path.join(a.out, "quick.json"), "w") as f:
        json.dump(q.results, f, indent=1)
    print(entry)
    say("done: %s" % ("FAILED" if q.results["failed"] else "all passed"))
    return 1 if q.results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
