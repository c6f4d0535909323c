#!/usr/bin/python3
# Derives the polynomial coefficients of erfF32 (runtime/lib/kernels/ElementwiseMath.h):
# least-squares fits in relative error, in double, on Chebyshev nodes:
#   |x| < 1:      erf(x) = x P(x^2),                  P of degree 6
#   1 <= |x| < 4: erf(x) = 1 - e^(-x^2) Q(1/|x|),     Q of degree 9
# and prints them with the worst relative error of the f32 evaluation (as the
# header does it) against math.erf. Run with Debian's /usr/bin/python3 (numpy).
import math

import numpy as np


def nodes(lo, hi, n=4000):
    return (np.cos(np.linspace(0, np.pi, n)) * 0.5 + 0.5) * (hi - lo) + lo


def fit_small(degree):
    x = nodes(0.0, 1.0)
    y = np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi) for v in x])
    v = np.vander(x * x, degree + 1)
    return np.linalg.lstsq(v / y[:, None], np.ones_like(y), rcond=None)[0]


def fit_large(degree):
    x = nodes(1.0, 4.0)
    y = np.array([math.erfc(v) * math.exp(v * v) for v in x])
    v = np.vander(1 / x, degree + 1)
    return np.linalg.lstsq(v / y[:, None], np.ones_like(y), rcond=None)[0]


def horner32(coefficients, t):
    p = np.full_like(t, np.float32(coefficients[0]))
    for c in coefficients[1:]:
        p = (p * t + np.float32(c)).astype(np.float32)
    return p


def main():
    p, q = fit_small(6), fit_large(9)
    x = np.concatenate([np.linspace(0, 4.5, 300001), np.logspace(-30, 0.6, 5000)])
    a = x.astype(np.float32)
    a2 = (a * a).astype(np.float32)
    small = (horner32(p, a2) * a).astype(np.float32)
    t = (np.float32(1) / np.maximum(a, np.float32(1))).astype(np.float32)
    large = (np.float32(1) - np.exp(-a2).astype(np.float32) * horner32(q, t)).astype(np.float32)
    r = np.where(a < 1, small, np.where(a < 4, large, np.float32(1)))
    ref = np.array([math.erf(float(v)) for v in a])
    err = np.abs(r - ref) / np.maximum(np.abs(ref), 1e-38)
    print("P:", ", ".join("%.17g" % c for c in p))
    print("Q:", ", ".join("%.17g" % c for c in q))
    print("worst relative error in f32: %.3g at x = %g" % (err.max(), a[err.argmax()]))


if __name__ == "__main__":
    main()
