#!/usr/bin/env python3
# Measures how much communication the scheduler hides: the same ZeRO step compiled
# with overlap (split-phase collectives placed early/late) and with --no-overlap,
# run on 2 MPI ranks with the communicator slowed by zero-run's test-only
# --test-comm-delay-ns-per-byte, so that communication costs as much as on a real
# network. Prints the median step time of each and their ratio. A benchmark, not a
# test. Run with build/python-env/bin/python (the tests' environment).
#
#   bench-overlap.py --bin BUILD/bin [--stage 3] [--delay-ns-per-byte 5]
#                    [--layers 4 --hidden 128 --seq 64 --batch 4] [--steps 12]
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--stage", type=int, default=3)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--delay-ns-per-byte", type=float, default=5.0)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--bucket-size-mb", type=float, default=0.25)
    p.add_argument("--prefetch-buckets", type=int, default=4)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    launch = ["mpirun", "-np", str(a.ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        launch.append("--allow-run-as-root")
    # One BLAS thread per rank: the ranks share this machine's cores.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "gpt.onnx")
        subprocess.run([sys.executable, os.path.join(here, "gen_gpt_onnx.py"), model,
                        "--layers", str(a.layers), "--hidden", str(a.hidden), "--heads", "4",
                        "--vocab", "256", "--seq", str(a.seq), "--batch", str(a.batch),
                        "--weights", "random"], check=True, stdout=subprocess.DEVNULL)
        data = os.path.join(tmp, "tokens.u8")
        with open(data, "wb") as f:
            f.write(bytes(i * 7 % 256 for i in range(100000)))
        for name, extra in (("overlap", []), ("no-overlap", ["--no-overlap"])):
            plan = os.path.join(tmp, name + ".zplan")
            flags = ["--zero-stage=%d" % a.stage, "--world-size=%d" % a.ranks,
                     "--bucket-size-mb=%r" % a.bucket_size_mb,
                     "--prefetch-buckets=%d" % a.prefetch_buckets] + extra
            subprocess.run([os.path.join(a.bin, "zero-opt"), model, "-o", plan] + flags,
                           check=True)
            log = os.path.join(tmp, name + ".json")
            subprocess.run(launch + [os.path.join(a.bin, "zero-run"), plan, "--init", model,
                                     "--data", data, "--steps", str(a.warmup + a.steps),
                                     "--log-json", log, "--quiet",
                                     "--test-comm-delay-ns-per-byte",
                                     str(a.delay_ns_per_byte)], check=True, env=env)
            steps = [json.loads(line) for line in open(log)][a.warmup:]
            results[name] = (statistics.median(s["ms"] for s in steps),
                             steps[0]["comm_elements"]["volume"])
    (o, volume), (n, _) = results["overlap"], results["no-overlap"]
    print("ZeRO stage %d, %d ranks, GPT %d layers x hidden %d, seq %d, micro-batch %d; "
          "collectives slowed by %g ns/byte (%d elements = %.1f MB per step)" % (
              a.stage, a.ranks, a.layers, a.hidden, a.seq, a.batch, a.delay_ns_per_byte,
              volume, volume * 4 / 1e6))
    print("  with overlap      %8.1f ms/step" % o)
    print("  --no-overlap      %8.1f ms/step" % n)
    print("  overlap saves %.1f ms/step (%.0f%%); no-overlap / overlap = %.2f" % (
        n - o, 100.0 * (n - o) / n, n / o))
    return 0


if __name__ == "__main__":
    sys.exit(main())
