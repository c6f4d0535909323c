#!/usr/bin/env python3
# Derives the coefficients of erfF32 (runtime/lib/kernels/ElementwiseMath.h), one
# rational function over the whole range:
#   0 <= |x| < HI:  erf(x) = x P(x^2) / Q(x^2),  P of degree 6, Q of degree 4, Q(0) = 1
#   |x| >= HI:      1 (erf(HI) rounds to 1 in f32)
# fitted in relative error, in double: linearized least squares (P - g Q = 0 with
# g = erf(x)/x, weighted by the previous Q: Sanathanan-Koerner), then Lawson's
# reweighting towards the minimax fit. Prints them with the worst relative error of
# the f32 evaluation (as the header does it, no fused multiply-adds) against
# math.erf. One branch-free formula because a SIMD loop computes every branch of a
# piecewise one for every element. Run with build/python-env/bin/python (the tests' environment).
import math

import numpy as np

HI = 3.9375


def nodes(lo, hi, n=6000):
    return (np.cos(np.linspace(0, np.pi, n)) * 0.5 + 0.5) * (hi - lo) + lo


def fit(m, n, iterations=60):
    x = nodes(1e-6, HI)
    u = x * x
    g = np.array([math.erf(v) / v for v in x])
    weight, previous_q, best = np.ones_like(x), np.ones_like(x), None
    for it in range(iterations):
        a = np.hstack([np.vander(u, m + 1, increasing=True),
                       -g[:, None] * np.vander(u, n + 1, increasing=True)[:, 1:]])
        s = weight / (g * previous_q)
        c = np.linalg.lstsq(a * s[:, None], g * s, rcond=None)[0]
        p, q = c[:m + 1], np.concatenate([[1.0], c[m + 1:]])
        qu = np.polyval(q[::-1], u)
        err = (np.polyval(p[::-1], u) / qu - g) / g
        if it < 10:
            previous_q = qu
        else:
            weight = weight * np.sqrt(np.abs(err))
            weight /= weight.max()
        if best is None or np.abs(err).max() < best[0]:
            best = (np.abs(err).max(), p, q)
    return best[1], best[2]


def horner32(coefficients, t):
    """Lowest degree first, evaluated from the highest, rounding each step to f32."""
    r = np.full_like(t, np.float32(coefficients[-1]))
    for c in coefficients[-2::-1]:
        r = (r * t + np.float32(c)).astype(np.float32)
    return r


def erf32(p, q, x):
    a = np.abs(x).astype(np.float32)
    c = np.minimum(a, np.float32(HI))
    u = (c * c).astype(np.float32)
    r = ((c * horner32(p, u)).astype(np.float32) / horner32(q, u)).astype(np.float32)
    r = np.where(a < np.float32(HI), r, np.float32(1))
    return np.where(x < 0, -r, r)


def main():
    p, q = fit(6, 4)
    x = np.concatenate([np.linspace(-6, 6, 600001), np.logspace(-30, 0.7, 5000)])
    a = x.astype(np.float32)
    ref = np.array([math.erf(float(v)) for v in a])
    err = np.abs(erf32(p, q, a) - ref) / np.maximum(np.abs(ref), 1e-38)
    print("P (from x^0):", ", ".join("%.17g" % c for c in p))
    print("Q (from x^0):", ", ".join("%.17g" % c for c in q))
    print("worst relative error in f32: %.3g at x = %g" % (err.max(), a[err.argmax()]))


if __name__ == "__main__":
    main()
