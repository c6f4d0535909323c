#!/usr/bin/env bash
# Sets up (packages, build), then: writes a small GPT with python3-torch, compiles it
# with zero-opt, runs it forward with zero-run and prints its loss beside PyTorch's.
#
#   utils/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh build
work=build/demo
rm -rf "$work" && mkdir -p "$work"

echo
echo "== 1. A GPT (2 layers, hidden 64, vocab 256, tied embeddings) exported by PyTorch"
/usr/bin/python3 utils/make_gpt.py "$work/gpt.onnx" --save-batch "$work/batch" 2>/dev/null
echo "   $work/gpt.onnx, one batch of tokens and targets in $work/batch/"

echo
echo "== 2. zero-opt compiles it to a plan"
echo "   \$ zero-opt gpt.onnx --mode=inference -o gpt.zplan"
build/bin/zero-opt "$work/gpt.onnx" --mode=inference -o "$work/gpt.zplan"
build/bin/zero-opt "$work/gpt.onnx" --emit=plan |
  awk '/arena_bytes/ { match($0, /arena_bytes = [0-9]+/); a = substr($0, RSTART + 14, RLENGTH - 14) }
       /plan.kernel/ { k++ } /plan.buffer/ { b++ }
       END { printf "   %d kernels, %d buffers in a %.1f KiB arena\n", k, b, a / 1024 }'

echo
echo "== 3. zero-run runs it forward"
echo "   \$ zero-run gpt.zplan --init gpt.onnx --inputs batch/"
build/bin/zero-run "$work/gpt.zplan" --init "$work/gpt.onnx" --inputs "$work/batch" \
  --save-outputs "$work/out" | sed 's/^/   /'

echo
echo "== 4. PyTorch computed the same loss on the same batch:"
printf '   '
/usr/bin/python3 utils/compare-tensors.py "$work/out/output_0.pb" "$work/batch/output_0.pb" --rtol 1e-5
