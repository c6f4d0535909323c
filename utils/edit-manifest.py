#!/usr/bin/env python3
"""Edits a checkpoint's manifest.json as a careless or hostile user would, for tests.

    utils/edit-manifest.py MANIFEST KEY=VALUE ... [--keep-checksum]

KEY is a dotted path into the manifest's JSON (list items by index:
buffers.0.offset, loss_scaler.scale, files.1.name); VALUE is JSON (4, "-5", "NaN",
true). A key that does not exist is added. The manifest's checksum is then
computed again the way zero-run computes it (FNV-1a 64 of the file with the
checksum's digits written as '0's), so that what zero-run meets is an edit that
its checksum does not catch; --keep-checksum leaves the old checksum, as a plain
edit would.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zero_testing import fnv1a64  # noqa: E402

CHECKSUM = re.compile(r'"manifest_checksum": "([0-9a-f]{16})"')


def stamp(text):
    """The text with its checksum computed again (unchanged if it has none)."""
    m = CHECKSUM.search(text)
    if not m:
        return text
    zeroed = text[:m.start(1)] + "0" * 16 + text[m.end(1):]
    return text[:m.start(1)] + "%016x" % fnv1a64(zeroed.encode()) + text[m.end(1):]


def set_path(obj, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        obj = obj[int(k)] if isinstance(obj, list) else obj.setdefault(k, {})
    last = keys[-1]
    if isinstance(obj, list):
        obj[int(last)] = value
    else:
        obj[last] = value


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("manifest")
    p.add_argument("edits", nargs="*", metavar="KEY=VALUE")
    p.add_argument("--keep-checksum", action="store_true")
    a = p.parse_args()
    with open(a.manifest) as f:
        m = json.load(f)
    for edit in a.edits:
        key, value = edit.split("=", 1)
        set_path(m, key, json.loads(value))
    # The layout zero-run writes: one space of indent per level.
    text = json.dumps(m, indent=1)
    if not a.keep_checksum:
        text = stamp(text)
    with open(a.manifest, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
