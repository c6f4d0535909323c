#!/usr/bin/env bash
# Times the same training step on two zero-run binaries, alternating, to show that
# a refactoring of the runtime did not make it slower (compare-plans.py checks the
# compiler's side). A benchmark, not a test: this machine's speed drifts by several
# percent from minute to minute, so each binary runs ROUNDS times in turn, the
# first to run alternating.
#
#   compare-step-time.sh BEFORE_BIN AFTER_BIN [ROUNDS]
#
# BEFORE_BIN and AFTER_BIN are folders holding zero-run (AFTER_BIN also zero-opt,
# which compiles the one plan both run). The model: the project's GPT of 4 layers,
# hidden 256, 8 heads, byte vocabulary, sequence 128, micro-batch 8, exported by
# utils/make_gpt.py with the tests' Python environment; 30 AdamW steps on 2 threads.
# Prints each run's average ms/step and each binary's median.
set -euo pipefail
before=$1 after=$2 rounds=${3:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/build/python-env/bin/python" "$root/utils/make_gpt.py" "$work/gpt.onnx" --layers 4 \
  --hidden 256 --heads 8 --vocab 256 --seq 128 --batch 8 >/dev/null 2>&1
"$after/zero-opt" "$work/gpt.onnx" --optimizer=adamw --lr=1e-3 -o "$work/step.zplan"
declare -A times
for ((r = 1; r <= rounds; r++)); do
  # Each round swaps which runs first: on a machine that slows (or speeds up)
  # over the run, a fixed order would favour one binary.
  order="before after"
  ((r % 2 == 0)) && order="after before"
  for who in $order; do
    bin=$before
    [ "$who" = after ] && bin=$after
    ms=$("$bin/zero-run" "$work/step.zplan" --init "$work/gpt.onnx" \
           --data /usr/share/common-licenses/GPL-3 --data-format=u8 --steps 30 --seed 0 \
           --threads 2 2>&1 | sed -n 's/.*steps, \([0-9.]*\) ms\/step on average.*/\1/p')
    [ -n "$ms" ] || { echo "compare-step-time: $bin/zero-run gave no step time" >&2; exit 1; }
    echo "$who round $r: $ms ms/step"
    times[$who]+="$ms "
  done
done
for who in before after; do
  median=$(printf '%s\n' ${times[$who]} | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  echo "$who: median $median ms/step"
done
