"""NumPy references for the losses (tests/autograd/test_loss.c): mse_loss,
binary_cross_entropy_with_logits, nll_loss and cross_entropy, forward and
gradients, for the three reductions.

Everything is computed in float64 from the formulas below, written
independently of the C code (bce through logaddexp, cross-entropy through a
max-shifted logsumexp). A float32 variant evaluates the same formulas in
float64 on the float32-rounded inputs and rounds the results once to
float32: the correctly rounded answers.

  mse:  l = (x - t)^2
        dx = 2 (x - t) g',  dt = -dx
  bce:  l = t log(1 + e^-x) + (1 - t) log(1 + e^x)    (-(t log p +
        (1 - t) log(1 - p)) with p = sigmoid(x), by logaddexp)
        dx = (sigmoid(x) - t) g',  dt = -x g'
  nll:  l_i = -logp[i, y_i]
        dlogp[i, y_i] = -g'_i, 0 elsewhere
  ce:   l_i = logsumexp(z_i) - z_i[y_i]
        dz_i = (softmax(z_i) - onehot(y_i)) g'_i

where g' is the upstream gradient: for reduction none the array g of the
loss's shape; for sum the 0-d G; for mean G / n, n = numel for mse and bce,
n = N rows for nll and ce. G is 1.75 rather than 1, so a backward that
ignores its incoming gradient fails.

Names written (dt is f64 or f32; red is mean, sum or none):
  loss_mse_{x,t,g}_<dt>                 (3, 4) inputs, g for none
  loss_mse_<red>_{out,dx,dt}_<dt>
  loss_bce_{x,t,g}_<dt>                 (3, 4): logits in [-4, 4],
                                        targets in [0, 1]
  loss_bce_<red>_{out,dx,dt}_<dt>
  loss_bcebig_{x,t}_<dt>                (2, 4) logits +-100, +-30, +-17,
                                        0 and 1e-3 against 0, 1 and 0.5
  loss_bcebig_{none_out,sum_out,sum_dx}_<dt>
  loss_nll_{logp,g}_<dt>, loss_nll_y    (5, 4) log-probabilities, labels
                                        (5,) int64, g (5,)
  loss_nll_<red>_{out,dx}_<dt>
  loss_nll1_{logp,out,dx}_<dt>, loss_nll1_y
                                        one sample: logp (4,), label 0-d
                                        (the out of every reduction is the
                                        same 0-d value)
  loss_ce_{z,g}_<dt>, loss_ce_y         (5, 4) logits, labels, g (5,)
  loss_ce_<red>_{out,dx}_<dt>
  loss_cebig_{z,out,dx}_<dt>, loss_cebig_y
                                        (3, 3) logits of +-1000, mean
  loss_ce1_{z,out,dx}_<dt>, loss_ce1_y  one sample: z (4,), label 0-d,
                                        reduction none
  loss_wrong_ce_dx_f64                  wrong on purpose: loss_ce_mean_dx
                                        without the -onehot term
  loss_wrong_mse_dx_f64                 wrong on purpose: loss_mse_mean_dx
                                        without the factor 2
"""
import numpy as np

DTYPES = {"f64": np.float64, "f32": np.float32}
REDUCTIONS = ("mean", "sum", "none")
G = 1.75  # the upstream gradient of a reduced (0-d) loss (exact in binary)


def upstream(red, g, n):
    """The gradient reaching each of the n values, shaped like g (the
    values' shape): g itself, G, or G / n. g may be None when red is not
    none."""
    if red == "none":
        return g
    return G / n if red == "mean" else G


def reduce(values, red):
    if red == "none":
        return values
    return values.mean() if red == "mean" else values.sum()


def mse(x, t, g, red):
    gp = upstream(red, g, x.size)
    dx = 2.0 * (x - t) * gp
    return dict(out=reduce((x - t) ** 2, red), dx=dx, dt=-dx)


def sigmoid(x):
    # 1 / (1 + e^-x) = exp(-log(1 + e^-x)), without overflow
    return np.exp(-np.logaddexp(0.0, -x))


def bce(x, t, g, red):
    gp = upstream(red, g, x.size)
    # -(t log p + (1 - t) log(1 - p)) with p = sigmoid(x), log p =
    # -log(1 + e^-x), log(1 - p) = -log(1 + e^x): two terms >= 0, so no
    # cancellation (log(1 + e^x) - x t would lose digits at x = 17, t = 1)
    values = t * np.logaddexp(0.0, -x) + (1.0 - t) * np.logaddexp(0.0, x)
    return dict(out=reduce(values, red), dx=(sigmoid(x) - t) * gp,
                dt=-x * gp)


def nll(logp, y, g, red):
    """logp (N, C) and y (N,), or logp (C,) and a 0-d y."""
    lp = logp.reshape(-1, logp.shape[-1])
    yy = np.asarray(y).reshape(-1)
    n = lp.shape[0]
    values = -lp[np.arange(n), yy]
    gp = np.broadcast_to(upstream(red, g, n), (n,)).reshape(-1)
    dx = np.zeros_like(lp)
    dx[np.arange(n), yy] = -gp
    out = reduce(values, red)
    if logp.ndim == 1:
        out = np.asarray(out).reshape(())
    return dict(out=out, dx=dx.reshape(logp.shape))


def cross_entropy(z, y, g, red, drop_onehot=False):
    zz = z.reshape(-1, z.shape[-1])
    yy = np.asarray(y).reshape(-1)
    n = zz.shape[0]
    m = zz.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(zz - m).sum(axis=1, keepdims=True))
    values = lse[:, 0] - zz[np.arange(n), yy]
    softmax = np.exp(zz - lse)
    onehot = np.zeros_like(zz)
    onehot[np.arange(n), yy] = 1.0
    if drop_onehot:
        onehot[:] = 0.0
    gp = np.broadcast_to(upstream(red, g, n), (n,)).reshape(-1)
    dx = (softmax - onehot) * gp[:, None]
    out = reduce(values, red)
    if z.ndim == 1:
        out = np.asarray(out).reshape(())
    return dict(out=out, dx=dx.reshape(z.shape))


def rounded(inputs, dt):
    """The inputs as dt (saved as such) and their float64 values."""
    cast = {k: v.astype(dt) for k, v in inputs.items()}
    return cast, {k: v.astype(np.float64) for k, v in cast.items()}


def save_pointwise(save, rng):
    sets = {
        "mse": (mse, dict(x=rng.standard_normal((3, 4)),
                          t=rng.standard_normal((3, 4)),
                          g=rng.standard_normal((3, 4)))),
        "bce": (bce, dict(x=rng.uniform(-4.0, 4.0, (3, 4)),
                          t=rng.uniform(0.0, 1.0, (3, 4)),
                          g=rng.standard_normal((3, 4)))),
    }
    for name, (loss, inputs) in sets.items():
        for tag, dt in DTYPES.items():
            cast, f = rounded(inputs, dt)
            for k, v in cast.items():
                save(f"loss_{name}_{k}_{tag}", v)
            for red in REDUCTIONS:
                ref = loss(f["x"], f["t"], f["g"], red)
                for k in ("out", "dx", "dt"):
                    save(f"loss_{name}_{red}_{k}_{tag}",
                         np.asarray(ref[k]).astype(dt))
    # large logits: log(1 + e^100) must not overflow, sigmoid(-100) - 1
    # must be -1, not NaN
    x = np.array([[100.0, -100.0, 30.0, -30.0],
                  [17.0, -17.0, 0.0, 1e-3]])
    t = np.array([[0.0, 1.0, 0.5, 0.0], [1.0, 0.5, 0.5, 1.0]])
    for tag, dt in DTYPES.items():
        cast, f = rounded(dict(x=x, t=t), dt)
        save(f"loss_bcebig_x_{tag}", cast["x"])
        save(f"loss_bcebig_t_{tag}", cast["t"])
        none = bce(f["x"], f["t"], np.ones_like(x), "none")
        total = bce(f["x"], f["t"], None, "sum")
        save(f"loss_bcebig_none_out_{tag}", none["out"].astype(dt))
        save(f"loss_bcebig_sum_out_{tag}", np.asarray(total["out"]).astype(dt))
        save(f"loss_bcebig_sum_dx_{tag}", total["dx"].astype(dt))
    # wrong on purpose: the mse gradient without its factor 2
    inputs = sets["mse"][1]
    wrong = mse(inputs["x"], inputs["t"], None, "mean")["dx"] / 2.0
    save("loss_wrong_mse_dx_f64", wrong)


def log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def save_class(save, rng):
    # nll on (5, 4) log-probabilities; every class appears, one twice
    y = np.array([2, 0, 3, 1, 2], dtype=np.int64)
    logp = log_softmax(1.5 * rng.standard_normal((5, 4)))
    g = rng.standard_normal(5)
    save("loss_nll_y", y)
    for tag, dt in DTYPES.items():
        cast, f = rounded(dict(logp=logp, g=g), dt)
        save(f"loss_nll_logp_{tag}", cast["logp"])
        save(f"loss_nll_g_{tag}", cast["g"])
        for red in REDUCTIONS:
            ref = nll(f["logp"], y, f["g"], red)
            save(f"loss_nll_{red}_out_{tag}",
                 np.asarray(ref["out"]).astype(dt))
            save(f"loss_nll_{red}_dx_{tag}", ref["dx"].astype(dt))
    # one sample: logp (4,), label 0-d; reduced with the mean (G / 1)
    y1 = np.array(1, dtype=np.int64)
    logp1 = log_softmax(rng.standard_normal(4))
    save("loss_nll1_y", y1)
    for tag, dt in DTYPES.items():
        cast, f = rounded(dict(logp=logp1), dt)
        save(f"loss_nll1_logp_{tag}", cast["logp"])
        ref = nll(f["logp"], y1, None, "mean")
        save(f"loss_nll1_out_{tag}", np.asarray(ref["out"]).astype(dt))
        save(f"loss_nll1_dx_{tag}", ref["dx"].astype(dt))

    # cross-entropy on (5, 4) logits
    y = np.array([1, 3, 0, 0, 2], dtype=np.int64)
    z = 2.0 * rng.standard_normal((5, 4))
    g = rng.standard_normal(5)
    save("loss_ce_y", y)
    for tag, dt in DTYPES.items():
        cast, f = rounded(dict(z=z, g=g), dt)
        save(f"loss_ce_z_{tag}", cast["z"])
        save(f"loss_ce_g_{tag}", cast["g"])
        for red in REDUCTIONS:
            ref = cross_entropy(f["z"], y, f["g"], red)
            save(f"loss_ce_{red}_out_{tag}",
                 np.asarray(ref["out"]).astype(dt))
            save(f"loss_ce_{red}_dx_{tag}", ref["dx"].astype(dt))
    wrong = cross_entropy(z, y, None, "mean", drop_onehot=True)
    save("loss_wrong_ce_dx_f64", wrong["dx"])
    # logits of +-1000: exp(1000) is inf in float64, so only a shifted
    # logsumexp gives finite values. Row 0's label has logit -1000 (loss
    # 2000), row 1's the largest logit (loss ~e^-997 ~ 0), row 2 ties.
    yb = np.array([1, 1, 0], dtype=np.int64)
    zb = np.array([[1000.0, -1000.0, 0.0],
                   [-1000.0, 1000.0, 3.0],
                   [500.0, 500.0, -1000.0]])
    save("loss_cebig_y", yb)
    for tag, dt in DTYPES.items():
        cast, f = rounded(dict(z=zb), dt)
        save(f"loss_cebig_z_{tag}", cast["z"])
        ref = cross_entropy(f["z"], yb, None, "mean")
        save(f"loss_cebig_out_{tag}", np.asarray(ref["out"]).astype(dt))
        save(f"loss_cebig_dx_{tag}", ref["dx"].astype(dt))
    # one sample, reduction none: a 0-d loss, upstream gradient 1
    y1 = np.array(3, dtype=np.int64)
    z1 = rng.standard_normal(4)
    save("loss_ce1_y", y1)
    for tag, dt in DTYPES.items():
        cast, f = rounded(dict(z=z1), dt)
        save(f"loss_ce1_z_{tag}", cast["z"])
        ref = cross_entropy(f["z"], y1, np.ones(()), "none")
        save(f"loss_ce1_out_{tag}", np.asarray(ref["out"]).astype(dt))
        save(f"loss_ce1_dx_{tag}", ref["dx"].astype(dt))


def generate(save):
    rng = np.random.default_rng(20240914)
    save_pointwise(save, rng)
    save_class(save, rng)
