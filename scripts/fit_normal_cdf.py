#!/usr/bin/env python3
"""Fits the polynomials of the cpu backend's float normal CDF (backends/cpu/f32_math.h,
normal_cdf_f32) against mpmath at 40 digits, and prints their float coefficients, highest degree
first, as the header's Horner forms use them. Reproduces the header's constants.

Each piece is a weighted least-squares fit on 3,000 Chebyshev nodes (relative error as the
weight), with the coefficients rounded to float one at a time, lowest degree first, the higher
ones refitted after each rounding: rounding them all at once costs up to 7e-8 of relative error,
this way the fits stay within 5e-8.

usage: /usr/bin/python3 scripts/fit_normal_cdf.py      (Debian: python3-numpy python3-mpmath)
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
SQRT2 = mp.sqrt(2)


def fit(f, a, b, degree, nodes=3000):
    k = np.arange(nodes)
    xs = np.cos(np.pi * (k + 0.5) / nodes) * (b - a) / 2 + (a + b) / 2
    ys = np.array([float(f(mp.mpf(x))) for x in xs])
    w = 1 / np.abs(ys)
    V = np.vander(xs, degree + 1, increasing=True)
    coef = np.zeros(degree + 1)
    for j in range(degree + 1):
        resid = ys - V[:, :j] @ coef[:j]
        c, *_ = np.linalg.lstsq(V[:, j:] * w[:, None], resid * w, rcond=None)
        coef[j] = np.float32(c[0])
    xt = np.linspace(a, b, 4001)
    yt = np.array([float(f(mp.mpf(x))) for x in xt])
    err = np.max(np.abs(np.polyval(coef[::-1], xt) - yt) / np.abs(yt))
    return coef, err


def S(z):  # (Φ(x) − 1/2)/x as a function of z = x²
    if z == 0:
        return 1 / mp.sqrt(2 * mp.pi)
    s = mp.sqrt(z)
    return mp.erf(s / SQRT2) / (2 * s)


def erfcx(t):
    return mp.erfc(t) * mp.exp(t * t)


INNER, OUTER = 0.75, float(2.5 * SQRT2)  # the pieces' joins in |x|
MID = (INNER + OUTER) / 2
pieces = [
    ("S(x²), |x| < %g" % INNER, S, 0.0, INNER * INNER, 5),
    ("T(|x| − %.9g), %g ≤ |x| < %.9g" % (MID, INNER, OUTER),
     lambda u: erfcx((u + MID) / SQRT2) / 2, INNER - MID, OUTER - MID, 10),
    ("U(1/x²), |x| ≥ %.9g" % OUTER,
     lambda w: erfcx(1 / mp.sqrt(w) / SQRT2) / (2 * mp.sqrt(w)), 1 / 13.2**2, 1 / OUTER**2, 6),
]
for name, f, a, b, degree in pieces:
    coef, err = fit(f, a, b, degree)
    print("%s: degree %d, relative fit error %.2g" % (name, degree, err))
    print("  " + ", ".join("%.9ef" % c for c in coef[::-1]))
