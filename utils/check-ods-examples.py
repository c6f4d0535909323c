#!/usr/bin/env python3
# The ```mlir examples in the dialects' ODS descriptions are real IR: each one
# parses, verifies and prints back to what it parses from (custom and generic form).
#
#   check-ods-examples.py --zero-opt BIN --tblgen MLIR_TBLGEN -I DIR ... \
#       DIALECT=FILE.td ...
#
# mlir-tblgen -gen-op-doc renders each dialect's ops (it fills in the mnemonics of
# ops defined through a class). An example is a fragment: its operands are often not
# defined in it. They are defined after it at the module's top level (a graph region,
# where a use may come before its definition), each as an unregistered op whose type
# the parser reports from the uses. An op that must sit inside a parent (a yield, a
# plan buffer) shows its parent in its example. Exit 1 when an example fails (or a
# dialect has none), naming the op and the error.
import argparse
import re
import subprocess
import sys

VALUE = r"%[A-Za-z_0-9][\w$.-]*"
MAX_TRIES = 16


def examples_by_op(markdown):
    """(op name, example text) for every ```mlir block under an op's heading."""
    op, found, block = None, [], None
    for line in markdown.splitlines():
        heading = re.match(r"^### `([\w.]+)`", line)
        if heading:
            op = heading.group(1)
        elif line.strip() == "```mlir":
            block = []
        elif line.strip() == "```" and block is not None:
            found.append((op, "\n".join(block)))
            block = None
        elif block is not None:
            block.append(line)
    return found


def undefined_values(text):
    """Values the example uses without defining them, in order of first use."""
    defined = set()
    for lhs in re.findall(r"^\s*(" + VALUE + r"(?:\s*,\s*" + VALUE + r")*)\s*=",
                          text, re.M):
        defined.update(re.findall(VALUE, lhs))
    for args in re.findall(r"\^\w+\(([^)]*)\)", text):
        defined.update(re.findall(VALUE, args))
    used = []
    for v in re.findall(VALUE, text):
        if v not in defined and v not in used:
            used.append(v)
    return used


def run(zero_opt, text, *flags):
    p = subprocess.run([zero_opt, "--allow-unregistered-dialect", *flags, "-"],
                       input=text, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(zero_opt, op, example):
    """'' when the example parses, verifies and round-trips, else why not."""
    types = {v: "none" for v in undefined_values(example)}
    for _ in range(MAX_TRIES):
        text = example + "\n" + "".join(
            f'{v} = "ods_example.value"() : () -> {t}\n' for v, t in types.items())
        rc, printed, err = run(zero_opt, text)
        if rc == 0:
            break
        # The parser names one mistyped operand per run: define it with its type.
        m = re.search(r"definition of SSA value '(" + VALUE + r")#0' has type '[^']*'"
                      r"[\s\S]*?previously used here with type '([^']*)'", err)
        if not m or m.group(1) not in types:
            return err.strip()
        types[m.group(1)] = m.group(2)
    else:
        return f"operand types not settled after {MAX_TRIES} tries"
    rc, again, err = run(zero_opt, printed)
    if rc != 0 or again != printed:
        return "the printed form does not parse back to itself:\n" + (err or again)
    rc, generic, err = run(zero_opt, printed, "--mlir-print-op-generic")
    if rc != 0:
        return err.strip()
    rc, back, err = run(zero_opt, generic)
    if rc != 0 or back != printed:
        return "the generic form does not parse back to the same IR:\n" + (err or back)
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zero-opt", required=True)
    ap.add_argument("--tblgen", required=True)
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("dialects", nargs="+", help="DIALECT=FILE.td")
    args = ap.parse_args()
    failures, checked, ops = 0, 0, set()
    for spec in args.dialects:
        dialect, td = spec.split("=", 1)
        doc = subprocess.run([args.tblgen, "-gen-op-doc", f"-dialect={dialect}", td,
                              *[f"-I{d}" for d in args.includes]],
                             capture_output=True, text=True, check=True).stdout
        found = examples_by_op(doc)
        if not found:
            print(f"{td}: no ```mlir example in the {dialect} ops' descriptions")
            failures += 1
        for op, example in found:
            why = check(args.zero_opt, op, example)
            if why:
                failures += 1
                print(f"FAIL {op}:\n{example}\n--\n{why}\n")
                continue
            checked += 1
            ops.add(op)
    print(f"{checked} examples of {len(ops)} ops parse, verify and round-trip; "
          f"{failures} fail")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
