"""quantized-check.py QUANTIZED.json FULL.json REPORT.json [LOSS_TOLERANCE]: a run
with ZeRO++'s quantized collectives against the same run in full precision (their
--log-json files) and the quantized plan's `zero-opt --report=json`:

- the last step's loss within LOSS_TOLERANCE (default 0.02), relative;
- every step logged what quantization lost, each value within the bound
  (worst_block_error <= 1/254 of its block's largest value, up to f32 rounding);
- the bytes the rank sent quantized against full precision: the report's factor,
  within 1%.
Prints one line per check; exits non-zero on the first that fails."""
import json
import sys

quantized, full = ([json.loads(line) for line in open(f)] for f in sys.argv[1:3])
report = json.load(open(sys.argv[3]))["quantized_collectives"]
tolerance = float(sys.argv[4]) if len(sys.argv) > 4 else 0.02
last_q, last_f = quantized[-1]["loss"], full[-1]["loss"]
difference = abs(last_q - last_f) / abs(last_f)
print(f"step {len(quantized)}: loss {last_q:.6f} quantized, {last_f:.6f} in full precision "
      f"({100 * difference:.3f}% apart)")
assert len(quantized) == len(full) and difference <= tolerance, "losses too far apart"
print(f"the last losses are within {100 * tolerance:g}%")
steps = [s["quantized"] for s in quantized]
worst = max(s["worst_block_error"] for s in steps)
relative = max(s["relative_error"] for s in steps)
# (f32 arithmetic: the scale and the error are rounded, a few parts in 1e6)
assert worst <= (1 / 254) * (1 + 1e-4), f"a value beyond the bound: {worst}"
assert 0 < relative < 0.05, relative
print(f"every step quantized within the bound (worst block {100 * worst:.3f}% of its "
      f"largest value, relative error at most {100 * relative:.3f}%)")
sent = sum(s["wire_bytes"] for s in steps) / sum(s["full_bytes"] for s in steps)
assert abs(sent / report["factor"] - 1) <= 0.01, (sent, report["factor"])
print(f"sent x {sent:.4f} of full precision's bytes; the report states x "
      f"{report['factor']:.4f}")
