#!/usr/bin/env python3
# Derives the coefficients of expF32's polynomial (runtime/lib/kernels/
# ElementwiseMath.h): e^r on |r| <= ln2/2 by a polynomial of degree 6, fitted in
# relative error in double by least squares on Chebyshev nodes, then Lawson's
# reweighting towards the minimax fit. Prints them with the fit's worst relative
# error (before f32 rounding; the header's test, test KernelMath.ExpIsWithinTwoUlp,
# checks the f32 evaluation against libm). Run with build/python-env/bin/python (the tests' environment).
import math

import numpy as np

DEGREE = 6


def main():
    half = math.log(2) / 2
    n = 4000
    r = half * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    basis = np.vander(r, DEGREE + 1, increasing=True) / np.exp(r)[:, None]
    weight = np.ones(n)
    for _ in range(200):
        c = np.linalg.lstsq(basis * weight[:, None], weight, rcond=None)[0]
        err = np.abs(basis @ c - 1)
        weight *= 1 + err / err.max()
        weight /= weight.mean()
    for i, v in enumerate(c):
        print("c%d = %r" % (i, float(v)))
    print("worst relative error of the fit: %.3g" % float(np.abs(basis @ c - 1).max()))


if __name__ == "__main__":
    main()
