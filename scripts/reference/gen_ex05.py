"""NumPy references for exercise 05, the LayerNorm forward
(tests/exercises/grade_ex05_layer_norm_forward.c).

Per row of x, as torch.nn.functional.layer_norm over the last dim:
  mean = x.mean(-1),  var = x.var(-1, ddof=0)   (biased)
  rstd = 1 / sqrt(var + eps),  y = (x - mean) * rstd * w + b
NumPy's var is two-pass (the mean of the squared deviations), so the
references stay accurate on rows whose mean is large next to their spread.

Names written (float64; eps 1e-5 unless said):
  ex05_x, ex05_w, ex05_b   (5, 7), (7,), (7,) inputs; rows of different
                           means and spreads
  ex05_y, ex05_mean, ex05_rstd
                           (5, 7), (5,), (5,) with w and b
  ex05_y_plain             (5, 7) with no w and no b (xhat itself)
  ex05_y_unbiased          (5, 7) wrong on purpose: the unbiased variance
                           (ddof=1), the mistake the grader names
  ex05_x_eps, ex05_y_eps, ex05_rstd_eps
                           (3, 6) rows of spread about 0.1, eps 0.5 (larger
                           than the variance, so it shows), no w, b
  ex05_x_big, ex05_y_big, ex05_mean_big, ex05_rstd_big
                           (3, 8) rows of mean about 1e6 and spread 1e-2,
                           no w, b: E[x^2] - E[x]^2 cancels to noise there
"""
import numpy as np


def layer_norm(x, w, b, eps, ddof=0):
    mean = x.mean(axis=-1)
    var = x.var(axis=-1, ddof=ddof)
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x - mean[:, None]) * rstd[:, None]
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


def generate(save):
    rng = np.random.default_rng(505)
    scale = np.array([1.0, 0.3, 4.0, 2.0, 0.05])
    shift = np.array([0.0, -2.0, 5.0, 0.5, 10.0])
    x = rng.standard_normal((5, 7)) * scale[:, None] + shift[:, None]
    w = 1.0 + 0.5 * rng.standard_normal(7)
    b = 0.5 * rng.standard_normal(7)
    y, mean, rstd = layer_norm(x, w, b, 1e-5)
    save("ex05_x", x)
    save("ex05_w", w)
    save("ex05_b", b)
    save("ex05_y", y)
    save("ex05_mean", mean)
    save("ex05_rstd", rstd)
    save("ex05_y_plain", layer_norm(x, None, None, 1e-5)[0])
    save("ex05_y_unbiased", layer_norm(x, w, b, 1e-5, ddof=1)[0])

    x_eps = 0.1 * rng.standard_normal((3, 6)) + 1.0
    y_eps, _, rstd_eps = layer_norm(x_eps, None, None, 0.5)
    save("ex05_x_eps", x_eps)
    save("ex05_y_eps", y_eps)
    save("ex05_rstd_eps", rstd_eps)

    x_big = 1e6 + np.array([0.0, 3.0, -7.0])[:, None] \
        + 1e-2 * rng.standard_normal((3, 8))
    y_big, mean_big, rstd_big = layer_norm(x_big, None, None, 1e-5)
    save("ex05_x_big", x_big)
    save("ex05_y_big", y_big)
    save("ex05_mean_big", mean_big)
    save("ex05_rstd_big", rstd_big)
