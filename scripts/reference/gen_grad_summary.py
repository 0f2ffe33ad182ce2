"""NumPy references for the gradient summaries (tests/nn/test_grad_summary.c,
nn/diagnostics.c): makemore part 3's p.grad.mean(), p.grad.std() and
p.grad.std() / p.std(), the stds unbiased (n - 1) as torch.std.

Sums are math.fsum (correctly rounded, so independent of summation order)
of float64 values; a float32 case is computed in float64 from the float32
values.

Names written:
  grad_summary_<case>_p, grad_summary_<case>_g   a parameter and its gradient
  grad_summary_<case>_stats   float64 (4,): grad_mean, grad_std, data_std,
                              grad_data
Cases: w64 (5, 4) float64, w32 (10, 3) float32 with gradients of order
1e-3 (the lecture's scale), b64 (5,) float64.
"""
import math

import numpy as np

SEED = 20261126


def mean(x):
    return math.fsum(x.ravel().tolist()) / x.size


def std(x):
    m = mean(x)
    return math.sqrt(math.fsum(((x.ravel() - m) ** 2).tolist()) / (x.size - 1))


def generate(save):
    rng = np.random.default_rng(SEED)
    cases = (
        ("w64", (5, 4), np.float64, 1.0),
        ("w32", (10, 3), np.float32, 1e-3),
        ("b64", (5,), np.float64, 0.1),
    )
    for name, shape, dtype, gscale in cases:
        p = (rng.standard_normal(shape) * 0.3).astype(dtype)
        g = (rng.standard_normal(shape) * gscale + 0.2 * gscale).astype(dtype)
        p64 = p.astype(np.float64)
        g64 = g.astype(np.float64)
        gs, ds = std(g64), std(p64)
        save(f"grad_summary_{name}_p", p)
        save(f"grad_summary_{name}_g", g)
        save(f"grad_summary_{name}_stats", np.array([mean(g64), gs, ds, gs / ds]))
