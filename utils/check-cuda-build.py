#!/usr/bin/env python3
"""Checks the CUDA backend's build against the project's GPU rules.

    check-cuda-build.py BUILD_DIR

One contraction rule: nvcc contracts a*b+c into a fused multiply-add unless told
-fmad=false, NVRTC likewise (--fmad), and the host builds of the same kernels (the
CPU backend, the emulator) never contract. Every nvcc command in the build's
compile_commands.json must say -fmad=false; exits 1 naming the files that do not.
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    path = os.path.join(sys.argv[1], "compile_commands.json")
    try:
        commands = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"check-cuda-build: cannot read {path}: {e}")
    cuda = [c for c in commands if c["file"].endswith(".cu")]
    if not cuda:
        sys.exit(f"check-cuda-build: {path} compiles no .cu file (a build without CUDA?)")
    contracting = [c["file"] for c in cuda
                   if "-fmad=false" not in c.get("command", " ".join(c.get("arguments", [])))]
    for f in contracting:
        print(f"check-cuda-build: {f} is compiled without -fmad=false (nvcc contracts a*b+c)")
    print(f"{len(cuda) - len(contracting)} of {len(cuda)} CUDA files compiled with -fmad=false")
    sys.exit(1 if contracting else 0)


if __name__ == "__main__":
    main()
