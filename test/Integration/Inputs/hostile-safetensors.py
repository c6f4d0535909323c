"""hostile-safetensors.py DIR: writes safetensors files that break the format's rules
(DIR/overlap.safetensors, hole, trailing, float-offset, float-dim, metadata-number,
metadata-string, duplicate), checks that the reference reader (safetensors.numpy)
refuses each, and prints one line per file: NAME refused-by-reference."""
import json
import os
import struct
import sys

import numpy as np
import safetensors.numpy

F = '{"dtype": "F32", "shape": [%s], "data_offsets": [%s, %s]}'
DATA = np.arange(4, dtype=np.float32).tobytes()
CASES = {
    # Two tensors on the same bytes: one silently read the other's.
    "overlap": ('{"a": %s, "b": %s}' % (F % (2, 0, 8), F % (2, 0, 8)), DATA),
    "hole": ('{"a": %s, "b": %s}' % (F % (1, 0, 4), F % (2, 8, 16)), DATA),
    "trailing": ('{"a": %s}' % (F % (2, 0, 8)), DATA),
    "float-offset": ('{"a": %s}' % (F % (4, 0, "16.0")), DATA),
    "float-dim": ('{"a": %s}' % (F % ("4.0", 0, 16)), DATA),
    "metadata-number": ('{"__metadata__": {"format": 1}, "a": %s}' % (F % (4, 0, 16)), DATA),
    "metadata-string": ('{"__metadata__": "pt", "a": %s}' % (F % (4, 0, 16)), DATA),
    "duplicate": ('{"a": %s, "a": %s}' % (F % (2, 0, 8), F % (2, 8, 16)), DATA),
}

out = sys.argv[1]
for name, (header, data) in CASES.items():
    h = header.encode()
    path = os.path.join(out, name + ".safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    try:
        safetensors.numpy.load_file(path)
        verdict = "ACCEPTED-by-reference"
    except Exception:
        verdict = "refused-by-reference"
    print(name, verdict)
