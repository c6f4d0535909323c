"""same-losses.py A.json B.json [TOLERANCE]: the two runs' --log-json losses are
the same, step for step (exactly as logged, 9 digits, without a tolerance; else
within it, relative); prints how many steps agree."""
import json
import sys

a, b = ([json.loads(line)["loss"] for line in open(f)] for f in sys.argv[1:3])
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
assert len(a) == len(b) and a, (a, b)
for step, (x, y) in enumerate(zip(a, b), 1):
    assert abs(x - y) <= tolerance * abs(y), f"step {step}: {x} vs {y}"
print(f"{len(a)} steps agree" + (" exactly" if tolerance == 0 else f" within {tolerance:g}"))
