"""NumPy references for exercise 06, the LayerNorm backward
(tests/exercises/grade_ex06_layer_norm_backward.c).

The forward, per row (eps 1e-5):
  mean = x.mean(-1),  rstd = 1 / sqrt(x.var(-1, ddof=0) + eps)
  y = (x - mean) * rstd * w + b
and the gradients are those of L = sum(dy * y). They are NOT computed with
the closed form the student is asked to find: each one is a complex-step
derivative of L, dL/dv = Im(L(v + i h e_k)) / h with h = 1e-30, one
element at a time. The forward above is analytic (no abs, no branch), so
the complex step gives the derivative to full float64 precision, with no
finite-difference error.

Names written (float64):
  ex06_x, ex06_w, ex06_b, ex06_dy   (4, 6), (6,), (6,), (4, 6)
  ex06_mean, ex06_rstd              (4,) each, the forward's statistics
  ex06_dx, ex06_dw, ex06_db         (4, 6), (6,), (6,)
"""
import numpy as np

EPS = 1e-5
H = 1e-30


def layer_norm(x, w, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
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
    rng = np.random.default_rng(606)
    x = rng.standard_normal((4, 6)) * np.array([1.0, 0.5, 3.0, 0.2])[:, None]
    w = 1.0 + 0.5 * rng.standard_normal(6)
    b = 0.5 * rng.standard_normal(6)
    dy = rng.standard_normal((4, 6))
    mean = x.mean(axis=-1)
    rstd = 1.0 / np.sqrt(x.var(axis=-1) + EPS)
    dx = complex_step(lambda v: (dy * layer_norm(v, w, b)).sum(), x)
    dw = complex_step(lambda v: (dy * layer_norm(x, v, b)).sum(), w)
    db = complex_step(lambda v: (dy * layer_norm(x, w, v)).sum(), b)
    for name, value in [("x", x), ("w", w), ("b", b), ("dy", dy),
                        ("mean", mean), ("rstd", rstd), ("dx", dx),
                        ("dw", dw), ("db", db)]:
        save("ex06_" + name, value)
