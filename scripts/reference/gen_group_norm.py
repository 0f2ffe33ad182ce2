"""NumPy references for GroupNorm and InstanceNorm (tests/autograd/
test_group_norm.c), written as plain loops over samples, groups, channels
and values, in float64, every sum in one fixed order (no pairwise or BLAS
sums, so the files do not depend on the machine).

GroupNorm, x of shape (N, C, *) seen as (N, C, S), G groups of D = C / G
channels; for sample i and group g, over its n = D * S values:
  mean = sum(x) / n,  var = sum((x - mean)^2) / n,  rstd = 1 / sqrt(var + eps)
  y[c] = (x - mean) * rstd * w[c] + b[c]
  with g_ = dy * w[c]:  dx = rstd * (g_ - sum(g_)/n - xhat * sum(g_ * xhat)/n)
  dw[c] = sum over samples and values of dy * xhat,  db[c] = sum of dy
InstanceNorm with the input's statistics is G = C; the running statistics
follow PyTorch's instance_norm (each sample's copy moves by momentum, then
the copies are averaged over the batch):
  running_mean = (1 - m) running_mean + m * (sum over i of mean[i, c]) / N
  running_var  = (1 - m) running_var + m * (sum over i of var[i, c] S/(S-1)) / N
In eval (running statistics) y = (x - rm[c]) / sqrt(rv[c] + eps) * w + b and
dx = dy * w[c] / sqrt(rv[c] + eps).
The float32 variants evaluate the same formulas in float64 on the
float32-rounded inputs and round the results once to float32.

Names written (dt is f64 or f32):
  gn_<set>_{x,w,b,dy}_<dt>          inputs; sets nc (4, 6), ncl (3, 4, 5),
                                    nchw (2, 6, 3, 3)
  gn_<case>_{y,dx,dw,db}_<dt>       one per entry of GN_CASES (dw, db only
                                    with affine)
  in_<set>_{x,dy}_<dt>              three batches stacked on a new dim 0:
                                    0 and 1 train, 2 eval; sets ncl
                                    (3, 4, 5), nchw (2, 3, 4, 4)
  in_<set>_{w,b}_<dt>               (C,)
  in_<set>_{y,dx,dw,db}_<dt>        per batch, stacked the same way
  in_<set>_{rmean,rvar}_<dt>        after each of the two training batches
                                    (2, C)
  gn_wrong_ncl_dx_f64               wrong on purpose: case ncl_g2's dx
                                    without the xhat * mean(g * xhat) term
  gn_wrong_ncl_y_f64                wrong on purpose: case ncl_g2's y with
                                    the groups taken as G = 1
"""
import numpy as np

DTYPES = {"f64": np.float64, "f32": np.float32}

GN_SETS = {"nc": (4, 6), "ncl": (3, 4, 5), "nchw": (2, 6, 3, 3)}
# (case, set, groups, affine, eps, dtypes)
GN_CASES = [
    ("nc_g3", "nc", 3, True, 1e-5, ("f64", "f32")),
    ("nc_g1", "nc", 1, False, 1e-5, ("f64",)),
    ("ncl_g2", "ncl", 2, True, 1e-5, ("f64", "f32")),
    ("ncl_g4", "ncl", 4, True, 0.1, ("f64",)),
    ("nchw_g3", "nchw", 3, True, 1e-5, ("f64", "f32")),
    ("nchw_g6_noaff", "nchw", 6, False, 1e-5, ("f64",)),
    ("nchw_g1", "nchw", 1, True, 1e-3, ("f64",)),
]

IN_SETS = {"ncl": (3, 4, 5), "nchw": (2, 3, 4, 4)}
IN_MOMENTUM = 0.1
IN_EPS = 1e-5
IN_TRAIN_STEPS = 2


def group_norm_ref(x, G, w, b, dy, eps, drop_xhat_term=False):
    """GroupNorm forward and backward by loops, in float64."""
    N, C = x.shape[0], x.shape[1]
    S = int(np.prod(x.shape[2:], dtype=np.int64))
    D = C // G
    n = D * S
    xv = x.reshape(N, C, S)
    dyv = dy.reshape(N, C, S)
    y = np.zeros((N, C, S))
    dx = np.zeros((N, C, S))
    dw = np.zeros(C)
    db = np.zeros(C)
    for i in range(N):
        for g in range(G):
            chans = range(g * D, (g + 1) * D)
            total = 0.0
            for c in chans:
                for s in range(S):
                    total += xv[i, c, s]
            mean = total / n
            sq = 0.0
            for c in chans:
                for s in range(S):
                    d = xv[i, c, s] - mean
                    sq += d * d
            rstd = 1.0 / np.sqrt(sq / n + eps)
            gsum = 0.0
            gxsum = 0.0
            for c in chans:
                wc = w[c] if w is not None else 1.0
                bc = b[c] if b is not None else 0.0
                for s in range(S):
                    xhat = (xv[i, c, s] - mean) * rstd
                    y[i, c, s] = xhat * wc + bc
                    gg = dyv[i, c, s] * wc
                    gsum += gg
                    gxsum += gg * xhat
                    dw[c] += dyv[i, c, s] * xhat
                    db[c] += dyv[i, c, s]
            for c in chans:
                wc = w[c] if w is not None else 1.0
                for s in range(S):
                    xhat = (xv[i, c, s] - mean) * rstd
                    gg = dyv[i, c, s] * wc
                    last = 0.0 if drop_xhat_term else xhat * gxsum / n
                    dx[i, c, s] = rstd * (gg - gsum / n - last)
    return dict(y=y.reshape(x.shape), dx=dx.reshape(x.shape), dw=dw, db=db)


def instance_stats(x):
    """Per (sample, channel) mean and sum of squared deviations, by loops."""
    N, C = x.shape[0], x.shape[1]
    S = int(np.prod(x.shape[2:], dtype=np.int64))
    xv = x.reshape(N, C, S)
    mean = np.zeros((N, C))
    m2 = np.zeros((N, C))
    for i in range(N):
        for c in range(C):
            total = 0.0
            for s in range(S):
                total += xv[i, c, s]
            mean[i, c] = total / S
            sq = 0.0
            for s in range(S):
                d = xv[i, c, s] - mean[i, c]
                sq += d * d
            m2[i, c] = sq
    return mean, m2, S


def instance_eval_ref(x, w, b, dy, rmean, rvar, eps):
    """InstanceNorm with the running statistics, by loops."""
    N, C = x.shape[0], x.shape[1]
    S = int(np.prod(x.shape[2:], dtype=np.int64))
    xv = x.reshape(N, C, S)
    dyv = dy.reshape(N, C, S)
    y = np.zeros((N, C, S))
    dx = np.zeros((N, C, S))
    dw = np.zeros(C)
    db = np.zeros(C)
    for i in range(N):
        for c in range(C):
            invstd = 1.0 / np.sqrt(rvar[c] + eps)
            for s in range(S):
                xhat = (xv[i, c, s] - rmean[c]) * invstd
                y[i, c, s] = xhat * w[c] + b[c]
                dx[i, c, s] = dyv[i, c, s] * w[c] * invstd
                dw[c] += dyv[i, c, s] * xhat
                db[c] += dyv[i, c, s]
    return dict(y=y.reshape(x.shape), dx=dx.reshape(x.shape), dw=dw, db=db)


def save_group_norm(save, rng):
    sets = {}
    for name, shape in GN_SETS.items():
        C = shape[1]
        sets[name] = dict(
            x=rng.standard_normal(shape) * 1.5 + 0.5,
            w=1.0 + 0.5 * rng.standard_normal(C),
            b=0.5 * rng.standard_normal(C),
            dy=rng.standard_normal(shape))
    for name, s in sets.items():
        for tag, dt in DTYPES.items():
            for k in ("x", "w", "b", "dy"):
                save(f"gn_{name}_{k}_{tag}", s[k].astype(dt))
    for case, sname, G, affine, eps, dtypes in GN_CASES:
        s = sets[sname]
        for tag in dtypes:
            dt = DTYPES[tag]
            f = {k: s[k].astype(dt).astype(np.float64) for k in s}
            w = f["w"] if affine else None
            b = f["b"] if affine else None
            ref = group_norm_ref(f["x"], G, w, b, f["dy"], eps)
            keys = ("y", "dx", "dw", "db") if affine else ("y", "dx")
            for k in keys:
                save(f"gn_{case}_{k}_{tag}", ref[k].astype(dt))
    # the wrong references, for the test that the comparison can fail
    s = sets["ncl"]
    wrong = group_norm_ref(s["x"], 2, s["w"], s["b"], s["dy"], 1e-5,
                           drop_xhat_term=True)
    save("gn_wrong_ncl_dx_f64", wrong["dx"])
    wrong = group_norm_ref(s["x"], 1, s["w"], s["b"], s["dy"], 1e-5)
    save("gn_wrong_ncl_y_f64", wrong["y"])


def save_instance_norm(save, rng):
    for name, shape in IN_SETS.items():
        C = shape[1]
        batches = IN_TRAIN_STEPS + 1
        # channel c has values around c - 1 with spread 0.5 + c / 2, so the
        # running statistics move visibly
        spread = (0.5 + 0.5 * np.arange(C)).reshape((1, 1, C) + (1,) * (len(shape) - 2))
        shift = (np.arange(C) - 1.0).reshape((1, 1, C) + (1,) * (len(shape) - 2))
        x = rng.standard_normal((batches,) + shape) * spread + shift
        w = 1.0 + 0.5 * rng.standard_normal(C)
        b = 0.5 * rng.standard_normal(C)
        dy = rng.standard_normal((batches,) + shape)
        for tag, dt in DTYPES.items():
            xs, ws, bs, dys = (a.astype(dt).astype(np.float64) for a in (x, w, b, dy))
            save(f"in_{name}_x_{tag}", xs.astype(dt))
            save(f"in_{name}_w_{tag}", ws.astype(dt))
            save(f"in_{name}_b_{tag}", bs.astype(dt))
            save(f"in_{name}_dy_{tag}", dys.astype(dt))
            rmean = np.zeros(C)
            rvar = np.ones(C)
            out = {k: [] for k in ("y", "dx", "dw", "db")}
            rms, rvs = [], []
            for k in range(batches):
                if k < IN_TRAIN_STEPS:
                    ref = group_norm_ref(xs[k], C, ws, bs, dys[k], IN_EPS)
                    mean, m2, S = instance_stats(xs[k])
                    N = shape[0]
                    new_m = np.zeros(C)
                    new_v = np.zeros(C)
                    for c in range(C):
                        tm = 0.0
                        tv = 0.0
                        for i in range(N):
                            tm += mean[i, c]
                            tv += m2[i, c] / (S - 1)
                        new_m[c] = (1 - IN_MOMENTUM) * rmean[c] + IN_MOMENTUM * (tm / N)
                        new_v[c] = (1 - IN_MOMENTUM) * rvar[c] + IN_MOMENTUM * (tv / N)
                    # the buffers hold x's dtype: round after each batch
                    rmean = new_m.astype(dt).astype(np.float64)
                    rvar = new_v.astype(dt).astype(np.float64)
                    rms.append(rmean)
                    rvs.append(rvar)
                else:
                    ref = instance_eval_ref(xs[k], ws, bs, dys[k], rmean,
                                            rvar, IN_EPS)
                for key in out:
                    out[key].append(ref[key])
            for key, v in out.items():
                save(f"in_{name}_{key}_{tag}", np.stack(v).astype(dt))
            save(f"in_{name}_rmean_{tag}", np.stack(rms).astype(dt))
            save(f"in_{name}_rvar_{tag}", np.stack(rvs).astype(dt))


def generate(save):
    rng = np.random.default_rng(20261126)
    save_group_norm(save, rng)
    save_instance_norm(save, rng)
