#!/usr/bin/env python3
"""The compiler's contracts, checked over the sources (no build needed).

  check-contract.py SRC_ROOT

Every discardable attribute that passes hand each other is declared once, by the
dialect that owns it: compute.* in include/zero/Dialect/Compute/IR/
ComputeAttributes.def, zero.* in include/zero/Dialect/Zero/IR/ZeroAttributes.def.
Code names them through the constants those records make (`compute::attr::kParam`,
`zops::attr::kPhase`). A quoted "compute.x", "zero.x" or "plan.x" anywhere else in
lib/, include/, tools/ or runtime/ is either a declared name written out again (a
second place to misspell it) or an attribute nobody declared (the verifier would
refuse it at run time, not at build time): both are reported.

The ONNX metadata keys the project's exporters write are not pass attributes; each
is allowed in the one file that defines its constant (FORMAT_KEYS).

Flags are read only by the tools: no LLVM command-line option is defined or read
(cl::opt, cl::list, cl::bits, getNumOccurrences, getRegisteredOptions) in lib/,
include/ or runtime/; a library takes its settings as values (CompileOptions).

Prints every violation and exits 1 when there is one; prints what it checked
otherwise.
"""
import os
import re
import sys

RECORDS = {
    "include/zero/Dialect/Compute/IR/ComputeAttributes.def": "COMPUTE_ATTR",
    "include/zero/Dialect/Zero/IR/ZeroAttributes.def": "ZERO_ATTR",
}
# ONNX metadata_props keys (not IR attributes), each defined in one file.
FORMAT_KEYS = {
    "zero.trainable": "lib/Import/ONNX/TrainableSet.cpp",
    "zero.no_values": "runtime/include/zrt/ParameterInputs.h",
}
TOPS = ("lib", "include", "tools", "runtime")
SOURCE = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc", ".def")
QUOTED = re.compile(r'"((?:compute|zero|plan)\.[a-z_][a-z0-9_]*)"')
FLAG_TOPS = ("lib", "include", "runtime")
FLAG_USE = re.compile(r"\bcl::(opt|list|bits)\b|\bgetNumOccurrences\b|\bgetRegisteredOptions\b")


def records(root):
    names = {}
    for path, macro in RECORDS.items():
        with open(os.path.join(root, path)) as f:
            text = f.read()
        for m in re.finditer(r"^%s\((\w+),\s*\"([^\"]+)\"" % macro, text, re.M):
            names[m.group(2)] = (path, m.group(1))
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check-contract.py SRC_ROOT")
    root = sys.argv[1]
    declared = records(root)
    problems, scanned, uses, flag_reads = [], 0, 0, 0
    for top in TOPS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                scanned += 1
                with open(path, errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        if top in FLAG_TOPS and FLAG_USE.search(line):
                            flag_reads += 1
                            problems.append(
                                "%s:%d: a command-line flag below tools/ (%s): take the "
                                "value from the session's options instead"
                                % (rel, lineno, FLAG_USE.search(line).group(0)))
                        for m in QUOTED.finditer(line):
                            attr = m.group(1)
                            if rel in RECORDS:
                                continue
                            if FORMAT_KEYS.get(attr) == rel:
                                continue
                            uses += 1
                            if attr in declared:
                                path_, ident = declared[attr]
                                ns = "compute" if attr.startswith("compute.") else "zops"
                                problems.append(
                                    '%s:%d: "%s" written out: use %s::attr::%s (%s)'
                                    % (rel, lineno, attr, ns, ident, path_))
                            else:
                                problems.append(
                                    '%s:%d: "%s" is no declared attribute: add its record '
                                    "to the owning dialect's Attributes.def (an op's name: "
                                    "use its op class)" % (rel, lineno, attr))
    for p in problems:
        print(p)
    if problems:
        return 1
    print("contract: %d attributes declared in %d records files; %d files in %s name "
          "none of them in quotes; none in %s reads a command-line flag"
          % (len(declared), len(RECORDS), scanned, ", ".join(TOPS), ", ".join(FLAG_TOPS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
