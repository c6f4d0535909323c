#!/usr/bin/env python3
# The plan dialect's enums and the plan file's are one list spelled twice: every
# case of BufferRole and KernelKind (as mlir-tblgen generates them from PlanOps.td)
# is the schema's Role / Kernel.Kind case of the same name in uppercase, with the
# same number, and the schema has no case the dialect lacks (but its 0, "unset").
#
#   check-plan-enums.py --tblgen mlir-tblgen -I INCLUDE... --td PlanOps.td --pb2 DIR
#
# DIR holds zplan_pb2.py (protoc --python_out from include/zplan/zplan.proto).
# Prints one line per mismatch and exits 1 on any.
import argparse
import re
import subprocess
import sys


def dialect_enums(tblgen, includes, td):
    """{enum name: {case: number}} from the generated C++ declarations."""
    cmd = [tblgen, "-gen-enum-decls", td] + ["-I" + i for i in includes]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    enums = {}
    for name, body in re.findall(r"enum class (\w+) : \w+ \{(.*?)\};", text, re.S):
        enums[name] = {c: int(v) for c, v in re.findall(r"(\w+) = (\d+)", body)}
    return enums


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tblgen", required=True)
    p.add_argument("-I", dest="includes", action="append", default=[])
    p.add_argument("--td", required=True)
    p.add_argument("--pb2", required=True)
    args = p.parse_args()
    sys.path.insert(0, args.pb2)
    import zplan_pb2  # noqa: E402

    ours = dialect_enums(args.tblgen, args.includes, args.td)
    pairs = {"BufferRole": zplan_pb2.Role, "KernelKind": zplan_pb2.Kernel.Kind}
    problems = []
    for dialect_name, schema in pairs.items():
        before = len(problems)
        cases = ours.get(dialect_name)
        if cases is None:
            problems.append("%s: not generated from %s" % (dialect_name, args.td))
            continue
        theirs = {n: v for n, v in schema.items() if v != 0}
        for case, number in cases.items():
            if theirs.get(case.upper()) != number:
                problems.append("%s::%s = %d: the schema has %s" % (
                    dialect_name, case, number,
                    "%s = %d" % (case.upper(), theirs[case.upper()])
                    if case.upper() in theirs else "no " + case.upper()))
        for name, number in theirs.items():
            if name.lower() not in cases:
                problems.append("%s: the schema's %s = %d has no dialect case" % (
                    dialect_name, name, number))
        if len(problems) == before:
            print("%s: %d cases agree" % (dialect_name, len(cases)))
    for line in problems:
        print("MISMATCH " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
