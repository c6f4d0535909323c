#!/usr/bin/env bash
# Every GPU check of the CUDA backend, in one call on a GPU machine.
#
#   utils/gpu-checks.sh bundle    here (no GPU needed): build, then fill gpu-bundle/
#                                 with zero-run, its libraries, compiled plans and
#                                 the CPU references, packed as gpu-bundle/bundle.tgz
#   bash utils/gpu-checks.sh run [CHECK...]
#                                 on the GPU machine, with gpu-bundle/ copied there:
#                                 every check, or those named (e.g. run 3e 4 4e 5)
#
# run checks, on --device=cuda:
#   1. the ONNX backend node tests (the same cases and tolerances as on the CPU);
#   2. the gradient checks: every element against the CPU backend's, and finite
#      differences at 3 elements per weight, on the GPU (a zero-run start costs
#      about a second there, and a difference two starts);
#      2b. fused attention in f32, bf16 and fp16, on cuDNN's fused kernels (16
#          bits, where its graph takes the case; the line says which path ran)
#          and on the project's kernels (tensor cores; CUDA cores for f32 and
#          heads over 128): every gradient element against the CPU's and the
#          f32 plan's (attention-check.py);
#   3. the GPT trains 20 steps (AdamW, ZeRO stage 2 on one rank, so its collectives
#      go through NCCL) with per-step losses within 1e-4 of the CPU backend's;
#      3b. with 2 GPUs or more: ZeRO-3 on 2 ranks, threads of one zero-run;
#      3c. an integer division by zero is reported as an error;
#      3d. mixed precision: the GPT in bf16 and fp16 (ZeRO stage 2, one rank), 20
#          steps, per-step losses within 1e-2 of the CPU backend's (16-bit rounding
#          amplifies the GEMMs' different summation orders);
#      3e. optimizer offload (--offload-optimizer=cpu, ZeRO stage 2, one rank): the
#          GPT in f32 and bf16, 20 steps, per-step losses within 1e-4 / 1e-2 of the
#          CPU backend's without offload;
#      3f. an update that makes the weights non-finite (a learning rate of 1e39,
#          f32 and bf16) stops the run, naming the step and the tensor, before the
#          weights or a checkpoint are written;
#      3g. the step as one CUDA graph: 20 steps replayed against 20 with every
#          kernel launched (--no-cuda-graph), fp32 equal, bf16 within 1e-3;
#      3h. every fused program of the Llama and the tanh-GELU GPT (fp32, bf16,
#          fp16, with and without epilogues) as its NVRTC-compiled kernel against
#          the interpreter kernel: 3 steps' losses and weights bit for bit
#          (utils/fused-kernels-bitwise.py);
#      3i. with 2 GPUs or more: ZeRO++'s quantized collectives (qwZ + qgZ, ZeRO-3
#          on 2 ranks: the quantization kernels around ncclAllGather and
#          ncclAlltoAll), per-step losses within 1e-4 of the CPU's quantized run;
#      3j. with 4 GPUs or more: a 2 x 2 hybrid grid (ZeRO-3 sharded in groups of 2,
#          NCCL communicators split per group), per-step losses within 1e-4 of the
#          CPU's run of the same plan;
#   4. the GPT-2 small training step in zero-run, PyTorch eager and torch.compile,
#      with tokens/s, model FLOPs utilization and zero-run's time per kernel kind
#      (utils/bench-gpu.py);
#      4b. the same in bf16 (PyTorch under torch.autocast);
#      4c. both again compiled with --no-fusion (a kernel per elementwise op): the
#          step before fusion (zero-run and eager only, as 4d);
#      4d. both again compiled with --no-attention-fusion (attention as its parts:
#          the T x T scores, softmax, two batched GEMMs): the step before fused
#          attention;
#      4e. fused attention alone, forward and backward (one layer of GPT-2 small's
#          shape: batch 8, 12 heads of 64, T = 1024, causal), fp32 and bf16, against
#          PyTorch's scaled_dot_product_attention (utils/bench-attention-gpu.py);
#   5. GPT-2 small's measured peak device memory against the report's, without and
#      under a budget, and step time with and without optimizer offload
#      (utils/gpu-memory.py).
# The GPU machine has no zero-opt (no MLIR there): plans are compiled by `bundle`.
#
#   utils/gpu-checks.sh bundle rehearsal; utils/gpu-checks.sh rehearse
#                                 here, no GPU: checks 1-3h as `run` does them,
#                                 with zero-run-cuda-emulated (the CUDA backend over
#                                 emulated CUDA) and 8 emulated GPUs; checks 4 and 5's
#                                 scripts on a tiny GPT, PyTorch on the CPU
set -euo pipefail
cd "$(dirname "$0")/.."
B=${GPU_BUNDLE:-gpu-bundle}        # where bundle writes and run/rehearse read
BUILD=${ZERO_BUILD_DIR:-build}     # the build bundle and rehearse take binaries from

# bundle [rehearsal]: for a rehearsal, from the existing build, CUDA or not.
bundle() {
  if [ -z "${1:-}" ]; then
    utils/setup.sh build
    ldd "$BUILD/bin/zero-run" | grep -q libnccl ||
      { echo "gpu-checks: this build has no CUDA backend" >&2; exit 1; }
  fi
  rm -rf "$B" && mkdir -p "$B/bin" "$B/lib" "$B/gpt" "$B/bench" "$B/div" "$B/mem" "$B/quick"
  cp "$BUILD/bin/zero-run" "$B/bin/" && strip "$B/bin/zero-run"
  # The Debian libraries zero-run needs; not the C runtime, not CUDA's (the GPU
  # image has CUDA 13's cuBLASLt and NCCL).
  ldd $BUILD/bin/zero-run | awk '/=> \// {print $3}' |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt)[.-]|libcuda|libcublas|libnccl' |
    xargs -I{} cp -L {} "$B/lib/"
  # 1. node tests: compiled plans, and the cases they come from.
  "$BUILD/python-env/bin/python" utils/run-onnx-node-tests.py --bin $BUILD/bin --cases $BUILD/onnx-node \
    --skip test/onnx-node/skipped.txt --bundle "$B/node"
  mkdir -p "$B/onnx-node/node"
  for c in "$B"/node/*/; do cp -r "$BUILD/onnx-node/node/$(basename "$c")" "$B/onnx-node/node/"; done
  # 2. gradient checks: compiled plans (the models are rebuilt there, same seeds).
  "$BUILD/python-env/bin/python" utils/grad-check.py --bin $BUILD/bin --cases test/Gradients/cases.py \
    --bundle "$B/grad"
  # 2b. 16-bit attention: compiled plans (the models are rebuilt there, same seed).
  "$BUILD/python-env/bin/python" utils/attention-check.py --bin $BUILD/bin --bundle "$B/attn"
  # 3h. generated kernels: the models and plans, their fused programs counted.
  "$BUILD/python-env/bin/python" utils/fused-kernels-bitwise.py --bin $BUILD/bin \
    --bundle "$B/generated" --models llama,gpt-tanh
  # 3. the GPT: model, plan, data, and the CPU run to compare with.
  "$BUILD/python-env/bin/python" utils/make_gpt.py "$B/gpt/gpt.onnx" --layers 2 --hidden 64 --seq 32 2>/dev/null
  $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=2 --world-size=1 -o "$B/gpt/step.zplan"
  head -c 40000 /usr/share/common-licenses/GPL-3 > "$B/gpt/text.u8"
  $BUILD/bin/zero-run "$B/gpt/step.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cpu.json" --device cpu --quiet
  # 3b. the same at ZeRO-3 on 2 ranks (threads of one process), for machines with 2 GPUs.
  $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=3 --world-size=2 -o "$B/gpt/step-w2.zplan"
  $BUILD/bin/zero-run "$B/gpt/step-w2.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cpu-w2.json" --device cpu --quiet
  # 3i. the same with ZeRO++'s quantized collectives.
  $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=3 --world-size=2 --zero-quantized-weights \
    --zero-quantized-gradients -o "$B/gpt/step-w2q.zplan"
  $BUILD/bin/zero-run "$B/gpt/step-w2q.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cpu-w2q.json" --device cpu --quiet
  # 3j. a 2 x 2 hybrid grid.
  $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=3 --world-size=4 --zero-shard-group-size=2 \
    -o "$B/gpt/step-grid.zplan"
  $BUILD/bin/zero-run "$B/gpt/step-grid.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
    --steps 20 --log-json "$B/gpt/cpu-grid.json" --device cpu --quiet
  # 3d. mixed precision, the same GPT.
  for p in bf16 fp16; do
    $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=2 --world-size=1 --precision=$p \
      -o "$B/gpt/step-$p.zplan"
    $BUILD/bin/zero-run "$B/gpt/step-$p.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
      --steps 20 --log-json "$B/gpt/cpu-$p.json" --device cpu --quiet
  done
  # 3e. optimizer offload, the same GPT (compared with 3's and 3d's CPU runs).
  for p in fp32 bf16; do
    $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=2 --world-size=1 --precision=$p \
      --offload-optimizer=cpu -o "$B/gpt/step-offload-$p.zplan"
  done
  # 3f. non-finite updates: a learning rate whose first update overflows f32.
  for p in fp32 bf16; do
    $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=2 --world-size=1 --precision=$p \
      --lr=1e39 -o "$B/gpt/step-nonfinite-$p.zplan"
  done
  # 3c. integer division by zero: an error on the GPU too (the lit test's inputs).
  $BUILD/bin/zero-opt test/Target/Zplan/Inputs/int-div.onnxtxt --mode=inference -o "$B/div/div.zplan"
  "$BUILD/python-env/bin/python" - "$B/div" <<'PY'
import os, sys
import numpy as np, onnx.numpy_helper as nh
for case, b in (("ok", [2, 2, 3]), ("zero", [2, 0, 3])):
    os.makedirs(os.path.join(sys.argv[1], case), exist_ok=True)
    for i, v in enumerate(([7, -7, 9], b)):
        with open(os.path.join(sys.argv[1], case, "input_%d.pb" % i), "wb") as f:
            f.write(nh.from_array(np.array(v, dtype=np.int64)).SerializeToString())
PY
  # 4. GPT-2 small, shapes only (the weights are made on the GPU machine).
  "$BUILD/python-env/bin/python" utils/gen_gpt_onnx.py "$B/bench/shape.onnx" --layers 12 --hidden 768 \
    --heads 12 --vocab 50257 --seq 1024 --batch 8 > /dev/null
  $BUILD/bin/zero-opt "$B/bench/shape.onnx" -o "$B/bench/step.zplan"
  $BUILD/bin/zero-opt "$B/bench/shape.onnx" --precision=bf16 -o "$B/bench/step-bf16.zplan"
  # The same without fusion (a kernel per elementwise op), for the before/after figure.
  $BUILD/bin/zero-opt "$B/bench/shape.onnx" --no-fusion -o "$B/bench/step-unfused.zplan"
  $BUILD/bin/zero-opt "$B/bench/shape.onnx" --precision=bf16 --no-fusion \
    -o "$B/bench/step-bf16-unfused.zplan"
  # ... and with attention as its parts, for fused attention's before/after.
  $BUILD/bin/zero-opt "$B/bench/shape.onnx" --no-attention-fusion -o "$B/bench/step-parts.zplan"
  $BUILD/bin/zero-opt "$B/bench/shape.onnx" --precision=bf16 --no-attention-fusion \
    -o "$B/bench/step-bf16-parts.zplan"
  # ... and a tiny GPT, for rehearsing the benchmark script.
  "$BUILD/python-env/bin/python" utils/gen_gpt_onnx.py "$B/bench/tiny.onnx" --layers 1 --hidden 32 \
    --heads 2 --vocab 64 --seq 16 --batch 2 > /dev/null
  $BUILD/bin/zero-opt "$B/bench/tiny.onnx" -o "$B/bench/tiny.zplan"
  # 4e. one layer of GPT-2 small's shape, for its attention kernels.
  "$BUILD/python-env/bin/python" utils/gen_gpt_onnx.py "$B/bench/attn.onnx" --layers 1 --hidden 768 \
    --heads 12 --vocab 256 --seq 1024 --batch 8 > /dev/null
  $BUILD/bin/zero-opt "$B/bench/attn.onnx" -o "$B/bench/attn.zplan"
  $BUILD/bin/zero-opt "$B/bench/attn.onnx" --precision=bf16 -o "$B/bench/attn-bf16.zplan"
  $BUILD/bin/zero-opt "$B/bench/tiny.onnx" --precision=bf16 -o "$B/bench/tiny-bf16.zplan"
  $BUILD/bin/zero-opt "$B/bench/tiny.onnx" --no-fusion -o "$B/bench/tiny-unfused.zplan"
  $BUILD/bin/zero-opt "$B/bench/tiny.onnx" --no-attention-fusion -o "$B/bench/tiny-parts.zplan"
  # 5. memory and offload: GPT-2 small's plans and reports (and the tiny GPT's).
  for m in small tiny; do
    shape="$B/bench/shape.onnx"; [ $m = tiny ] && shape="$B/bench/tiny.onnx"
    base="--zero-stage=2 --world-size=1"
    $BUILD/bin/zero-opt "$shape" $base --report=json > "$B/mem/$m-fp32.json"
    # 60% of the peak (the least recomputation and small buckets reach is about
    # 51% of GPT-2 small's fp32 peak; the tiny GPT: its own peak, recomputation
    # saves it nothing).
    share=0.6; [ $m = tiny ] && share=1.0
    budget=$("$BUILD/python-env/bin/python" -c "import json, sys; print(json.load(open(sys.argv[1]))['per_rank_bytes']['total_peak'] * $share / 2**30)" "$B/mem/$m-fp32.json")
    echo "{\"fp32-budget\": $("$BUILD/python-env/bin/python" -c "print(int($budget * 2**30))")}" > "$B/mem/$m-budgets.json"
    for v in "fp32:" "fp32-budget:--max-memory-gb=$budget" "fp32-offload:--offload-optimizer=cpu" \
             "bf16:--precision=bf16" "bf16-offload:--precision=bf16 --offload-optimizer=cpu"; do
      name=${v%%:*} flags=${v#*:}
      $BUILD/bin/zero-opt "$shape" $base $flags -o "$B/mem/$m-$name.zplan"
      $BUILD/bin/zero-opt "$shape" $base $flags --report=json > "$B/mem/$m-$name.json"
    done
  done
  # quick (utils/gpu-quick.py): the GPT unfused (captured as a graph), GPT-2 small at
  # micro-batch 32 and the tiny GPT at 4 (the rehearsal's second size), the cost
  # model's predictions with the published H100 figures, and the commit.
  $BUILD/bin/zero-opt "$B/gpt/gpt.onnx" --zero-stage=2 --world-size=1 --no-fusion \
    -o "$B/gpt/step-unfused.zplan"
  "$BUILD/python-env/bin/python" utils/gen_gpt_onnx.py "$B/quick/shape-b32.onnx" --layers 12 \
    --hidden 768 --heads 12 --vocab 50257 --seq 1024 --batch 32 > /dev/null
  "$BUILD/python-env/bin/python" utils/gen_gpt_onnx.py "$B/quick/tiny-b4.onnx" --layers 1 \
    --hidden 32 --heads 2 --vocab 64 --seq 16 --batch 4 > /dev/null
  for v in "step:$B/bench/shape.onnx:8" "step-b32:$B/quick/shape-b32.onnx:32" \
           "tiny:$B/bench/tiny.onnx:2" "tiny-b4:$B/quick/tiny-b4.onnx:4"; do
    IFS=: read -r stem model batch <<< "$v"
    for p in fp32 bf16; do
      suffix=""; [ $p = bf16 ] && suffix="-bf16"
      [ -f "$B/bench/$stem$suffix.zplan" ] ||
        $BUILD/bin/zero-opt "$model" --precision=$p -o "$B/bench/$stem$suffix.zplan"
      $BUILD/bin/zero-opt "$model" --precision=$p --machine h100-nvlink --report=json \
        > "$B/quick/predicted-$p-b$batch.json"
    done
  done
  rm "$B/quick/shape-b32.onnx" "$B/quick/tiny-b4.onnx"
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with changes not committed)')" \
    > "$B/quick/commit.txt"
  # One compressed file (about 17 MB instead of 62: OpenBLAS compresses well), so
  # that the bundle and the repository stay well under what a GPU run can carry.
  tar -C "$B" -czf "$B.tgz" . && rm -rf "$B" && mkdir -p "$B" && mv "$B.tgz" "$B/bundle.tgz"
  du -sh "$B"
}

# Per-step losses of two --log-json files agree to 1e-4 relative (or $3).
compare_losses() {
  python3 - "$1" "$2" "${3:-1e-4}" <<'PY'
import json, sys
ref = [json.loads(l)["loss"] for l in open(sys.argv[1])]
got = [json.loads(l)["loss"] for l in open(sys.argv[2])]
limit = float(sys.argv[3])
worst = max(abs(a - b) / abs(a) for a, b in zip(ref, got))
print("losses: %d steps, worst relative error %.2e (limit %g)" % (len(got), worst, limit))
sys.exit(0 if len(ref) == len(got) == 20 and worst < limit else 1)
PY
}

# Zero-run against PyTorch eager on the bench plans compiled another way (run's
# variables): step-$1 and step-bf16-$1, or tiny-$1 in a rehearsal.
compare_variant() {
  if [ -n "$rehearse" ]; then
    $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/tiny-$1.zplan" \
      --model tiny --torch-device cpu --steps 2 --warmup 1 --no-compile --no-profile || failed=1
  else
    $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/step-$1.zplan" \
      --no-compile --no-profile || failed=1
    $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/step-bf16-$1.zplan" \
      --precision bf16 --no-compile --no-profile || failed=1
  fi
}

# Whether check $1 is to run: all of them, or those named after run/rehearse.
# Each check that runs starts with the seconds since the run began: what each one
# costs on a GPU, for planning the next run.
want() {
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]] || return 1
  echo "[${SECONDS}s] check $1"
}

# The GPU machine's libraries for zero-run (ZR): CUDA 13's, NCCL, cuDNN, NVRTC, found
# and checked; says the GPU and PyTorch's cuDNN.
gpu_env() {
  # CUDA 13's cuDART, cuBLAS and NCCL, and cuDNN 9 with NVRTC (optional): the image's
  # toolkit, or its Python packages (nvidia/cu13/lib in the CUDA 13 wheels,
  # nvidia/<name>/lib in older ones, nvidia/cudnn/lib).
  libs=$(python3 - <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
wanted = ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2",
          "libcudnn.so.9", "libnvrtc.so.13")  # NVRTC: cuDNN's runtime-compiled engines
dirs = []
for d in ["/usr/local/cuda/lib64", "/usr/local/cuda/lib",
          "/usr/local/cuda/targets/x86_64-linux/lib"] + [
        p for r in roots if os.path.isdir(os.path.join(r, "nvidia"))
        for p in glob.glob(os.path.join(r, "nvidia", "*", "lib"))]:
    if d not in dirs and any(os.path.exists(os.path.join(d, w)) for w in wanted):
        dirs.append(d)
print(":".join(dirs))
PY
)
  export LD_LIBRARY_PATH="$PWD/$B/lib:$libs:${LD_LIBRARY_PATH:-}"
  if ldd "$ZR" | grep -q "not found"; then
    echo "gpu-checks: zero-run's libraries are missing here (searched: $libs):" >&2
    ldd "$ZR" | grep "not found" >&2
    exit 1
  fi
  # cuBLASLt is opened at run time, not linked: check it loads before any test.
  "$ZR" --check-cuda-libraries || exit 1
  nvidia-smi -L || true
  # PyTorch's cuDNN, beside the one zero-run loaded (--check-cuda-libraries above).
  python3 -c "import torch; print('PyTorch', torch.__version__, 'cuDNN', torch.backends.cudnn.version())" || true
}

# run [rehearse]
run() {
  if [ -f "$B/bundle.tgz" ] && [ ! -x "$B/bin/zero-run" ]; then
    tar -C "$B" -xzf "$B/bundle.tgz"
  fi
  [ -x "$B/bin/zero-run" ] || { echo "gpu-checks: no $B/ (run 'utils/gpu-checks.sh bundle' first)" >&2; exit 1; }
  local rehearse="${1:-}" ZR="$B/bin/zero-run" PY=python3
  if [ -n "$rehearse" ]; then
    ZR=$BUILD/bin/zero-run-cuda-emulated PY=$BUILD/python-env/bin/python
    [ -x "$ZR" ] || { echo "gpu-checks: no $ZR (build first)" >&2; exit 1; }
    echo "gpu-checks: REHEARSAL with $ZR: the CUDA backend over emulated CUDA, no GPU"
  else
    gpu_env
  fi
  export OPENBLAS_NUM_THREADS=4
  failed=0
  # Rehearsed, checks 1, 2 and 2b run a few of their cases from the bundle: the
  # ctests cuda-emulated-onnx-node-tests, -gradient-checks and -attention-check
  # run every case on the same emulated backend; here the bundle's plans and this
  # script are what is rehearsed.
  local node_only=() grad_only=() attn_only=()
  if [ -n "$rehearse" ]; then
    node_only=(--only softmax) grad_only=(--only attention) attn_only=(--only causal_head64_t100)
  fi
  if want 1; then
    echo "== 1. ONNX backend node tests on cuda"
    $PY utils/run-onnx-node-tests.py --bin "$B/bin" --zero-run "$ZR" --cases "$B/onnx-node" \
      --skip test/onnx-node/skipped.txt --prebuilt "$B/node" --device cuda \
      "${node_only[@]}" || failed=1
  fi
  if want 2; then
    echo "== 2. gradient checks on cuda"
    $PY utils/grad-check.py --bin "$B/bin" --zero-run "$ZR" --cases test/Gradients/cases.py \
      --prebuilt "$B/grad" --device cuda --sample 3 --reference-device cpu \
      "${grad_only[@]}" || failed=1
  fi
  if want 2b; then
    echo "== 2b. fused attention in f32, bf16 and fp16 on cuda vs cpu"
    $PY utils/attention-check.py --bin "$B/bin" --zero-run "$ZR" --prebuilt "$B/attn" \
      --device cuda --precision fp32,bf16,fp16 ${rehearse:+--expect-cudnn} \
      "${attn_only[@]}" || failed=1
  fi
  if want 3; then
    echo "== 3. GPT, 20 steps of AdamW, cuda (NCCL from ncclCommInitAll, one rank) vs cpu"
    "$ZR" "$B/gpt/step.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
      --steps 20 --log-json "$B/gpt/cuda.json" --device cuda --quiet || failed=1
    compare_losses "$B/gpt/cpu.json" "$B/gpt/cuda.json" || failed=1
  fi
  # The GPT's plan $B/gpt/step-$2.zplan on $1 GPUs (threads of one zero-run), 20
  # steps against the CPU's run of it (cpu-$2.json); skipped on fewer GPUs.
  on_gpus() {
    if [ -n "$rehearse" ] || [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge "$1" ]; then
      "$ZR" "$B/gpt/step-$2.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
        --steps 20 --log-json "$B/gpt/cuda-$2.json" --device cuda --quiet || failed=1
      compare_losses "$B/gpt/cpu-$2.json" "$B/gpt/cuda-$2.json" || failed=1
    else
      echo "skipped: this machine has fewer than $1 GPUs"
    fi
  }
  if want 3b; then
    echo "== 3b. GPT at ZeRO-3 on 2 GPUs, one process (ncclCommInitAll) vs cpu"
    on_gpus 2 w2
  fi
  if want 3c; then
    echo "== 3c. integer division by zero on cuda is an error"
    "$ZR" --device=cuda "$B/div/div.zplan" --inputs "$B/div/ok" | tee "$B/div/ok.txt"
    grep -q "y: i64\[3\] = 3 -3 3" "$B/div/ok.txt" || { echo "wrong quotients"; failed=1; }
    if "$ZR" --device=cuda "$B/div/div.zplan" --inputs "$B/div/zero" 2> "$B/div/zero.txt"; then
      echo "a zero divisor was not reported"; failed=1
    else
      cat "$B/div/zero.txt"
      grep -q "integer division by zero" "$B/div/zero.txt" || failed=1
    fi
  fi
  if want 3d; then
    echo "== 3d. GPT in bf16 and fp16, 20 steps of AdamW, cuda vs cpu"
    for p in bf16 fp16; do
      "$ZR" "$B/gpt/step-$p.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
        --steps 20 --log-json "$B/gpt/cuda-$p.json" --device cuda --quiet || failed=1
      compare_losses "$B/gpt/cpu-$p.json" "$B/gpt/cuda-$p.json" 1e-2 || failed=1
    done
  fi
  if want 3e; then
    echo "== 3e. GPT with optimizer offload (f32 and bf16), 20 steps, cuda vs cpu without"
    for p in fp32 bf16; do
      ref="$B/gpt/cpu.json" tol=1e-4
      [ $p = bf16 ] && ref="$B/gpt/cpu-bf16.json" tol=1e-2
      "$ZR" "$B/gpt/step-offload-$p.zplan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" \
        --steps 20 --log-json "$B/gpt/cuda-offload-$p.json" --device cuda --quiet || failed=1
      compare_losses "$ref" "$B/gpt/cuda-offload-$p.json" $tol || failed=1
    done
  fi
  if want 3f; then
    echo "== 3f. a non-finite update on cuda stops the run before anything is saved"
    for p in fp32 bf16; do
      rm -rf "$B/gpt/nonfinite-$p" && mkdir -p "$B/gpt/nonfinite-$p"
      if "$ZR" "$B/gpt/step-nonfinite-$p.zplan" --init "$B/gpt/gpt.onnx" \
           --data "$B/gpt/text.u8" --steps 3 --device cuda --quiet \
           --save-weights "$B/gpt/nonfinite-$p/out.onnx" \
           --save-checkpoint "$B/gpt/nonfinite-$p/ck" 2> "$B/gpt/nonfinite-$p/err.txt"; then
        echo "$p: the run went on with non-finite weights"; failed=1
      else
        cat "$B/gpt/nonfinite-$p/err.txt"
        grep -q "after the update of step 1: .* is non-finite" "$B/gpt/nonfinite-$p/err.txt" ||
          failed=1
        if [ -e "$B/gpt/nonfinite-$p/out.onnx" ] || [ -e "$B/gpt/nonfinite-$p/ck/latest" ]; then
          echo "$p: something was written from the non-finite weights"; failed=1
        fi
      fi
    done
  fi
  if want 3g; then
    echo "== 3g. the step as one CUDA graph: replay against each kernel launched, 20 steps"
    for p in fp32 bf16; do
      plan="$B/gpt/step.zplan" tol=0
      [ $p = bf16 ] && plan="$B/gpt/step-bf16.zplan" tol=1e-3 # cuDNN's backward may add in any order
      for g in graph direct; do
        "$ZR" "$plan" --init "$B/gpt/gpt.onnx" --data "$B/gpt/text.u8" --steps 20 --device cuda \
          --quiet --log-json "$B/gpt/cuda-$p-$g.json" $([ $g = direct ] && echo --no-cuda-graph) \
          2> "$B/gpt/cuda-$p-$g.err" || failed=1
      done
      if grep -q "not as one CUDA graph" "$B/gpt/cuda-$p-graph.err"; then
        cat "$B/gpt/cuda-$p-graph.err"; failed=1
      fi
      $PY - "$B/gpt/cuda-$p-graph.json" "$B/gpt/cuda-$p-direct.json" $tol $p <<'PY' || failed=1
import json, sys
loss = lambda f: [json.loads(x)["loss"] for x in open(f)]
g, d, tol = loss(sys.argv[1]), loss(sys.argv[2]), float(sys.argv[3])
worst = max(abs(a - b) / abs(b) for a, b in zip(g, d)) if len(g) == len(d) > 0 else float("inf")
print("%s: graph replay against direct launches, %d steps, worst relative difference %.2e "
      "(limit %g)" % (sys.argv[4], len(g), worst, tol))
sys.exit(0 if worst <= tol else 1)
PY
    done
  fi
  if want 3h; then
    echo "== 3h. generated fused kernels (NVRTC) against the interpreter kernel, bit for bit"
    $PY utils/fused-kernels-bitwise.py --bin "$B/bin" --zero-run "$ZR" \
      --prebuilt "$B/generated" || failed=1
  fi
  if want 3i; then
    echo "== 3i. GPT at ZeRO-3 on 2 GPUs with quantized collectives (qwZ + qgZ) vs cpu"
    on_gpus 2 w2q
  fi
  if want 3j; then
    echo "== 3j. GPT on a 2 x 2 hybrid grid, 4 GPUs (NCCL communicators split per group) vs cpu"
    on_gpus 4 grid
  fi
  if want 4; then
    echo "== 4. GPT-2 small training step: zero-run vs PyTorch eager and torch.compile (fp32, then bf16)"
    if [ -n "$rehearse" ]; then
      echo "(rehearsed with a tiny GPT and PyTorch on the CPU)"
      $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/tiny.zplan" --model tiny \
        --torch-device cpu --steps 2 --warmup 1 || failed=1
      # torch.compile on the CPU once (fp32, above): the quick rehearsal compiles too.
      $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/tiny-bf16.zplan" --model tiny \
        --torch-device cpu --steps 2 --warmup 1 --precision bf16 --no-compile || failed=1
    else
      $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/step.zplan" || failed=1
      $PY utils/bench-gpu.py --zero-run "$ZR" --plan "$B/bench/step-bf16.zplan" \
        --precision bf16 || failed=1
    fi
  fi
  # The comparisons: zero-run and eager only (torch.compile and the profile are
  # the main figures').
  if want 4c; then
    echo "== 4c. without fusion (zero-opt --no-fusion): the figures before fusion"
    compare_variant unfused
  fi
  if want 4d; then
    echo "== 4d. attention as its parts (zero-opt --no-attention-fusion): before fused attention"
    compare_variant parts
  fi
  if want 4e; then
    echo "== 4e. fused attention alone: zero-run's kernels against PyTorch's SDPA"
    if [ -n "$rehearse" ]; then
      $PY utils/bench-attention-gpu.py --zero-run "$ZR" --plan "$B/bench/tiny.zplan" \
        --model tiny --torch-device cpu --steps 2 || failed=1
    else
      $PY utils/bench-attention-gpu.py --zero-run "$ZR" --plan "$B/bench/attn.zplan" || failed=1
      $PY utils/bench-attention-gpu.py --zero-run "$ZR" --plan "$B/bench/attn-bf16.zplan" \
        --precision bf16 || failed=1
    fi
  fi
  if want 5; then
    echo "== 5. GPT-2 small: measured peak memory against the report, under a budget; offload"
    if [ -n "$rehearse" ]; then
      echo "(rehearsed with a tiny GPT)"
      $PY utils/gpu-memory.py --zero-run "$ZR" --dir "$B/mem" --model tiny || failed=1
    else
      $PY utils/gpu-memory.py --zero-run "$ZR" --dir "$B/mem" || failed=1
    fi
  fi
  echo "[${SECONDS}s] done"
  [ "$failed" = 0 ] && echo "gpu-checks: all passed" || echo "gpu-checks: FAILED"
  return "$failed"
}

# quick [OUT] | rehearse-quick [OUT]: utils/gpu-quick.py, its entry in OUT.
quick() {
  if [ -f "$B/bundle.tgz" ] && [ ! -x "$B/bin/zero-run" ]; then
    tar -C "$B" -xzf "$B/bundle.tgz"
  fi
  [ -x "$B/bin/zero-run" ] || { echo "gpu-checks: no $B/ (run 'utils/gpu-checks.sh bundle' first)" >&2; exit 1; }
  local out="$1" ZR="$B/bin/zero-run"
  export OPENBLAS_NUM_THREADS=4
  if [ -n "${2:-}" ]; then
    ZR=$BUILD/bin/zero-run-cuda-emulated
    [ -x "$ZR" ] || { echo "gpu-checks: no $ZR (build first)" >&2; exit 1; }
    "$BUILD/python-env/bin/python" utils/gpu-quick.py --bundle "$B" --zero-run "$ZR" \
      --out "$out" --rehearsal
  else
    gpu_env
    python3 utils/gpu-quick.py --bundle "$B" --zero-run "$ZR" --out "$out"
  fi
}

case "${1:-}" in
bundle) bundle "${2:-}" ;;
run) shift; ONLY="$*" run ;;
rehearse) shift; ONLY="$*" run rehearse ;;
quick) quick "${2:-${OUT:-gpu-quick}}" ;;
rehearse-quick) quick "${2:-gpu-quick-rehearsal}" rehearse ;;
*) echo "usage: utils/gpu-checks.sh bundle [rehearsal] | run [CHECK...] | rehearse [CHECK...]" \
        "| quick [OUT] | rehearse-quick [OUT]" >&2; exit 2 ;;
esac
