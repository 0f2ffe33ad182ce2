"""NumPy references for tg_linear (tests/autograd/test_linear.c).

For each case: x (..., in), the weight W (out, in), the bias b (out,)
(absent in the cases without one), an upstream gradient g (..., out), and
  y  = x W^T + b            (..., out)
  dx = g W                  (..., in)
  dw = g^T x over all rows  (out, in)
  db = g summed over rows   (out,)
saved as linear_<case>_{x,w,b,g,y,dx,dw,db}.

Every value is the exact rational result of the float operands, rounded
once to float64 and then (for float32 cases) to float32. The sums are
written out over Fractions, row by row, with no @ or np.dot on floats:
those call whichever BLAS the machine has, whose summation orders differ
in the last bits, and the fixtures must be the same bytes everywhere.
The formulas are arranged per element, not as the C code's strided
products, so the two do not share a mistake.
"""
from fractions import Fraction

import numpy as np

# (case name, leading dims of x, in, out, bias, dtype)
CASES = [
    ("2d_f64", (4,), 3, 5, True, np.float64),
    ("2d_f32", (4,), 3, 5, True, np.float32),
    ("3d_f64", (2, 3), 4, 3, True, np.float64),
    ("1d_f64", (), 3, 2, True, np.float64),
    ("nobias_f32", (3,), 4, 2, False, np.float32),
]


def exact_sum(terms):
    total = Fraction(0)
    for t in terms:
        total += t
    return total


def rounded(values, shape, dtype):
    out = np.array([float(v) for v in values], dtype=np.float64)
    return out.reshape(shape).astype(dtype)


def generate(save):
    rng = np.random.default_rng(20261126)
    for name, lead, n_in, n_out, has_bias, dtype in CASES:
        x = rng.standard_normal(lead + (n_in,)).astype(dtype)
        w = rng.standard_normal((n_out, n_in)).astype(dtype)
        b = rng.standard_normal((n_out,)).astype(dtype)
        g = rng.standard_normal(lead + (n_out,)).astype(dtype)
        rows_x = [[Fraction(float(v)) for v in row]
                  for row in x.reshape(-1, n_in)]
        rows_g = [[Fraction(float(v)) for v in row]
                  for row in g.reshape(-1, n_out)]
        fw = [[Fraction(float(v)) for v in row] for row in w]
        fb = [Fraction(float(v)) for v in b]
        y = [exact_sum(xr[p] * fw[j][p] for p in range(n_in))
             + (fb[j] if has_bias else 0)
             for xr in rows_x for j in range(n_out)]
        dx = [exact_sum(gr[j] * fw[j][p] for j in range(n_out))
              for gr in rows_g for p in range(n_in)]
        dw = [exact_sum(rows_g[i][j] * rows_x[i][p]
                        for i in range(len(rows_x)))
              for j in range(n_out) for p in range(n_in)]
        db = [exact_sum(gr[j] for gr in rows_g) for j in range(n_out)]
        save(f"linear_{name}_x", x)
        save(f"linear_{name}_w", w)
        if has_bias:
            save(f"linear_{name}_b", b)
            save(f"linear_{name}_db", rounded(db, (n_out,), dtype))
        save(f"linear_{name}_g", g)
        save(f"linear_{name}_y", rounded(y, lead + (n_out,), dtype))
        save(f"linear_{name}_dx", rounded(dx, lead + (n_in,), dtype))
        save(f"linear_{name}_dw", rounded(dw, (n_out, n_in), dtype))
