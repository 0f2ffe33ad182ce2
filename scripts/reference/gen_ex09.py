"""NumPy references for exercise 09, RMSNorm as a custom function
(tests/exercises/grade_ex09_rms_norm.c).

    y = x / sqrt(mean(x^2, -1) + eps) * w

The gradients of L = sum(g * y) are computed here without any formula for
the backward, by complex-step differentiation: for a function f that is
analytic in x (RMSNorm uses x^2, not |x|^2), f(x + i h e_j) = f(x) +
i h f'(x) e_j + O(h^2), so Im(L(x + i h e_j)) / h is dL/dx_j with no
subtraction and no cancellation: exact to rounding for h = 1e-30. Each
gradient is also checked against central differences, which must agree
to about 1e-8.

eps is 1e-3, not the usual 1e-5, and row 2 of x is small (about 0.03),
so that eps visibly changes that row; row 4 is all zeros (rms =
sqrt(eps), y = 0, dx = g * w / sqrt(eps)).

Names written (float64):
  ex09_x    (6, 5) input
  ex09_w    (5,)   weight
  ex09_eps  ()     eps
  ex09_g    (6, 5) dL/dy
  ex09_y    (6, 5) RMSNorm(x) * w
  ex09_dx   (6, 5) dL/dx
  ex09_dw   (5,)   dL/dw
"""
import numpy as np

EPS = 1e-3


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def loss(x, w, g, eps):
    return np.sum(g * rms_norm(x, w, eps))


def complex_step_grad(f, a, h=1e-30):
    grad = np.empty(a.shape)
    for j in np.ndindex(a.shape):
        ac = a.astype(np.complex128)
        ac[j] += 1j * h
        grad[j] = f(ac).imag / h
    return grad


def central_diff_grad(f, a, h=1e-6):
    grad = np.empty(a.shape)
    for j in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[j] += h
        am[j] -= h
        grad[j] = (f(ap) - f(am)) / (2 * h)
    return grad


def generate(save):
    rng = np.random.default_rng(909)
    x = rng.standard_normal((6, 5)) + 0.5
    x[1] *= 4.0
    x[2] *= 0.03
    x[4] = 0.0
    w = 1.0 + 0.5 * rng.standard_normal(5)
    g = rng.standard_normal((6, 5))
    y = rms_norm(x, w, EPS)
    dx = complex_step_grad(lambda xc: loss(xc, w, g, EPS), x)
    dw = complex_step_grad(lambda wc: loss(x, wc, g, EPS), w)
    for exact, f, a in ((dx, lambda xx: loss(xx, w, g, EPS), x),
                        (dw, lambda ww: loss(x, ww, g, EPS), w)):
        approx = central_diff_grad(f, a)
        assert np.allclose(exact, approx, rtol=1e-6, atol=1e-7), (exact, approx)
    save("ex09_x", x)
    save("ex09_w", w)
    save("ex09_eps", np.array(EPS))
    save("ex09_g", g)
    save("ex09_y", y)
    save("ex09_dx", dx)
    save("ex09_dw", dw)
