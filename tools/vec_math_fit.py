#!/usr/bin/env python3
"""Fits the polynomials of ops/vec_math_kernels.h and prints them as C.

Not part of the build: run it by hand (python3 with numpy, Debian's
python3-numpy) to check or change the coefficients. Each fit is a weighted
minimax polynomial found by Lawson's algorithm (least squares reweighted by
the error until the error levels), on Chebyshev nodes, in double precision;
the C code rounds the coefficients to float.

  exp2   2^f on [-1/2, 1/2], relative error: degree 6 for vk_exp2, 5 for
         gelu's vk_exp2_quintic
  expm1  (e^r - 1 - r) / r^2 on [-ln2/2, ln2/2], weighted so the relative
         error of e^r - 1 = r + r^2 P(r) is minimal: degree 4 for
         vk_exp_parts, degree 5 for the exp op's vk_exp_any
  sin    (sin r - r) / r^3 as P(r^2) on r in [0, pi/2], weighted so the
         relative error of sin r = r + r^3 P(r^2) is minimal (vk_sin_small),
         and pi's three float parts for its reduction, from pi to 80 digits
  gelu   q(s) = -log2(e) g(x) / x with s = x^2 and g = log(Phi / (1 - Phi)),
         Phi's logit, on x in [0, 5.5]; the error is weighted by what it
         does to gelu(x) = x / (1 + 2^(x q)) against the bound the tests
         allow (4 ULP + 4e-7), at -x, where that bound is tightest (vk_gelu)
"""
import math

import numpy as np

LOG2E = 1 / math.log(2)


def lawson(f, w, a, b, degree, nodes=3000, rounds=500):
    """min over p of max over t of w(t) |p(t) - f(t)|: (error, coefficients)."""
    k = np.arange(nodes)
    t = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)[::-1]
    t = np.unique(np.concatenate([t, [a, b]]))
    scale = max(abs(a), abs(b))
    powers = np.stack([(t / scale) ** i for i in range(degree + 1)], 1)
    fv = np.array([f(v) for v in t])
    wv = np.array([w(v) for v in t])
    lw = np.full(len(t), 1.0 / len(t))
    best = None
    for _ in range(rounds):
        sw = np.sqrt(lw) * wv
        c = np.linalg.lstsq(powers * sw[:, None], fv * sw, rcond=None)[0]
        err = wv * (powers @ c - fv)
        e = np.max(np.abs(err))
        if best is None or e < best[0]:
            best = (e, c.copy())
        lw = lw * np.abs(err)
        lw /= lw.sum()
    e, c = best
    return e, [c[i] / scale**i for i in range(degree + 1)]


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def ulp_f32(v):
    f = np.float32(abs(v))
    return float(np.nextafter(f, np.float32(np.inf)) - f) if f > 1e-38 else 1.4e-45


def gelu_q(s):
    if s == 0:
        return -LOG2E * 4 / math.sqrt(2 * math.pi)
    x = math.sqrt(s)
    return -LOG2E * (math.log(phi(x)) - math.log(phi(-x))) / x


def gelu_weight(s):
    # gelu's error from an error d in q is about x^2 Phi (1 - Phi) d / log2(e).
    x = math.sqrt(s)
    p = phi(-x)
    return x * x * p * (1 - p) / LOG2E / (4e-7 + 4 * ulp_f32(x * p))


def expm1_part(r):
    return (math.expm1(r) - r) / (r * r) if abs(r) > 1e-4 else 0.5 + r / 6 + r * r / 24


def sin_part(s):
    if s == 0:
        return -1 / 6
    r = math.sqrt(s)
    return (math.sin(r) - r) / (r * r * r)


def pi_parts():
    """pi = hi + mid + lo, each a float, from pi to 80 digits (a double's pi
    is off by 1.2e-16, which would be most of lo)."""
    from fractions import Fraction
    pi = Fraction("3.1415926535897932384626433832795028841971693993751058209749445923078164062862")
    parts = []
    for _ in range(3):
        p = np.float32(float(pi))
        parts.append(p)
        pi -= Fraction(float(p))
    return parts


def show(name, fit):
    e, c = fit
    print("/* %s: weighted error %.3g */" % (name, e))
    print("    " + ", ".join("%.9e" % np.float32(v) for v in c))


if __name__ == "__main__":
    for degree in (6, 5):
        show("exp2, 2^f = sum c_i f^i, degree %d" % degree,
             lawson(lambda f: 2.0**f, lambda f: 2.0**-f, -0.5, 0.5, degree))
    half_ln2 = math.log(2) / 2
    for degree in (4, 5):
        show("expm1, e^r - 1 = r + r^2 sum c_i r^i, degree %d" % degree,
             lawson(expm1_part, lambda r: r * r / abs(math.expm1(r)) if r else 0.0,
                    -half_ln2, half_ln2, degree))
    show("sin, sin r = r + r^3 sum c_i s^i, s = r^2",
         lawson(sin_part, lambda s: s * math.sqrt(s) / math.sin(math.sqrt(s)) if s else 0.0,
                0, (math.pi / 2) ** 2, 3))
    print("/* pi = hi + mid + lo */\n    " + ", ".join("%.9e" % v for v in pi_parts()))
    show("gelu, q(s) = sum c_i s^i (weighted error: of gelu against its bound)",
         lawson(gelu_q, gelu_weight, 0, 5.5**2, 6))
