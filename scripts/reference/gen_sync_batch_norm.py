"""NumPy references for SyncBatchNorm's arithmetic
(tests/autograd/test_sync_bn_math.c, autograd/ops/sync_batch_norm_math.c).

The C code computes the statistics shard by shard and combines them with
Chan's formula; the references here are the whole batch's, computed in
one piece, so the two arrangements check each other. Every sum is
math.fsum (correctly rounded, independent of order and of any BLAS); the
M2 of the tiny-variance case is exact (fractions) and rounded once.

Per channel c (dim 1) over its n values, eps = 1e-5:
  mean = sum(x_c) / n,  M2 = sum((x_c - mean)^2),  invstd = 1/sqrt(M2/n + eps)
  y    = (x - mean) * invstd * w + b
  sums = [sum(dy), sum(dy * (x - mean))]
  dx   = w * invstd * (dy - mean(dy) - xhat * mean(dy * xhat))
(dx written with means, llm.c's arrangement; the C code uses the sums
and the count).

Names written (float64):
  sync_bn_x (11, 3, 2), sync_bn_dy (11, 3, 2), sync_bn_w (3,), sync_bn_b (3,)
  sync_bn_mean (3,), sync_bn_m2 (3,), sync_bn_y (11, 3, 2),
  sync_bn_sums (2, 3), sync_bn_dx (11, 3, 2)
  sync_bn_tiny_x (9, 2): |mean| ~ 1e4, std ~ 1e-4, so var ~ 1e-8 << eps
  sync_bn_tiny_mean (2,), sync_bn_tiny_m2 (2,), sync_bn_tiny_y (9, 2)
"""
import math
from fractions import Fraction

import numpy as np

EPS = 1e-5


def channel_values(x, c):
    """The values of channel c in C order, as Python floats."""
    return [float(v) for v in np.moveaxis(x, 1, 0)[c].ravel()]


def stats(x):
    C = x.shape[1]
    mean = np.empty(C)
    m2 = np.empty(C)
    for c in range(C):
        v = channel_values(x, c)
        mean[c] = math.fsum(v) / len(v)
        m2[c] = math.fsum((a - mean[c]) ** 2 for a in v)
    return mean, m2


def bshape(v, x):
    """v (C,) shaped to broadcast against x (N, C, ...)."""
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


def exact_m2(x, c):
    v = [Fraction(a) for a in channel_values(x, c)]
    mean = sum(v) / len(v)
    return float(sum((a - mean) ** 2 for a in v))


def generate(save):
    rng = np.random.default_rng(20261126)
    x = rng.standard_normal((11, 3, 2)) * np.array([1.0, 2.0, 0.5]).reshape(1, 3, 1)
    x += np.array([0.0, 5.0, -3.0]).reshape(1, 3, 1)
    dy = rng.standard_normal((11, 3, 2))
    w = rng.uniform(0.5, 1.5, 3)
    b = rng.uniform(-0.5, 0.5, 3)
    mean, m2 = stats(x)
    n = x.size // x.shape[1]
    invstd = 1.0 / np.sqrt(m2 / n + EPS)
    xhat = (x - bshape(mean, x)) * bshape(invstd, x)
    y = xhat * bshape(w, x) + bshape(b, x)
    sums = np.empty((2, 3))
    mdy = np.empty(3)
    mdyx = np.empty(3)
    for c in range(3):
        g = channel_values(dy, c)
        xv = channel_values(x, c)
        sums[0, c] = math.fsum(g)
        sums[1, c] = math.fsum(gi * (xi - mean[c]) for gi, xi in zip(g, xv))
        mdy[c] = sums[0, c] / n
        mdyx[c] = math.fsum(gi * (xi - mean[c]) * invstd[c]
                            for gi, xi in zip(g, xv)) / n
    dx = bshape(w * invstd, x) * (dy - bshape(mdy, x) - xhat * bshape(mdyx, x))
    for name, a in [("x", x), ("dy", dy), ("w", w), ("b", b), ("mean", mean),
                    ("m2", m2), ("y", y), ("sums", sums), ("dx", dx)]:
        save(f"sync_bn_{name}", a)

    tiny = 1e4 * np.array([1.0, -1.0]) + 1e-4 * rng.standard_normal((9, 2))
    tmean, _ = stats(tiny)
    tm2 = np.array([exact_m2(tiny, c) for c in range(2)])
    ty = (tiny - tmean) / np.sqrt(tm2 / 9 + EPS)
    save("sync_bn_tiny_x", tiny)
    save("sync_bn_tiny_mean", tmean)
    save("sync_bn_tiny_m2", tm2)
    save("sync_bn_tiny_y", ty)
