#!/usr/bin/env python3
"""Checks the CUDA backend's build against the project's GPU rules.

    check-cuda-build.py BUILD_DIR
    check-cuda-build.py BUILD_DIR --ptxas-reports
    check-cuda-build.py BUILD_DIR --kernel-resources [FILE.cu ...]

One contraction rule: nvcc contracts a*b+c into a fused multiply-add unless told
-fmad=false, NVRTC likewise (--fmad), and the host builds of the same kernels (the
CPU backend, the emulator) never contract. Every nvcc command in the build's
compile_commands.json must say -fmad=false; exits 1 naming the files that do not.

--ptxas-reports reads what ptxas said when the build compiled the attention
kernels (sm_90, -Xptxas=-v; kept beside each object as OBJECT.ptxas.txt by
utils/keep-ptxas-report.sh), lists every kernel's registers, stack frame and
spills, and exits 1 when an attention kernel for heads up to 128 in f32, bf16 or
f16 uses local memory (f64 and head 256 may): an array indexed by a loop the
compiler did not unroll, or more live values than registers. No compile: the
ctest attention-kernel-resources.

--kernel-resources compiles the attention kernels' files (or those named) again
with `ptxas -v` (the build's own command) and checks them the same way: for a
build made without the launcher. About 1.5 minutes a file.
"""
import json
import os
import subprocess
import sys


def demangled(name):
    try:
        return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
    except OSError:
        return name


def compiles_of(commands, files):
    """(entry, its command's arguments) for each compile of one of `files`."""
    import shlex
    for c in commands:
        if any(c["file"].endswith(f) for f in files):
            yield c, shlex.split(c["command"])


def kernel_resources(commands, files):
    """ptxas's report for each kernel of `files`: (kernel, registers, stack, spills)."""
    import tempfile
    rows = []
    for c, args in compiles_of(commands, files):
        out = args.index("-o")
        with tempfile.TemporaryDirectory() as tmp:
            args[out + 1] = os.path.join(tmp, "k.o")
            args = [a.replace("code=[compute_90,sm_90]", "code=[sm_90]") for a in args]
            p = subprocess.run(args + ["-Xptxas", "-v"], cwd=c["directory"],
                               capture_output=True, text=True)
        if p.returncode:
            sys.exit("check-cuda-build: compiling %s failed:\n%s" % (c["file"], p.stderr))
        rows += parse_ptxas(p.stderr)
    return rows


def kept_reports(commands, files):
    """The reports the build kept for `files` (exits naming one that is missing)."""
    rows = []
    for c, args in compiles_of(commands, files):
        report = os.path.join(c["directory"], args[args.index("-o") + 1] + ".ptxas.txt")
        try:
            text = open(report).read()
        except OSError:
            sys.exit("check-cuda-build: no ptxas report %s for %s (a build without "
                     "utils/keep-ptxas-report.sh as the CUDA compiler launcher? "
                     "--kernel-resources compiles it again)" % (report, c["file"]))
        found = parse_ptxas(text)
        if not found:
            sys.exit("check-cuda-build: %s names no kernel (compiled without -Xptxas=-v?)"
                     % report)
        rows += found
    if not rows:
        sys.exit("check-cuda-build: the build compiles none of %s" % ", ".join(files))
    return rows


def parse_ptxas(text):
    """(kernel, registers, stack, spills) for each entry function of ptxas -v's text."""
    import re
    rows = []
    kernel = None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            kernel = demangled(m.group(1))
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)
        if m and kernel:
            rows.append([kernel, 0, int(m.group(1)), int(m.group(2))])
        m = re.search(r"Used (\d+) registers", line)
        if m and rows and rows[-1][0] == kernel:
            rows[-1][1] = int(m.group(1))
    return rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    path = os.path.join(sys.argv[1], "compile_commands.json")
    if len(sys.argv) > 2 and sys.argv[2] in ("--kernel-resources", "--ptxas-reports"):
        import re
        commands = json.load(open(path))
        files = sys.argv[3:] or ["AttentionKernels.cu", "TensorCoreAttention.cu"]
        bad = held_count = 0
        listing = kernel_resources if sys.argv[2] == "--kernel-resources" else kept_reports
        for kernel, regs, stack, spills in listing(commands, files):
            head = re.search(r", (\d+)>", kernel)
            held = (head and int(head.group(1)) <= 128 and "double" not in kernel and
                    "attention" in kernel.lower())
            flag = " <- local memory" if held and (stack or spills) else ""
            bad += bool(flag)
            held_count += bool(held)
            print("%4d registers %6d bytes stack %6d bytes spilled  %s%s" % (
                regs, stack, spills, kernel[:150], flag))
        print("%d of %d attention kernels for heads up to 128 (f32, bf16, f16) use local "
              "memory" % (bad, held_count))
        if not held_count:
            sys.exit("check-cuda-build: no attention kernel for heads up to 128 found")
        sys.exit(1 if bad else 0)
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
