#!/usr/bin/env python3
# Compares two ONNX TensorProto files (backend-test layout) elementwise.
#   compare-tensors.py GOT.pb WANT.pb [--rtol R] [--atol A]
# Prints the largest relative error; exits 1 when shapes, dtypes or values differ.
# Runs in the tests' Python environment (build/python-env/bin/python).
import argparse
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return nh.to_array(t)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("got")
    p.add_argument("want")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=0.0)
    a = p.parse_args()
    got, want = load(a.got), load(a.want)
    if got.shape != want.shape or got.dtype != want.dtype:
        print("mismatch: got %s %s, want %s %s" % (got.dtype, got.shape, want.dtype, want.shape))
        return 1
    g, w = got.astype(np.float64), want.astype(np.float64)
    rel = np.max(np.abs(g - w) / np.maximum(np.abs(w), 1e-30)) if w.size else 0.0
    ok = np.allclose(g, w, rtol=a.rtol, atol=a.atol)
    print("%s: max relative error %.3g (rtol %g)" % ("ok" if ok else "DIFFERENT", rel, a.rtol))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
