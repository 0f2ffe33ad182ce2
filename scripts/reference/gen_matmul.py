"""NumPy references for tg_matmul (tests/autograd/test_matmul.c).

For each case the operands and the product are saved as
matmul_<case>_a, matmul_<case>_b and matmul_<case>_out. Float32 products
are computed in float64 from the float32 operands and rounded once, so they
are the correctly rounded answers (the C kernel sums in double too).
"""
import numpy as np

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
            out = np.matmul(a.astype(np.float64),
                            b.astype(np.float64)).astype(dtype)
        save(f"matmul_{name}_a", a)
        save(f"matmul_{name}_b", b)
        save(f"matmul_{name}_out", np.asarray(out, dtype=dtype))
