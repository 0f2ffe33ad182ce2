"""NumPy references for LayerNorm and BatchNorm, the fused ops and the
composed ones (tests/autograd/test_norm_reference.c).

Everything is computed in float64 by the closed forms of SEMANTICS.md
sections 1 and 2 (written out in ln_reference and bn_step below). A float32
variant evaluates the same formulas in float64 on the float32-rounded inputs
and rounds the results once to float32: the correctly rounded answers.

LayerNorm, per row of N = prod(normalized_shape) elements:
  mean = sum(x) / N,  var = sum((x - mean)^2) / N,  rstd = 1 / sqrt(var + eps)
  xhat = (x - mean) * rstd,  y = xhat * w + b
  g = dy * w,  dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (llm.c)
  dw = sum over rows of dy * xhat,  db = sum over rows of dy
mean and rstd have the shape torch.native_layer_norm gives them: x's
leading dims followed by ones.

BatchNorm, per channel c (dim 1) over its n = numel / C values, k the
correction (0: PyTorch, 1: makemore part 4's unbiased variant):
  mean = sum(x_c) / n,  invstd = 1 / sqrt(sum((x_c - mean)^2) / (n - k) + eps)
  y  = (x - mean) * invstd * w + b
  dx = w * invstd / n * (n dy - sum(dy) - n/(n-k) * xhat * sum(dy * xhat))
  running_mean = (1 - m) running_mean + m mean
  running_var  = (1 - m) running_var  + m sum((x_c - mean)^2) / (n - 1)
In eval mean and invstd come from the running statistics (invstd =
1 / sqrt(running_var + eps)) and dx = dy * w * invstd. dw = sum(dy * xhat)
and db = sum(dy) in both. The running statistics start at 0 and 1 and go
through three training batches; momentum m is a number, or "cumulative"
(PyTorch's momentum=None: m = 1 / k for batch k = 1, 2, 3). In the float32
variants the running statistics are rounded to float32 after each batch,
as the float32 buffers hold them, and the eval batch uses those.

Names written (dt is f64 or f32):
  norm_ln_<set>_{x,w,b,dy}_<dt>      inputs: sets a (4, 5)/(5,),
                                     b (2, 3, 8)/(8,), c (2, 3, 4)/(3, 4),
                                     gpt (2, 14, 16)/(14, 16),
                                     chw (3, 2, 2, 3)/(2, 2, 3), v (6,)/(6,)
  norm_ln_<case>_{y,mean,rstd,dx,dw,db}_<dt>
                                     one per entry of LN_CASES (dw, db only
                                     when the case has w, b)
  norm_bn_<set>_{x,dy}_<dt>          four batches stacked on a new dim 0:
                                     0..2 train, 3 eval; sets nc (8, 3),
                                     ncl (4, 3, 5), nchw (2, 3, 4, 4)
  norm_bn_<set>_{w,b}_<dt>           (C,)
  norm_bn_<case>_{y,mean,invstd,dx,dw,db}_<dt>
                                     per batch, stacked the same way (4, ...)
  norm_bn_<case>_{rmean,rvar}_<dt>   running statistics after each of the
                                     three training batches (3, C)
  norm_stab_ln_{x,dy}_f32, norm_stab_ln_{y,dx}_f64, norm_stab_ln_naive_f32
                                     (4, 64) float32 rows of mean ~1e4 and
                                     std ~1e-2; references in float64 from
                                     the same float32 inputs; naive: y by
                                     E[x^2] - E[x]^2, in float32
  norm_stab_bn_{x,dy}_f32, norm_stab_bn_{y,dx,rmean,rvar}_f64,
  norm_stab_bn_naive_f32             the same for (8, 3, 4) channels
  norm_zv_ln_{x,w,b,dy,y,dx,dw,db}   (3, 5) float64, row 1 constant
  norm_zv_bn_{x,w,b,dy,y,dx,dw,db,rmean,rvar}
                                     (6, 3) float64, channel 2 constant
  norm_wrong_bn_nc_dx_f64            wrong on purpose: batch 0 of case nc
                                     (correction 0) differentiated with the
                                     correction-1 formula's n/(n-1) factor
  norm_wrong_ln_a_dx_f64             wrong on purpose: case a_wb's dx
                                     without the xhat * mean(g * xhat) term
"""
import numpy as np

DTYPES = {"f64": np.float64, "f32": np.float32}

# LayerNorm input sets: name -> (x shape, number of normalised trailing dims)
LN_SETS = {
    "a": ((4, 5), 1),
    "b": ((2, 3, 8), 1),
    "c": ((2, 3, 4), 2),
    "gpt": ((2, 14, 16), 2),   # a small stand-in for GPT-2's (T, 768)
    "chw": ((3, 2, 2, 3), 3),  # (N, C, H, W), each sample normalised whole
    "v": ((6,), 1),            # a single row
}
# (case, set, affine: "wb" | "w" | "b" | "", eps, dtypes)
LN_CASES = [
    ("a_wb", "a", "wb", 1e-5, ("f64", "f32")),
    ("a_none", "a", "", 1e-5, ("f64",)),
    ("a_eps2", "a", "wb", 1e-2, ("f64", "f32")),
    ("b_wb", "b", "wb", 1e-5, ("f64",)),
    ("b_w_eps0", "b", "w", 0.0, ("f64",)),
    ("c_wb", "c", "wb", 1e-5, ("f64", "f32")),
    ("c_b", "c", "b", 1e-5, ("f64",)),
    ("gpt_wb", "gpt", "wb", 1e-5, ("f32",)),
    ("chw_wb", "chw", "wb", 1e-5, ("f64",)),
    ("chw_none", "chw", "", 1e-2, ("f64",)),
    ("v_wb", "v", "wb", 1e-5, ("f64",)),
    ("v_none_eps0", "v", "", 0.0, ("f64",)),
]

# BatchNorm input sets: name -> shape of one batch. Channel c has values
# around BN_SHIFT[c] with spread BN_SCALE[c].
BN_SETS = {"nc": (8, 3), "ncl": (4, 3, 5), "nchw": (2, 3, 4, 4)}
BN_SCALE = np.array([0.5, 1.0, 2.0])
BN_SHIFT = np.array([-1.0, 0.0, 3.0])
BN_TRAIN_STEPS = 3
# (case, set, affine, momentum (a number or "cumulative"), correction, eps,
#  dtypes)
BN_CASES = [
    ("nc", "nc", True, 0.1, 0, 1e-5, ("f64", "f32")),
    ("nc_cum", "nc", True, "cumulative", 0, 1e-5, ("f64",)),
    ("nc_corr1", "nc", True, 0.1, 1, 1e-5, ("f64", "f32")),
    ("ncl", "ncl", True, 0.1, 0, 1e-5, ("f64",)),
    ("ncl_noaff", "ncl", False, 0.3, 0, 1e-3, ("f64",)),
    ("nchw", "nchw", True, 0.1, 0, 1e-5, ("f64", "f32")),
    ("ncl_corr1_cum", "ncl", True, "cumulative", 1, 1e-5, ("f64",)),
]


def ln_reference(x, w, b, dy, nd, eps, drop_xhat_term=False):
    """LayerNorm forward and backward over the last nd dims, in float64."""
    ax = tuple(range(x.ndim - nd, x.ndim))
    mean = x.mean(axis=ax, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=ax, keepdims=True)
    with np.errstate(divide="ignore"):
        rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    y = xhat * (w if w is not None else 1.0) + (b if b is not None else 0.0)
    g = dy * w if w is not None else dy
    last = xhat * (g * xhat).mean(axis=ax, keepdims=True)
    if drop_xhat_term:
        last = 0.0
    dx = rstd * (g - g.mean(axis=ax, keepdims=True) - last)
    lead = tuple(range(x.ndim - nd))
    dw = (dy * xhat).sum(axis=lead)
    db = dy.sum(axis=lead)
    # torch.native_layer_norm's statistics: leading dims, then ones (a 1-D
    # x gives shape (1,))
    stat_shape = x.shape[: x.ndim - nd] + (1,) * nd
    return dict(y=y, mean=mean.reshape(stat_shape),
                rstd=rstd.reshape(stat_shape), dx=dx, dw=dw, db=db)


def bn_step(x, w, b, dy, rmean, rvar, training, momentum, correction, eps,
            n_over_n1_factor=None):
    """One BatchNorm call, in float64. Returns the outputs and the new
    running statistics. n_over_n1_factor overrides the factor n/(n-k) on the
    last term of dx (for the deliberately wrong reference)."""
    C = x.shape[1]
    ax = (0,) + tuple(range(2, x.ndim))
    n = x.size // C
    cshape = (1, C) + (1,) * (x.ndim - 2)
    wc = (w if w is not None else np.ones(C)).reshape(cshape)
    bc = (b if b is not None else np.zeros(C)).reshape(cshape)
    if training:
        mean = x.mean(axis=ax)
        m2 = ((x - mean.reshape(cshape)) ** 2).sum(axis=ax)
        invstd = 1.0 / np.sqrt(m2 / (n - correction) + eps)
        rmean = (1 - momentum) * rmean + momentum * mean
        rvar = (1 - momentum) * rvar + momentum * m2 / (n - 1)
    else:
        mean = rmean
        invstd = 1.0 / np.sqrt(rvar + eps)
    mean_k, invstd_k = mean.reshape(cshape), invstd.reshape(cshape)
    xhat = (x - mean_k) * invstd_k
    y = xhat * wc + bc
    sdy = dy.sum(axis=ax)
    sdyx = (dy * xhat).sum(axis=ax)
    if training:
        factor = n / (n - correction)
        if n_over_n1_factor is not None:
            factor = n_over_n1_factor
        dx = wc * invstd_k / n * (n * dy - sdy.reshape(cshape)
                                  - factor * xhat * sdyx.reshape(cshape))
    else:
        dx = dy * wc * invstd_k
    out = dict(y=y, mean=mean, invstd=invstd, dx=dx, dw=sdyx, db=sdy)
    return out, rmean, rvar


def save_layer_norm(save, rng):
    sets = {}
    for name, (shape, nd) in LN_SETS.items():
        pshape = shape[len(shape) - nd:]
        sets[name] = dict(
            x=rng.standard_normal(shape) * 1.5 + 0.5,
            w=1.0 + 0.5 * rng.standard_normal(pshape),
            b=0.5 * rng.standard_normal(pshape),
            dy=rng.standard_normal(shape), nd=nd)
    saved_sets = set()
    for case, sname, affine, eps, dtypes in LN_CASES:
        s = sets[sname]
        for tag in dtypes:
            dt = DTYPES[tag]
            # the float32 variant starts from the float32-rounded inputs
            inp = {k: s[k].astype(dt) for k in ("x", "w", "b", "dy")}
            if (sname, tag) not in saved_sets:
                for k, v in inp.items():
                    save(f"norm_ln_{sname}_{k}_{tag}", v)
                saved_sets.add((sname, tag))
            f = {k: v.astype(np.float64) for k, v in inp.items()}
            w = f["w"] if "w" in affine else None
            b = f["b"] if "b" in affine else None
            ref = ln_reference(f["x"], w, b, f["dy"], s["nd"], eps)
            for k in ("y", "mean", "rstd", "dx"):
                save(f"norm_ln_{case}_{k}_{tag}", ref[k].astype(dt))
            if w is not None:
                save(f"norm_ln_{case}_dw_{tag}", ref["dw"].astype(dt))
            if b is not None:
                save(f"norm_ln_{case}_db_{tag}", ref["db"].astype(dt))
    # wrong on purpose (for the checker test): a_wb's dx without the
    # xhat * mean(g * xhat) term
    s = sets["a"]
    wrong = ln_reference(s["x"], s["w"], s["b"], s["dy"], 1, 1e-5,
                         drop_xhat_term=True)
    save("norm_wrong_ln_a_dx_f64", wrong["dx"])


def save_batch_norm(save, rng):
    sets = {}
    for name, shape in BN_SETS.items():
        C = shape[1]
        cshape = (1, 1, C) + (1,) * (len(shape) - 2)
        x = (rng.standard_normal((BN_TRAIN_STEPS + 1,) + shape)
             * BN_SCALE.reshape(cshape) + BN_SHIFT.reshape(cshape))
        sets[name] = dict(
            x=x, dy=rng.standard_normal(x.shape),
            w=1.0 + 0.5 * rng.standard_normal(C),
            b=0.5 * rng.standard_normal(C))
    saved_sets = set()
    for case, sname, affine, momentum, corr, eps, dtypes in BN_CASES:
        s = sets[sname]
        for tag in dtypes:
            dt = DTYPES[tag]
            inp = {k: s[k].astype(dt) for k in ("x", "dy", "w", "b")}
            if (sname, tag) not in saved_sets:
                for k, v in inp.items():
                    save(f"norm_bn_{sname}_{k}_{tag}", v)
                saved_sets.add((sname, tag))
            f = {k: v.astype(np.float64) for k, v in inp.items()}
            w = f["w"] if affine else None
            b = f["b"] if affine else None
            C = f["x"].shape[2]
            rmean, rvar = np.zeros(C), np.ones(C)
            outs, rmeans, rvars = [], [], []
            for k in range(BN_TRAIN_STEPS + 1):
                training = k < BN_TRAIN_STEPS
                m = 1.0 / (k + 1) if momentum == "cumulative" else momentum
                out, rmean, rvar = bn_step(f["x"][k], w, b, f["dy"][k], rmean,
                                           rvar, training, m, corr, eps)
                # the buffers are tensors of x's dtype: a float32 model
                # keeps them rounded to float32 between batches
                rmean = rmean.astype(dt).astype(np.float64)
                rvar = rvar.astype(dt).astype(np.float64)
                outs.append(out)
                if training:
                    rmeans.append(rmean)
                    rvars.append(rvar)
            for key in ("y", "mean", "invstd", "dx", "dw", "db"):
                if key in ("dw", "db") and not affine:
                    continue
                save(f"norm_bn_{case}_{key}_{tag}",
                     np.stack([o[key] for o in outs]).astype(dt))
            save(f"norm_bn_{case}_rmean_{tag}", np.stack(rmeans).astype(dt))
            save(f"norm_bn_{case}_rvar_{tag}", np.stack(rvars).astype(dt))
    # wrong on purpose: batch 0 of case nc (correction 0, so invstd is the
    # biased one) with the correction-1 formula's factor n/(n-1) in dx
    s = sets["nc"]
    n = s["x"].shape[1]
    wrong, _, _ = bn_step(s["x"][0], s["w"], s["b"], s["dy"][0], np.zeros(3),
                          np.ones(3), True, 0.1, 0, 1e-5,
                          n_over_n1_factor=n / (n - 1))
    save("norm_wrong_bn_nc_dx_f64", wrong["dx"])


def naive_normalise(x, ax, eps):
    """y = (x - E[x]) / sqrt(E[x^2] - E[x]^2 + eps), all in x's float32,
    as the one-pass formula of a course notebook computes it."""
    mean = x.mean(axis=ax, keepdims=True, dtype=np.float32)
    mean_sq = (x * x).mean(axis=ax, keepdims=True, dtype=np.float32)
    var = mean_sq - mean * mean
    with np.errstate(invalid="ignore"):
        return (x - mean) / np.sqrt(var + np.float32(eps))


def save_stability(save, rng):
    # LayerNorm: rows of mean ~1e4 (one per row) and std 1e-2; float32
    # spacing at 1e4 is 2^-10 ~ 1e-3, so a row holds ~20 distinct values.
    x = (1e4 + rng.uniform(-50, 50, (4, 1))
         + 1e-2 * rng.standard_normal((4, 64))).astype(np.float32)
    dy = rng.standard_normal((4, 64)).astype(np.float32)
    ref = ln_reference(x.astype(np.float64), None, None,
                       dy.astype(np.float64), 1, 1e-5)
    save("norm_stab_ln_x_f32", x)
    save("norm_stab_ln_dy_f32", dy)
    save("norm_stab_ln_y_f64", ref["y"])
    save("norm_stab_ln_dx_f64", ref["dx"])
    save("norm_stab_ln_naive_f32", naive_normalise(x, (1,), 1e-5))

    # BatchNorm: (8, 3, 4), channel c around 1e4 * (c + 1), std 1e-2.
    shift = 1e4 * np.array([1.0, 2.0, 3.0]).reshape(1, 3, 1)
    x = (shift + 1e-2 * rng.standard_normal((8, 3, 4))).astype(np.float32)
    dy = rng.standard_normal((8, 3, 4)).astype(np.float32)
    out, rmean, rvar = bn_step(x.astype(np.float64), None, None,
                               dy.astype(np.float64), np.zeros(3), np.ones(3),
                               True, 0.1, 0, 1e-5)
    save("norm_stab_bn_x_f32", x)
    save("norm_stab_bn_dy_f32", dy)
    save("norm_stab_bn_y_f64", out["y"])
    save("norm_stab_bn_dx_f64", out["dx"])
    save("norm_stab_bn_rmean_f64", rmean)
    save("norm_stab_bn_rvar_f64", rvar)
    save("norm_stab_bn_naive_f32", naive_normalise(x, (0, 2), 1e-5))


def save_zero_variance(save, rng):
    # LayerNorm: row 1 is constant, so xhat = 0 there: y = b, dw gets
    # nothing from it, and dx = rstd * (g - mean(g)) with rstd = eps^-1/2.
    x = rng.standard_normal((3, 5))
    x[1] = 0.7
    w, b = 1.0 + 0.5 * rng.standard_normal(5), 0.5 * rng.standard_normal(5)
    dy = rng.standard_normal((3, 5))
    ref = ln_reference(x, w, b, dy, 1, 1e-5)
    for k, v in dict(x=x, w=w, b=b, dy=dy, y=ref["y"], dx=ref["dx"],
                     dw=ref["dw"], db=ref["db"]).items():
        save(f"norm_zv_ln_{k}", v)
    # BatchNorm: channel 2 is constant.
    x = rng.standard_normal((6, 3))
    x[:, 2] = -1.25
    w, b = 1.0 + 0.5 * rng.standard_normal(3), 0.5 * rng.standard_normal(3)
    dy = rng.standard_normal((6, 3))
    out, rmean, rvar = bn_step(x, w, b, dy, np.zeros(3), np.ones(3), True,
                               0.1, 0, 1e-5)
    for k, v in dict(x=x, w=w, b=b, dy=dy, y=out["y"], dx=out["dx"],
                     dw=out["dw"], db=out["db"], rmean=rmean,
                     rvar=rvar).items():
        save(f"norm_zv_bn_{k}", v)


def generate(save):
    rng = np.random.default_rng(20240907)
    save_layer_norm(save, rng)
    save_batch_norm(save, rng)
    save_stability(save, rng)
    save_zero_variance(save, rng)
