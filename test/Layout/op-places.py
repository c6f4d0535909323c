#!/usr/bin/env python3
"""The product files that name an op, to show what adding one costs.

  op-places.py SRC_ROOT [--at-most N] OP...

For each OP (its record's ID in include/zplan/UnaryOps.def, e.g. Softplus), lists
the files under lib/, include/, tools/ and runtime/ (its tests and the CUDA
emulator aside) whose text names it in any case and spelling the project uses
(SoftplusOp, Compute_SoftplusOp, SOFTPLUS, "softplus": the name without case and
underscores). With --at-most N, exits 1 when an OP is named in more files.
"""
import os
import re
import sys

TOPS = ("lib", "include", "tools", "runtime")
SKIP = (os.path.join("runtime", "test"), os.path.join("runtime", "cuda-emulator"))
SOURCE = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc", ".def", ".td", ".proto",
          ".txt", ".py", ".cmake")


def main():
    args = sys.argv[1:]
    limit = None
    if "--at-most" in args:
        i = args.index("--at-most")
        limit = int(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit("usage: op-places.py SRC_ROOT [--at-most N] OP...")
    root, ops = args[0], args[1:]
    texts = {}
    for top in TOPS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            rel_folder = os.path.relpath(folder, root)
            if rel_folder.startswith(SKIP):
                continue
            for name in names:
                if name.endswith(SOURCE) or name == "CMakeLists.txt":
                    path = os.path.join(folder, name)
                    with open(path, errors="replace") as f:
                        # Without case and underscores: GELU_TANH, gelu_tanh and
                        # GeluTanh read alike.
                        texts[os.path.relpath(path, root)] = f.read().lower().replace("_", "")
    status = 0
    for op in ops:
        key = op.lower().replace("_", "")
        files = sorted(p for p, t in texts.items() if key in t)
        print("%s: %d product files: %s" % (op, len(files), " ".join(files)))
        if limit is not None and len(files) > limit:
            print("%s: named in %d product files (at most %d)" % (op, len(files), limit))
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
