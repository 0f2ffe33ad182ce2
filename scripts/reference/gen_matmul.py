"""NumPy references for tg_matmul (tests/autograd/test_matmul.c).

For each case the operands and the product are saved as
matmul_<case>_a, matmul_<case>_b and matmul_<case>_out. Float32 products
are computed exactly from the float32 operands and rounded (through
float64) to float32; float64 products are the exact sums correctly rounded.

No BLAS is used: NumPy's @ on floats calls whichever BLAS the machine has
(the reference BLAS, OpenBLAS with kernels chosen by the CPU), whose
summation orders differ in the last bits, and the fixtures must be the
same bytes on every machine. exact_matmul multiplies Fractions instead.
"""
from fractions import Fraction

import numpy as np

_to_fraction = np.vectorize(Fraction, otypes=[object])
_to_float = np.vectorize(float, otypes=[np.float64])


def exact_matmul(a, b):
    """np.matmul(a, b) with the sums done exactly in rational arithmetic
    (object arrays: NumPy's generic loop, no BLAS), then rounded once to
    float64."""
    return _to_float(np.matmul(_to_fraction(np.asarray(a, np.float64)),
                               _to_fraction(np.asarray(b, np.float64))))

# (case name, shape of a, shape of b, dtype)
CASES = [
    ("dot", (3,), (3,), np.float32),
    ("mm", (2, 3), (3, 4), np.float32),
    ("vm", (3,), (3, 4), np.float32),
    ("mv", (2, 3), (3,), np.float32),
    ("bmm", (5, 2, 3), (3, 4), np.float32),
    ("mbm", (2, 3), (5, 3, 4), np.float32),
    ("bcast", (2, 1, 3, 4), (5, 4, 2), np.float32),
    ("vbm", (4,), (2, 4, 3), np.float32),
    ("bmv", (2, 3, 4), (4,), np.float32),
    ("mm_f64", (2, 3), (3, 4), np.float64),
    ("bmm_f64", (5, 2, 3), (3, 4), np.float64),
    ("bcast_f64", (2, 1, 3, 4), (5, 4, 2), np.float64),
    ("mm_i64", (3, 4), (4, 2), np.int64),
]


def generate(save):
    rng = np.random.default_rng(7311)
    for name, sa, sb, dtype in CASES:
        if dtype == np.int64:
            a = rng.integers(-50, 51, size=sa).astype(np.int64)
            b = rng.integers(-50, 51, size=sb).astype(np.int64)
            out = np.matmul(a, b)
        else:
            a = rng.standard_normal(sa).astype(dtype)
            b = rng.standard_normal(sb).astype(dtype)
            out = exact_matmul(a, b).astype(dtype)
        save(f"matmul_{name}_a", a)
        save(f"matmul_{name}_b", b)
        save(f"matmul_{name}_out", np.asarray(out, dtype=dtype))
