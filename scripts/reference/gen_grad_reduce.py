"""NumPy references for the gradients of the reductions, softmax and matmul
(tests/autograd/test_grad_reduce.c).

Each case saves the input(s), an upstream gradient g of the output's shape
and the expected input gradient(s), computed by the closed forms (written
next to each case, with g_k = g with the reduced dims kept as size 1):
  sum          dx = g_k broadcast to x's shape
  mean         dx = g_k / N
  var          dx = g_k * 2 (x - mean) / max(0, N - correction)
  std          dx = g_k * (x - mean) / ((N - correction) std)
  amax, amin   dx = g_k * (x == m) / count(x == m), ties split evenly
  softmax      dx = y * (g - sum(g * y, dim))
  log_softmax  dx = g - exp(y) * sum(g, dim)
  matmul       da = g @ b^T, db = a^T @ g, 1-D operands promoted and
               broadcast batch dims summed back

Float32 references are these formulas evaluated in float64 on the float32
inputs and rounded once to float32, so they are the correctly rounded
gradients; the C code computes in float32 and is compared with a tolerance.

Names written (dt is f64 or f32):
  grad_reduce_x_<dt>                     the (3, 4, 5) input
  grad_reduce_g_<dims>_k<keep>_<dt>      an upstream gradient per output shape
  grad_reduce_<op>_<dims>_k<keep>_<dt>   dx; op in sum, mean, var0..2,
                                         std0..2, amax, amin; dims d1, d0_2,
                                         dm1, all; f32 only with k0 and d1,
                                         all
  grad_reduce_ties_{x,g,amax_dx,amin_dx} (3, 4) rows with ties, over dim 1
  grad_reduce_std_const_{x,g,dx}         std over dim 1 with a constant row
  grad_reduce_softmax_x_<dt>, grad_reduce_softmax_g_<dt>,
  grad_reduce_softmax_d<d>_<dt>, grad_reduce_log_softmax_d<d>_<dt>
                                         dx along each dim of a (3, 4, 5) x
  grad_reduce_matmul_<case>_{a,b,g,da,db}_<dt>
                                         every shape class of torch.matmul
"""
import numpy as np

DIM_SETS = [(1,), (0, 2), (-1,), None]
F32_DIM_SETS = [(1,), None]
OPS = ["sum", "mean", "var0", "var1", "var2", "std0", "std1", "std2",
       "amax", "amin"]

# (case name, shape of a, shape of b, dtypes)
MATMUL_CASES = [
    ("dot", (3,), (3,), ("f64", "f32")),
    ("mv", (4, 3), (3,), ("f64",)),
    ("vm", (3,), (3, 5), ("f64",)),
    ("mm", (4, 3), (3, 5), ("f64", "f32")),
    ("bmm", (2, 4, 3), (2, 3, 5), ("f64",)),
    ("bm", (2, 4, 3), (3, 5), ("f64",)),
    ("mb", (4, 3), (2, 3, 5), ("f64",)),
    ("bcast", (2, 1, 3, 4), (5, 4, 2), ("f64", "f32")),
    ("bv", (2, 4, 3), (3,), ("f64",)),
    ("vb", (3,), (2, 3, 5), ("f64",)),
]
DTYPES = {"f64": np.float64, "f32": np.float32}


def dims_tag(dims):
    if dims is None:
        return "all"
    return "d" + "_".join(f"m{-d}" if d < 0 else str(d) for d in dims)


def axes(dims, ndim):
    """The reduced dims as non-negative axes."""
    if dims is None:
        return tuple(range(ndim))
    return tuple(d % ndim for d in dims)


def keep(g, ax, keepdim):
    """g with the reduced dims back as size 1 (g_k)."""
    return g if keepdim else np.expand_dims(g, ax)


def reduction_grad(op, x, g, dims, keepdim):
    """dx of one reduction by its closed form, all in float64."""
    ax = axes(dims, x.ndim)
    n = int(np.prod([x.shape[a] for a in ax]))
    gk = keep(g, ax, keepdim)
    dev = x - np.mean(x, axis=ax, keepdims=True)
    if op == "sum":
        return np.broadcast_to(gk, x.shape)
    if op == "mean":
        return np.broadcast_to(gk / n, x.shape)
    if op.startswith("var"):
        c = int(op[3])
        return gk * 2.0 * dev / max(0, n - c)
    if op.startswith("std"):
        c = int(op[3])
        std = np.std(x, axis=ax, ddof=c, keepdims=True)
        return gk * dev / ((n - c) * std)
    extreme = np.amax if op == "amax" else np.amin
    hit = x == extreme(x, axis=ax, keepdims=True)
    return gk * hit / np.sum(hit, axis=ax, keepdims=True)


def out_shape(shape, dims, keepdim):
    ax = axes(dims, len(shape))
    return tuple(1 if d in ax else s for d, s in enumerate(shape)
                 if keepdim or d not in ax)


def save_reductions(save, rng):
    x = rng.standard_normal((3, 4, 5))
    for tag, dt in DTYPES.items():
        xd = x.astype(dt)
        save(f"grad_reduce_x_{tag}", xd)
        dim_sets = DIM_SETS if tag == "f64" else F32_DIM_SETS
        keeps = (False, True) if tag == "f64" else (False,)
        for dims in dim_sets:
            for k in keeps:
                name = f"{dims_tag(dims)}_k{int(k)}_{tag}"
                shape = out_shape(x.shape, dims, k)
                g = np.asarray(rng.standard_normal(shape)).astype(dt)
                save(f"grad_reduce_g_{name}", g)
                for op in OPS:
                    dx = reduction_grad(op, xd.astype(np.float64),
                                        g.astype(np.float64), dims, k)
                    save(f"grad_reduce_{op}_{name}", dx.astype(dt))


def save_special_rows(save, rng):
    # Ties: row 0 has its max twice, row 1 is constant (three-way tie for
    # both max and min), row 2 has its min twice. Exact in binary.
    x = np.array([[1.0, 3.0, 3.0, -2.0],
                  [2.0, 2.0, 2.0, 2.0],
                  [0.5, -1.0, 4.0, -1.0]])
    g = np.array([1.0, 2.0, 3.0])
    save("grad_reduce_ties_x", x)
    save("grad_reduce_ties_g", g)
    for op in ("amax", "amin"):
        save(f"grad_reduce_ties_{op}_dx",
             reduction_grad(op, x, g, (1,), False))

    # std of a constant row is 0: PyTorch 1.13 masks g / (2 std) there, so
    # that row's gradient is 0 (not NaN); the other row follows the formula.
    x = np.array([[1.5, 1.5, 1.5, 1.5], [1.0, 2.0, 4.0, 8.0]])
    g = np.array([0.5, -2.0])
    with np.errstate(invalid="ignore"):  # row 0 is 0 / 0, replaced
        dx = reduction_grad("std1", x, g, (1,), False)
    dx[0] = 0.0
    save("grad_reduce_std_const_x", x)
    save("grad_reduce_std_const_g", g)
    save("grad_reduce_std_const_dx", dx)


def softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def save_softmax(save, rng):
    x = 3.0 * rng.standard_normal((3, 4, 5))
    g = rng.standard_normal((3, 4, 5))
    for tag, dt in DTYPES.items():
        xd, gd = x.astype(dt), g.astype(dt)
        save(f"grad_reduce_softmax_x_{tag}", xd)
        save(f"grad_reduce_softmax_g_{tag}", gd)
        x64, g64 = xd.astype(np.float64), gd.astype(np.float64)
        for d in (0, 1, 2):
            y = softmax(x64, d)
            dx = y * (g64 - np.sum(g64 * y, axis=d, keepdims=True))
            save(f"grad_reduce_softmax_d{d}_{tag}", dx.astype(dt))
            # log_softmax: exp(y_log) is the softmax y.
            dx = g64 - y * np.sum(g64, axis=d, keepdims=True)
            save(f"grad_reduce_log_softmax_d{d}_{tag}", dx.astype(dt))


def sum_to(full, shape):
    """full summed over the dims broadcasting added or stretched."""
    lead = full.ndim - len(shape)
    full = full.sum(axis=tuple(range(lead)))
    stretched = tuple(d for d, s in enumerate(shape)
                      if s == 1 and full.shape[d] != 1)
    return full.sum(axis=stretched, keepdims=True)


def matmul_grads(a, b, g):
    """da, db of out = a @ b (np.matmul's shape rules), in float64."""
    a2 = a[None, :] if a.ndim == 1 else a          # (1, k)
    b2 = b[:, None] if b.ndim == 1 else b          # (k, 1)
    g2 = g
    if b.ndim == 1:
        g2 = g2[..., None]
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -2)
    da = sum_to(product(g2, np.swapaxes(b2, -1, -2)), a2.shape)
    db = sum_to(product(np.swapaxes(a2, -1, -2), g2), b2.shape)
    return da.reshape(a.shape), db.reshape(b.shape)


def product(x, y):
    """x @ y with np.matmul's batch rules, summed by np.sum rather than by
    a BLAS: NumPy's @ calls whichever BLAS the machine has (reference
    BLAS, OpenBLAS), whose summation orders differ in the last bits, and
    the fixtures must not depend on it."""
    return np.sum(x[..., :, :, None] * y[..., None, :, :], axis=-2)


def save_matmul(save, rng):
    for name, sa, sb, tags in MATMUL_CASES:
        a = rng.standard_normal(sa)
        b = rng.standard_normal(sb)
        g = np.asarray(rng.standard_normal(np.matmul(a, b).shape))
        for tag in tags:
            dt = DTYPES[tag]
            ad, bd, gd = a.astype(dt), b.astype(dt), g.astype(dt)
            da, db = matmul_grads(ad.astype(np.float64), bd.astype(np.float64),
                                  gd.astype(np.float64))
            base = f"grad_reduce_matmul_{name}"
            save(f"{base}_a_{tag}", ad)
            save(f"{base}_b_{tag}", bd)
            save(f"{base}_g_{tag}", np.asarray(gd))
            save(f"{base}_da_{tag}", da.astype(dt))
            save(f"{base}_db_{tag}", db.astype(dt))


def generate(save):
    rng = np.random.default_rng(20240801)
    save_reductions(save, rng)
    save_special_rows(save, rng)
    save_softmax(save, rng)
    save_matmul(save, rng)
