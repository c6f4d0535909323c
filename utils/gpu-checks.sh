#!/usr/bin/env bash
# Every GPU check of the CUDA backend, in one call on a GPU machine.
#
#   utils/gpu-checks.sh bundle    here (no GPU needed): build, then fill gpu-bundle/
#                                 with zero-run, its libraries, compiled plans and
#                                 the CPU references
#   bash utils/gpu-checks.sh run  on the GPU machine (the device tool:
#                                 run(command="bash utils/gpu-checks.sh run",
#                                     carry=["gpu-bundle"]))
#
# run checks, on --device=cuda:
#   1. the ONNX backend node tests (the same cases and tolerances as on the CPU);
#   2. the gradient checks (finite differences, on the GPU);
#   3. the GPT trains 20 steps (AdamW, ZeRO stage 2 on one rank, so its collectives
#      go through NCCL) with per-step losses within 1e-4 of the CPU backend's;
#      3b. with 2 GPUs or more: ZeRO-3 on 2 ranks, threads of one zero-run;
#      3c. an integer division by zero is reported as an error;
#   4. the GPT-2 small training step in zero-run and in PyTorch eager, and their ratio.
# The GPU machine has no zero-opt (no MLIR there): plans are compiled by `bundle`.
set -euo pipefail
cd "$(dirname "$0")/.."
B=gpu-bundle

bundle() {
  utils/setup.sh build
  grep -q '^ZERO_HAVE_CUDA:INTERNAL=ON' build/CMakeCache.txt 2>/dev/null ||
    ldd build/bin/zero-run | grep -q libnccl ||
    { echo "gpu-checks: this build has no CUDA backend" >&2; exit 1; }
  rm -rf "$B" && mkdir -p "$B/bin" "$B/lib" "$B/gpt" "$B/bench" "$B/div"
  cp build/bin/zero-run "$B/bin/" && strip "$B/bin/zero-run"
  # The Debian libraries zero-run needs; not the C runtime, not CUDA's (the GPU
  # image has CUDA 13's cuBLAS and NCCL).
  ldd build/bin/zero-run | awk '/=> \// {print $3}' |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt)[.-]|libcuda|libcublas|libnccl' |
    xargs -I{} cp -L {} "$B/lib/"
  # 1. node tests: compiled plans, and the cases they come from.
  /usr/bin/python3 utils/run-onnx-node-tests.py --bin build/bin --cases build/onnx-node \
    --skip test/onnx-node/skipped.txt --bundle "$B/node"
  mkdir -p "$B/onnx-node/node"
  for c in "$B"/node/*/; do cp -r "build/onnx-node/node/$(basename "$c")" "$B/onnx-node/node/"; done
  # 2. gradient checks: compiled plans (the models are rebuilt there, same seeds).
  /usr/bin/python3 utils/grad-check.py --bin build/bin --cases test/Gradients/cases.py \
    --bundle "$B/grad"
  # 3. the GPT: model, plan, data, and the CPU run to compare with.
  /usr/bin/python3 utils/make_gpt.py "$B/gpt/gpt.onnx" --layers 2 --hidden 64 --seq 32 2>/dev/null
  build/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=2 --world-size=1 -o "$B/gpt/step.zplan"
  head -c 40000 /usr/share/common-licenses/GPL-3 > "$B/gpt/text.u8"
  build/bin/zero-run "$B/gpt/step.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cpu.json" --device cpu --quiet
  # 3b. the same at ZeRO-3 on 2 ranks (threads of one process), for machines with 2 GPUs.
  build/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=3 --world-size=2 -o "$B/gpt/step-w2.zplan"
  build/bin/zero-run "$B/gpt/step-w2.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cpu-w2.json" --device cpu --quiet
  # 3c. integer division by zero: an error on the GPU too (the lit test's inputs).
  build/bin/zero-opt test/Target/Zplan/Inputs/int-div.onnxtxt --mode=inference -o "$B/div/div.zplan"
  /usr/bin/python3 - "$B/div" <<'PY'
import os, sys
import numpy as np, onnx.numpy_helper as nh
for case, b in (("ok", [2, 2, 3]), ("zero", [2, 0, 3])):
    os.makedirs(os.path.join(sys.argv[1], case), exist_ok=True)
    for i, v in enumerate(([7, -7, 9], b)):
        with open(os.path.join(sys.argv[1], case, "input_%d.pb" % i), "wb") as f:
            f.write(nh.from_array(np.array(v, dtype=np.int64)).SerializeToString())
PY
  # 4. GPT-2 small, shapes only (the weights are made on the GPU machine).
  /usr/bin/python3 utils/gen_gpt_onnx.py "$B/bench/shape.onnx" --layers 12 --hidden 768 \
    --heads 12 --vocab 50257 --seq 1024 --batch 8 > /dev/null
  build/bin/zero-opt "$B/bench/shape.onnx" -o "$B/bench/step.zplan"
  du -sh "$B"
}

# Per-step losses of two --log-json files agree to 1e-4 relative.
compare_losses() {
  python3 - "$1" "$2" <<'PY'
import json, sys
ref = [json.loads(l)["loss"] for l in open(sys.argv[1])]
got = [json.loads(l)["loss"] for l in open(sys.argv[2])]
worst = max(abs(a - b) / abs(a) for a, b in zip(ref, got))
print("losses: %d steps, worst relative error %.2e (limit 1e-4)" % (len(got), worst))
sys.exit(0 if len(ref) == len(got) == 20 and worst < 1e-4 else 1)
PY
}

run() {
  [ -x "$B/bin/zero-run" ] || { echo "gpu-checks: no $B/ (run 'utils/gpu-checks.sh bundle' first)" >&2; exit 1; }
  # CUDA 13's cuBLAS, cuDART and NCCL from the image's Python packages.
  libs=$(python3 - <<'PY'
import importlib, os
dirs = []
for name in ("nvidia.cublas", "nvidia.cuda_runtime", "nvidia.nccl"):
    try:
        m = importlib.import_module(name)
        for p in m.__path__:
            if os.path.isdir(os.path.join(p, "lib")):
                dirs.append(os.path.join(p, "lib"))
    except ImportError:
        pass
print(":".join(dirs))
PY
)
  export LD_LIBRARY_PATH="$PWD/$B/lib:$libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  export OPENBLAS_NUM_THREADS=4
  nvidia-smi -L || true
  failed=0
  echo "== 1. ONNX backend node tests on cuda"
  python3 utils/run-onnx-node-tests.py --bin "$B/bin" --cases "$B/onnx-node" \
    --skip test/onnx-node/skipped.txt --prebuilt "$B/node" --device cuda || failed=1
  echo "== 2. gradient checks on cuda"
  python3 utils/grad-check.py --bin "$B/bin" --cases test/Gradients/cases.py \
    --prebuilt "$B/grad" --device cuda || failed=1
  echo "== 3. GPT, 20 steps of AdamW, cuda (NCCL from ncclCommInitAll, one rank) vs cpu"
  "$B/bin/zero-run" "$B/gpt/step.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cuda.json" --device cuda --quiet || failed=1
  compare_losses "$B/gpt/cpu.json" "$B/gpt/cuda.json" || failed=1
  echo "== 3b. GPT at ZeRO-3 on 2 GPUs, one process (ncclCommInitAll) vs cpu"
  if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
    "$B/bin/zero-run" "$B/gpt/step-w2.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
      --steps 20 --log-json "$B/gpt/cuda-w2.json" --device cuda --quiet || failed=1
    compare_losses "$B/gpt/cpu-w2.json" "$B/gpt/cuda-w2.json" || failed=1
  else
    echo "skipped: this machine has fewer than 2 GPUs"
  fi
  echo "== 3c. integer division by zero on cuda is an error"
  "$B/bin/zero-run" --device=cuda "$B/div/div.zplan" --inputs "$B/div/ok" | tee "$B/div/ok.txt"
  grep -q "y: i64\[3\] = 3 -3 3" "$B/div/ok.txt" || { echo "wrong quotients"; failed=1; }
  if "$B/bin/zero-run" --device=cuda "$B/div/div.zplan" --inputs "$B/div/zero" 2> "$B/div/zero.txt"; then
    echo "a zero divisor was not reported"; failed=1
  else
    cat "$B/div/zero.txt"
    grep -q "integer division by zero" "$B/div/zero.txt" || failed=1
  fi
  echo "== 4. GPT-2 small training step: zero-run vs PyTorch eager"
  python3 utils/bench-gpu.py --zero-run "$B/bin/zero-run" --plan "$B/bench/step.zplan" || failed=1
  [ "$failed" = 0 ] && echo "gpu-checks: all passed" || echo "gpu-checks: FAILED"
  return "$failed"
}

case "${1:-}" in
bundle) bundle ;;
run) run ;;
*) echo "usage: utils/gpu-checks.sh bundle|run" >&2; exit 2 ;;
esac
