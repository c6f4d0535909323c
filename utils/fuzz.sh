#!/usr/bin/env bash
# The fuzz targets of test/Fuzz: libFuzzer, with AddressSanitizer and
# UndefinedBehaviorSanitizer on the project's code.
#
#   utils/fuzz.sh build                  configure and build build-fuzz/ (clang-22)
#   utils/fuzz.sh run TARGET SECONDS     replay TARGET's crashers (each must now
#                                        pass), then fuzz for SECONDS from a copy
#                                        of its seed corpus; exit 1 on a finding,
#                                        left in build-fuzz/findings/TARGET/
#   utils/fuzz.sh seeds                  rewrite the seed corpora from small models
#
# TARGET is onnx-import (ONNX bytes through the importer, the pipeline and the
# plan writer), plan-loader (plan payloads through the loader, the verifier,
# kernel binding and one CPU run), checkpoint-manifest (a manifest.json through its
# checksum and checks, then rank files made to its word through the reader and
# consolidation), deepspeed-config (a DeepSpeed config through zero-opt's reader
# and the options' rules), safetensors (zero-run --init W.safetensors), machine-file
# (zero-opt --machine FILE) or rendezvous (rank 0's answers to a rank of a launch
# without mpirun, over loopback). A finding worth keeping as a regression input goes into
# test/Fuzz/crashers/TARGET/ once it is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
FB=${ZERO_FUZZ_BUILD:-build-fuzz}

build() {
  # The ONNX library utils/setup.sh built for build/ (the same for both builds).
  [ -e build/onnx ] || { echo "fuzz.sh: no build/onnx (run utils/setup.sh first)" >&2; exit 1; }
  mkdir -p "$FB" && ln -sfn "$(readlink -f build/onnx)" "$FB/onnx"
  if [ ! -f "$FB/build.ninja" ]; then
    CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$FB" -DCMAKE_BUILD_TYPE=Release \
      -DZERO_FUZZ=ON -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
  fi
  cmake --build "$FB" --target fuzz-onnx-import fuzz-plan-loader fuzz-checkpoint-manifest \
    fuzz-deepspeed-config fuzz-safetensors fuzz-machine-file fuzz-rendezvous
}

run() {
  local target=$1 seconds=$2
  local bin="$FB/bin/fuzz-$target" seeds=test/Fuzz/corpus/$target crashers=test/Fuzz/crashers/$target
  [ -x "$bin" ] || { echo "fuzz: no $bin (utils/fuzz.sh build first)" >&2; exit 1; }
  local work="$FB/work/$target" findings="$FB/findings/$target"
  rm -rf "$work" && mkdir -p "$work/corpus" "$findings"
  cp "$seeds"/* "$work/corpus/"
  # Leaks are findings too; the sanitizers stop at the first problem. LLVM's
  # allocators poison their own memory from instrumented headers while Debian's
  # uninstrumented MLIR never unpoisons it: manual poisoning is off.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_poisoning=0
  export UBSAN_OPTIONS=print_stacktrace=1
  # The targets write nothing; external data they may name is looked up here.
  cd "$work"
  if [ -d "$OLDPWD/$crashers" ] && [ -n "$(ls -A "$OLDPWD/$crashers")" ]; then
    echo "fuzz $target: replaying $(ls "$OLDPWD/$crashers" | wc -l) crashers"
    "$OLDPWD/$bin" -runs=1 "$OLDPWD/$crashers"/* > replay.log 2>&1 ||
      { tail -30 replay.log; echo "fuzz $target: a kept crasher fails again"; exit 1; }
  fi
  echo "fuzz $target: $seconds s from $(ls corpus | wc -l) seeds"
  "$OLDPWD/$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -max_len=200000 -artifact_prefix="$OLDPWD/$findings/" -print_final_stats=1 \
    corpus > fuzz.log 2>&1 && rc=0 || rc=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" fuzz.log || true
  if [ "$rc" != 0 ]; then
    grep -E -A25 "ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|libFuzzer)|runtime error" fuzz.log | head -60
    echo "fuzz $target: FINDING (input in $findings/)"
    exit 1
  fi
  echo "fuzz $target: no finding"
}

# Seeds: small models of every kind the tests use, as binary ONNX, and the plans
# zero-opt makes of them (payloads, without the 32-byte header).
seeds() {
  [ -x build/bin/zero-opt ] || { echo "fuzz: build first (utils/setup.sh)" >&2; exit 1; }
  local onnx=test/Fuzz/corpus/onnx-import plans=test/Fuzz/corpus/plan-loader
  rm -rf "$onnx" "$plans" && mkdir -p "$onnx" "$plans"
  build/python-env/bin/python - "$onnx" <<'PY'
import glob, os, sys
import onnx
from onnx import parser
out = sys.argv[1]
for path in sorted(glob.glob("test/Import/ONNX/*.onnxtxt") + glob.glob("test/Import/ONNX/Inputs/*.onnxtxt")
                   + glob.glob("test/Target/Zplan/Inputs/*.onnxtxt")):
    try:
        m = parser.parse_model(open(path).read())
    except Exception:
        continue
    open(os.path.join(out, os.path.basename(path) + ".onnx"), "wb").write(m.SerializeToString())
PY
  local tmp; tmp=$(mktemp -d)
  build/python-env/bin/python utils/zero_export.py "$onnx/llama.onnx" --model llama --layers 1 --hidden 8 \
    --heads 2 --vocab 16 --seq 4 --batch 2 >/dev/null 2>&1
  build/python-env/bin/python utils/zero_export.py "$onnx/mlp.onnx" --model mlp --hidden 8 --vocab 16 \
    --seq 4 --batch 2 >/dev/null 2>&1
  build/python-env/bin/python utils/gen_gpt_onnx.py "$onnx/gpt.onnx" --layers 1 --hidden 8 --heads 2 \
    --vocab 16 --seq 4 --batch 2 --weights random --shape-operands initializers >/dev/null
  for m in "$onnx"/*.onnx; do
    local name; name=$(basename "$m" .onnx)
    for flags in "--mode=inference" "" "--zero-stage=2"; do
      if build/bin/zero-opt "$m" $flags -o "$tmp/p.zplan" 2>/dev/null; then
        tail -c +33 "$tmp/p.zplan" > "$plans/$name${flags//[^a-z0-9]/}.plan"
      fi
    done
  done
  # Manifests of small checkpoints: each stage on 1 to 3 ranks, each precision, SGD.
  local manifests=test/Fuzz/corpus/checkpoint-manifest configs=test/Fuzz/corpus/deepspeed-config
  rm -rf "$manifests" "$configs" && mkdir -p "$manifests" "$configs"
  build/python-env/bin/python utils/make_gpt.py "$tmp/gpt.onnx" --layers 1 --hidden 8 --heads 2 \
    --vocab 256 --seq 4 --batch 2 >/dev/null 2>&1
  for run in "0 1" "1 2" "2 2 --precision=bf16" "3 3 --precision=fp16" "3 2 --optimizer=sgd --momentum=0.9" \
             "2 3 --grad-accum-steps=2 --lr-schedule=warmup --warmup-steps=2"; do
    set -- $run
    local stage=$1 world=$2 flags name; shift 2
    flags="$*"
    name=s$stage-w$world${flags//[^a-z0-9]/}
    build/bin/zero-opt "$tmp/gpt.onnx" --zero-stage=$stage --world-size=$world --bucket-size-mb=0.0005 \
      "$@" -o "$tmp/p.zplan"
    build/bin/zero-run "$tmp/p.zplan" --init "$tmp/gpt.onnx" --data LICENSE --steps 2 \
      --save-checkpoint "$tmp/ck-$name" --quiet
    cp "$tmp/ck-$name/step-2/manifest.json" "$manifests/$name.json"
  done
  # Safetensors files: a few tensors of each dtype zero-run reads.
  local tensors=test/Fuzz/corpus/safetensors
  rm -rf "$tensors" && mkdir -p "$tensors"
  build/python-env/bin/python - "$tensors" <<'PY'
import os, sys, torch
from safetensors.torch import save_file
out = sys.argv[1]
save_file({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}, os.path.join(out, "f32.safetensors"))
save_file({"a.weight": torch.ones(3, 2, dtype=torch.bfloat16), "a.bias": torch.zeros(3, dtype=torch.float16),
           "n": torch.tensor([1, 2], dtype=torch.int64)}, os.path.join(out, "mixed.safetensors"),
          metadata={"format": "pt"})
save_file({}, os.path.join(out, "empty.safetensors"))
PY
  # DeepSpeed configs: the tests' and the tutorial's.
  cp test/Integration/Inputs/ds-recipe.json test/Integration/Inputs/deepspeed-tutorial/*.config \
    "$configs/"
  rm -rf "$tmp"
  du -sh "$onnx" "$plans" "$manifests" "$configs" "$tensors"
}

case "${1:-}" in
build) build ;;
run) run "${2:?target}" "${3:?seconds}" ;;
seeds) seeds ;;
*) echo "usage: utils/fuzz.sh build | run onnx-import|plan-loader|checkpoint-manifest|deepspeed-config|safetensors SECONDS | seeds" >&2; exit 2 ;;
esac
