"""NumPy references for the normalisation layers as modules
(tests/nn/test_norm_modules.c): LayerNorm, BatchNorm1d and BatchNorm2d run
on a sequence of batches, the first `train` of them in training mode and
the rest in eval mode, as torch.nn does it (SEMANTICS.md sections 1-2).

For every batch the layer's output, the gradient of its input and of its
weight and bias for an upstream gradient g, and (BatchNorm with running
statistics) the buffers after the batch are saved. The gradients of each
batch are those of that batch alone (the C test zeroes them in between).

The backward here is NOT the closed form the C code uses: it is the chain
rule applied step by step to the forward written in small steps, as
makemore part 4 does it (bnmeani, bndiff, bndiff2, bnvar, bnvar_inv,
bnraw), so the two derivations check each other.

Inputs (x, g, weight, bias) are float32; every result is computed in
float64 from them and rounded once to float32, the running statistics
included (the exact recurrence, rounded at each saved step only).

BatchNorm, per batch with channel dim 1 and n values per channel:
  training: mean, var = sum((x - mean)^2) / (n - correction)
            y = (x - mean) / sqrt(var + eps) * w + b
            running_mean = (1 - m) * running_mean + m * mean
            running_var  = (1 - m) * running_var + m * sum((x-mean)^2)/(n-1)
            num_batches_tracked += 1; cumulative (momentum None): m = 1 / k
            at the k-th batch
  eval:     y = (x - running_mean) / sqrt(running_var + eps) * w + b, no
            update; without running statistics the training formula again
Buffers start at running_mean 0, running_var 1, num_batches_tracked 0.

Names written, for each case <c> of CASES:
  nn_norm_<c>_x        (S, *shape) float32, the S batches
  nn_norm_<c>_g        (S, *shape) float32, the upstream gradients
  nn_norm_<c>_affine   (2, *P) float32: weight, then bias (affine cases)
  nn_norm_<c>_y        (S, *shape) outputs
  nn_norm_<c>_dx       (S, *shape) input gradients
  nn_norm_<c>_daffine  (S, 2, *P) weight and bias gradients (affine cases)
  nn_norm_<c>_running  (S, 2, C) running_mean, running_var after each batch
  nn_norm_<c>_nbt      (S,) int64 num_batches_tracked after each batch
P is (C,) for BatchNorm and normalized_shape for LayerNorm. The first eval
batch is the first training batch again, so the same data is seen in both
modes.
"""
import numpy as np

# name, layer, shape of one batch, normalized_shape (LayerNorm), settings,
# training batches, eval batches. The C test lists the same cases.
CASES = [
    ("bn1d_nc_m01", "bn1d", (8, 3), None, {}, 3, 2),
    ("bn1d_ncl_m01", "bn1d", (4, 3, 5), None, {}, 3, 2),
    ("bn2d_m01", "bn2d", (3, 2, 3, 4), None, {}, 3, 2),
    # eps of the order of the variance (channel std 0.05..0.15), so a
    # forgotten or misplaced eps shows
    ("bn1d_ncl_m03", "bn1d", (4, 3, 5), None,
     {"momentum": 0.3, "eps": 1e-3, "scale": 0.1}, 3, 2),
    ("bn1d_nc_cum", "bn1d", (8, 3), None, {"cumulative": True}, 4, 2),
    ("bn2d_cum", "bn2d", (3, 2, 3, 4), None, {"cumulative": True}, 3, 2),
    ("bn1d_nc_noaffine", "bn1d", (8, 3), None, {"affine": False}, 3, 2),
    ("bn2d_notrack", "bn2d", (3, 2, 3, 4), None, {"track": False}, 2, 2),
    ("bn1d_nc_corr1", "bn1d", (8, 3), None, {"correction": 1}, 3, 2),
    ("ln_last", "ln", (4, 3, 5), (5,), {}, 2, 2),
    ("ln_2d", "ln", (2, 3, 5), (3, 5), {"eps": 1e-3, "scale": 0.1}, 2, 2),
    ("ln_noaffine", "ln", (3, 4), (4,), {"affine": False}, 1, 1),
]


def batch_norm_train(x, w, b, gy, eps, correction):
    """y, dx, dw, db, mean, sum of squares, by the step-by-step chain rule
    (makemore part 4), all float64. x is (N, C, ...)."""
    ax = tuple(d for d in range(x.ndim) if d != 1)
    n = x.size // x.shape[1]
    ch = (1, -1) + (1,) * (x.ndim - 2)  # (C,) broadcast along dim 1
    wv = w.reshape(ch)
    # forward
    bnmeani = x.sum(ax, keepdims=True) / n
    bndiff = x - bnmeani
    bndiff2 = bndiff ** 2
    bnvar = bndiff2.sum(ax, keepdims=True) / (n - correction)
    bnvar_inv = (bnvar + eps) ** -0.5
    bnraw = bndiff * bnvar_inv
    y = wv * bnraw + b.reshape(ch)
    # backward, one step at a time, last step first
    dw = (gy * bnraw).sum(ax)
    db = gy.sum(ax)
    dbnraw = gy * wv
    dbndiff = dbnraw * bnvar_inv
    dbnvar_inv = (dbnraw * bndiff).sum(ax, keepdims=True)
    dbnvar = -0.5 * (bnvar + eps) ** -1.5 * dbnvar_inv
    dbndiff2 = np.ones_like(bndiff2) * dbnvar / (n - correction)
    dbndiff = dbndiff + 2 * bndiff * dbndiff2
    dbnmeani = -dbndiff.sum(ax, keepdims=True)
    dx = dbndiff + np.ones_like(x) * dbnmeani / n
    m2 = bndiff2.sum(ax)
    return y, dx, dw, db, bnmeani.reshape(-1), m2, n


def batch_norm_eval(x, w, b, gy, rm, rv, eps):
    """y, dx, dw, db with fixed statistics: y is affine in x."""
    ax = tuple(d for d in range(x.ndim) if d != 1)
    ch = (1, -1) + (1,) * (x.ndim - 2)
    invstd = ((rv + eps) ** -0.5).reshape(ch)
    xhat = (x - rm.reshape(ch)) * invstd
    y = xhat * w.reshape(ch) + b.reshape(ch)
    dx = gy * w.reshape(ch) * invstd
    return y, dx, (gy * xhat).sum(ax), gy.sum(ax)


def layer_norm(x, w, b, gy, nd, eps):
    """y, dx, dw, db over the last nd dims, step by step as above."""
    ax = tuple(range(x.ndim - nd, x.ndim))
    lead = tuple(range(x.ndim - nd))
    n = int(np.prod(x.shape[x.ndim - nd:]))
    mean = x.sum(ax, keepdims=True) / n
    diff = x - mean
    diff2 = diff ** 2
    var = diff2.sum(ax, keepdims=True) / n
    rstd = (var + eps) ** -0.5
    raw = diff * rstd
    y = raw * w + b
    dw = (gy * raw).sum(lead)
    db = gy.sum(lead)
    draw = gy * w
    ddiff = draw * rstd
    drstd = (draw * diff).sum(ax, keepdims=True)
    dvar = -0.5 * (var + eps) ** -1.5 * drstd
    ddiff = ddiff + 2 * diff * (np.ones_like(diff2) * dvar / n)
    dx = ddiff + np.ones_like(x) * (-ddiff.sum(ax, keepdims=True)) / n
    return y, dx, dw, db


def batches(rng, layer, shape, train, evals, scale):
    """train + evals float32 batches; the first eval batch repeats the first
    training one. Channels (dim 1 for BatchNorm) get their own offset and
    spread, and each batch drifts a little, so the running statistics move.
    """
    c = shape[1] if layer != "ln" else 1
    ch = (1, c) + (1,) * (len(shape) - 2)
    offset = rng.uniform(-3, 3, c).reshape(ch)
    spread = scale * rng.uniform(0.5, 1.5, c).reshape(ch)
    xs = [offset + 0.3 * k + spread * rng.standard_normal(shape)
          for k in range(train)]
    xs.append(xs[0])
    for k in range(1, evals):
        xs.append(offset + spread * rng.standard_normal(shape))
    return np.stack(xs).astype(np.float32)


def save_case(save, rng, case):
    name, layer, shape, norm_shape, s, train, evals = case
    eps = s.get("eps", 1e-5)
    affine = s.get("affine", True)
    steps = train + evals
    x = batches(rng, layer, shape, train, evals, s.get("scale", 1.0))
    g = rng.standard_normal(x.shape).astype(np.float32)
    pshape = norm_shape if layer == "ln" else (shape[1],)
    if affine:
        wb = np.stack([rng.uniform(0.5, 2.0, pshape),
                       rng.uniform(-1.0, 1.0, pshape)]).astype(np.float32)
    else:
        wb = np.stack([np.ones(pshape), np.zeros(pshape)])
    w, b = wb.astype(np.float64)
    y = np.empty(x.shape)
    dx = np.empty(x.shape)
    daffine = np.empty((steps, 2) + tuple(pshape))
    c = shape[1]
    running = np.empty((steps, 2, c))
    nbt = np.zeros(steps, dtype=np.int64)
    rm, rv, k = np.zeros(c), np.ones(c), 0
    for t in range(steps):
        xt, gt = x[t].astype(np.float64), g[t].astype(np.float64)
        if layer == "ln":  # the same in both modes
            y[t], dx[t], daffine[t, 0], daffine[t, 1] = layer_norm(
                xt, w, b, gt, len(norm_shape), eps)
            continue
        track = s.get("track", True)
        if t < train or not track:
            (y[t], dx[t], daffine[t, 0], daffine[t, 1], mean, m2,
             n) = batch_norm_train(xt, w, b, gt, eps, s.get("correction", 0))
            if t < train and track:
                k += 1
                m = 1.0 / k if s.get("cumulative") else s.get("momentum", 0.1)
                rm = (1 - m) * rm + m * mean
                rv = (1 - m) * rv + m * m2 / (n - 1)
        else:
            y[t], dx[t], daffine[t, 0], daffine[t, 1] = batch_norm_eval(
                xt, w, b, gt, rm, rv, eps)
        running[t] = rm, rv
        nbt[t] = k
    f32 = np.float32
    save(f"nn_norm_{name}_x", x)
    save(f"nn_norm_{name}_g", g)
    save(f"nn_norm_{name}_y", y.astype(f32))
    save(f"nn_norm_{name}_dx", dx.astype(f32))
    if affine:
        save(f"nn_norm_{name}_affine", wb)
        save(f"nn_norm_{name}_daffine", daffine.astype(f32))
    if layer != "ln" and s.get("track", True):
        save(f"nn_norm_{name}_running", running.astype(f32))
        save(f"nn_norm_{name}_nbt", nbt)


def generate(save):
    rng = np.random.default_rng(20240917)
    for case in CASES:
        save_case(save, rng, case)
