"""NumPy references for exercise 04, the backward of softmax
(tests/exercises/grade_ex04_softmax_backward.c).

For each row, y = softmax(x) and dL/dx_j = y_j (g_j - sum_i g_i y_i).
Computed here the long way, through the full Jacobian
J[i, j] = y_i (delta_ij - y_j) of each row, so that the reference does not
share the closed form the student is asked to find.

Names written (float64):
  ex04_y   (5, 7) softmax of a random normal x (scaled by 3, so some rows
           are peaked)
  ex04_g   (5, 7) dL/dy
  ex04_dx  (5, 7) dL/dx
"""
import numpy as np

from gen_matmul import exact_matmul  # no BLAS: the same bytes everywhere


def generate(save):
    rng = np.random.default_rng(404)
    x = 3.0 * rng.standard_normal((5, 7))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    g = rng.standard_normal((5, 7))
    dx = np.empty_like(y)
    for r in range(y.shape[0]):
        jac = np.diag(y[r]) - np.outer(y[r], y[r])  # J[i, j] = dy_i/dx_j
        dx[r] = exact_matmul(g[r], jac)
    save("ex04_y", y)
    save("ex04_g", g)
    save("ex04_dx", dx)
