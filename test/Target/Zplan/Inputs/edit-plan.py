#!/usr/bin/env python3
# Edits a .zplan and rewrites its header (length and checksum), as a careless tool
# or a deliberate edit would: only the loader's own checks can then catch it.
#   edit-plan.py PB2_DIR IN.zplan OUT.zplan 'PYTHON'
# PYTHON runs with `plan` (the zplan_pb2.Plan) and helpers in scope:
#   name(k)             kernel k's kind as the plan dialect spells it ("matmul")
#   kernel(name, n=0)   the n-th kernel of that kind
#   buffer(i)           buffer i
# PB2_DIR holds zplan_pb2.py (protoc --python_out from include/zplan/zplan.proto).
# Runs in the tests' Python environment.
import struct
import sys

sys.path.insert(0, sys.argv[1])
import zplan_pb2  # noqa: E402


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for c in data:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


data = open(sys.argv[2], "rb").read()
plan = zplan_pb2.Plan()
plan.ParseFromString(data[32:])


def name(k):
    return zplan_pb2.Kernel.Kind.Name(k.kind).lower()


def kernel(kind, n=0):
    return [k for k in plan.kernels if name(k) == kind][n]


def buffer(i):
    return plan.buffers[i]


exec(sys.argv[4])
payload = plan.SerializeToString()
header = data[:16] + struct.pack("<QQ", len(payload), fnv1a64(payload))
open(sys.argv[3], "wb").write(header + payload)
