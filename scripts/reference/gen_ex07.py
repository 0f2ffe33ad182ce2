"""NumPy references for exercise 07, the BatchNorm backward
(tests/exercises/grade_ex07_batch_norm_backward.c).

BatchNorm1d in training on x (N, C), as PyTorch: per channel (column),
  mean = x.mean(0),  rstd = 1 / sqrt(x.var(0, ddof=0) + eps)   (biased)
  y = (x - mean) * rstd * w + b                                 eps 1e-5
and the gradients are those of L = sum(dy * y). They are NOT computed with
the closed form the student is asked to find: each one is a complex-step
derivative of L, dL/dv = Im(L(v + i h e_k)) / h with h = 1e-30, one
element at a time, exact to float64 precision for this analytic forward.

Names written (float64):
  ex07_x, ex07_w, ex07_b, ex07_dy   (6, 3), (3,), (3,), (6, 3)
  ex07_mean, ex07_rstd              (3,) each, the forward's statistics
  ex07_dx, ex07_dw, ex07_db         (6, 3), (3,), (3,)
  ex07_dx_lecture                   (6, 3) wrong on purpose: makemore part
                                    4's closed form, whose forward used the
                                    unbiased variance, applied to this one:
    w * rstd / n * (n dy - sum(dy) - n/(n-1) * xhat * sum(dy * xhat))
                                    (the mistake the grader names)
"""
import numpy as np

EPS = 1e-5
H = 1e-30


def batch_norm(x, w, b):
    mean = x.mean(axis=0, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=0, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def complex_step(loss, v):
    """dloss/dv, element by element."""
    grad = np.empty(v.shape)
    for k in np.ndindex(v.shape):
        vc = v.astype(complex)
        vc[k] += 1j * H
        grad[k] = loss(vc).imag / H
    return grad


def generate(save):
    rng = np.random.default_rng(707)
    n = 6
    x = rng.standard_normal((n, 3)) * np.array([1.0, 0.3, 2.5]) \
        + np.array([0.0, 1.0, -3.0])
    w = 1.0 + 0.5 * rng.standard_normal(3)
    b = 0.5 * rng.standard_normal(3)
    dy = rng.standard_normal((n, 3))
    mean = x.mean(axis=0)
    rstd = 1.0 / np.sqrt(x.var(axis=0) + EPS)
    dx = complex_step(lambda v: (dy * batch_norm(v, w, b)).sum(), x)
    dw = complex_step(lambda v: (dy * batch_norm(x, v, b)).sum(), w)
    db = complex_step(lambda v: (dy * batch_norm(x, w, v)).sum(), b)
    xhat = (x - mean) * rstd
    dx_lecture = w * rstd / n * (n * dy - dy.sum(0)
                                 - n / (n - 1) * xhat * (dy * xhat).sum(0))
    for name, value in [("x", x), ("w", w), ("b", b), ("dy", dy),
                        ("mean", mean), ("rstd", rstd), ("dx", dx),
                        ("dw", dw), ("db", db), ("dx_lecture", dx_lecture)]:
        save("ex07_" + name, value)
