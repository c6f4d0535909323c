"""Checks zero-opt's note of the DeepSpeed defaults it took against DeepSpeed's own
config class (deepspeed.runtime.zero.config.DeepSpeedZeroConfig) at the same stage.

    deepspeed-defaults-agree.py STAGE < zero-opt's stderr

Prints "agree" or each key that differs (and exits 1)."""
import os
import re
import sys

os.environ.setdefault("DS_ACCELERATOR", "cpu")
from deepspeed.runtime.zero.config import DeepSpeedZeroConfig  # noqa: E402

stage = int(sys.argv[1])
note = [l for l in sys.stdin if "keys it leaves out take DeepSpeed's defaults:" in l]
if len(note) != 1:
    sys.exit("no single defaults note in zero-opt's output")
taken = dict(re.findall(r"zero_optimization\.(\w+) (\w+)", note[0]))
z = DeepSpeedZeroConfig(stage=stage)
theirs = {"reduce_bucket_size": z.reduce_bucket_size,
          "stage3_max_live_parameters": z.max_live_parameters,
          "stage3_prefetch_bucket_size": z.prefetch_bucket_size,
          "stage3_param_persistence_threshold": z.param_persistence_threshold,
          "overlap_comm": z.overlap_comm}
bad = []
for key, value in theirs.items():
    mine = taken.get(key)
    want = str(value).lower() if isinstance(value, bool) else str(int(value))
    if mine != want:
        bad.append("%s: zero-opt took %s, DeepSpeed's default is %s" % (key, mine, want))
print("\n".join(bad) if bad else "agree")
sys.exit(1 if bad else 0)
