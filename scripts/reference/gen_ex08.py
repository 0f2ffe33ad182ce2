"""NumPy references for exercise 08, BatchNorm's running statistics
(tests/exercises/grade_ex08_running_stats.c).

Four training batches of different sizes go through the update, from
running_mean = 0 and running_var = 1 (a fresh BatchNorm1d), as PyTorch:
  running_mean = (1 - m) * running_mean + m * x.mean(0)
  running_var  = (1 - m) * running_var  + m * x.var(0, ddof=1)   (unbiased)

Names written (float64, C = 4 channels):
  ex08_x_0 .. ex08_x_3        the batches, (8, 4), (2, 4), (5, 4), (3, 4)
  ex08_rmean_m01, ex08_rvar_m01
                              (4, 4): row k is the buffer after batch k,
                              momentum 0.1
  ex08_rmean_m03, ex08_rvar_m03
                              the same with momentum 0.3
"""
import numpy as np

SIZES = (8, 2, 5, 3)


def run(batches, momentum):
    rmean, rvar = np.zeros(4), np.ones(4)
    means, variances = [], []
    for x in batches:
        rmean = (1 - momentum) * rmean + momentum * x.mean(axis=0)
        rvar = (1 - momentum) * rvar + momentum * x.var(axis=0, ddof=1)
        means.append(rmean)
        variances.append(rvar)
    return np.stack(means), np.stack(variances)


def generate(save):
    rng = np.random.default_rng(808)
    scale = np.array([1.0, 0.5, 3.0, 0.1])
    shift = np.array([0.0, 2.0, -1.0, 5.0])
    batches = [rng.standard_normal((n, 4)) * scale + shift for n in SIZES]
    for k, x in enumerate(batches):
        save(f"ex08_x_{k}", x)
    for tag, momentum in (("m01", 0.1), ("m03", 0.3)):
        rmean, rvar = run(batches, momentum)
        save(f"ex08_rmean_{tag}", rmean)
        save(f"ex08_rvar_{tag}", rvar)
