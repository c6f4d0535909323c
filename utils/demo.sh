#!/usr/bin/env bash
# Sets up (Debian's packages, a build of zero-opt and zero-run), then trains a small
# GPT byte-level on a text file that every Debian machine has, printing a falling
# loss (about a minute on 2 cores). Nothing comes from PyPI: the model is written
# with Debian's python3-onnx (utils/gen_gpt_onnx.py), zero-opt compiles its training
# step (forward, backward, AdamW), zero-run trains it and writes the trained model
# back as ONNX. The build is build-demo/ (utils/setup.sh --demo).
#
#   utils/demo.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh --demo build-demo
steps=${1:-600}
bin=build-demo/bin
work=build-demo/demo
text=/usr/share/common-licenses/GPL-3 # in base-files, on every Debian system
rm -rf "$work" && mkdir -p "$work"

echo
echo "== 1. A GPT written as ONNX: 2 layers, hidden 128, 4 heads, byte vocabulary (256),"
echo "      sequence 64, micro-batch 8, tied input and output embeddings, weights drawn"
echo "      from N(0, 0.02)"
/usr/bin/python3 utils/gen_gpt_onnx.py "$work/gpt.onnx" --layers 2 --hidden 128 --heads 4 \
  --vocab 256 --seq 64 --batch 8 --weights random --seed 0 | sed 's/^/   /'

echo
echo "== 2. zero-opt compiles one training step: forward, backward, AdamW"
echo "   \$ zero-opt gpt.onnx --optimizer=adamw --lr=3e-3 -o step.zplan"
"$bin/zero-opt" "$work/gpt.onnx" --optimizer=adamw --lr=3e-3 -o "$work/step.zplan"
"$bin/zero-opt" "$work/gpt.onnx" --optimizer=adamw --lr=3e-3 --emit=plan |
  awk '/arena_bytes/ { match($0, /arena_bytes = [0-9]+/); a = substr($0, RSTART + 14, RLENGTH - 14) }
       /plan.kernel/ { k++ } /plan.buffer param / { p++ } /plan.buffer state / { s++ }
       END { printf "   %d kernels; %d parameters and %d optimizer states in a %.1f MiB arena\n", k, p, s, a / 1048576 }'

echo
echo "== 3. zero-run trains it on $text (byte level)"
echo "   \$ zero-run step.zplan --init gpt.onnx --data GPL-3 --steps $steps --shuffle"
"$bin/zero-run" "$work/step.zplan" --init "$work/gpt.onnx" --data "$text" \
  --data-format=u8 --steps "$steps" --shuffle --seed 0 --print-every 50 \
  --log-json "$work/log.json" --save-weights "$work/trained.onnx" | sed 's/^/   /'

echo
echo "   per-step log: $work/log.json; trained model: $work/trained.onnx"
echo "   (a uniform guess over 256 bytes would score ln 256 = 5.55)"
