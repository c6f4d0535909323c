#!/usr/bin/python3
# Rewrites buffer 1's offset to 4096 in a .zplan and fixes the header's length and
# checksum, so that only the loader's range check can catch it.
#   patch-plan.py IN.zplan OUT.zplan
# The protobuf is edited by hand (no zplan_pb2 module exists for Python): Plan field
# 4 is `buffers`, Buffer field 1 is `offset`.
import struct
import sys


def varint(b, i):
    shift = value = 0
    while True:
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return value, i


def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fields(b):
    i = 0
    while i < len(b):
        key, j = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, k = varint(b, j)
        elif wt == 2:
            n, j2 = varint(b, j)
            k = j2 + n
        elif wt == 1:
            k = j + 8
        elif wt == 5:
            k = j + 4
        else:
            raise SystemExit("unexpected wire type %d" % wt)
        yield num, wt, b[i:j], b[j:k]
        i = k


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for c in data:
        h ^= c
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


data = open(sys.argv[1], "rb").read()
payload = data[32:]
out = bytearray()
buffer_index = 0
for num, wt, key, body in fields(payload):
    if num == 4:
        if buffer_index == 1:
            n, j = varint(body, 0)
            inner = bytearray()
            for fnum, fwt, fkey, fbody in fields(body[j:]):
                inner += fkey + (enc_varint(4096) if fnum == 1 else fbody)
            body = enc_varint(len(inner)) + bytes(inner)
        buffer_index += 1
    out += key + body
header = data[:16] + struct.pack("<QQ", len(out), fnv1a64(out))
open(sys.argv[2], "wb").write(header + bytes(out))
