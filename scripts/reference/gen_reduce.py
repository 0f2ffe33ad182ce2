"""NumPy references for reductions and softmax (tests/autograd/test_reduce.c).

Float32 results are computed in float64 from the float32 inputs and rounded
to float32 once, so they are the correctly rounded answers the C code (which
reduces in double) should reproduce within one float32 ulp.

Names written:
  reduce_x4_<dtype>                      the (2, 3, 4, 5) input
  reduce_<op>_<dims>_k<keepdim>_<dtype>  op in sum, mean, var0..2, std0..2,
                                         amax, amin (var1 = correction 1);
                                         dims like d1, d0_2_3, dm1_0, all;
                                         float64: sum, mean, var1, std1, k0
  reduce_shift_x, reduce_shift_var<c>, reduce_shift_std<c>
                                         rows with mean 1e4 and std 1e-2
  reduce_xi, reduce_xi_sum_d<d>, reduce_xi_argmax_d<d>, ...  int64 input
  softmax_x_<dtype>, softmax_d<d>_<dtype>, softmax_log_d<d>_<dtype>
                                         large values, along each dim
"""
import warnings

import numpy as np

# Dim sets of the 4-d input: each single dim, negative dims, pairs, a
# triple and all. The C test lists the same sets in the same order.
DIM_SETS = [(0,), (1,), (2,), (3,), (-1,), (-3,), (0, 1), (1, 3), (-1, 0),
            (0, 2, 3), None]

F32_OPS = ["sum", "mean", "var0", "var1", "var2", "std0", "std1", "std2",
           "amax", "amin"]
F64_OPS = ["sum", "mean", "var1", "std1"]


def dims_tag(dims):
    if dims is None:
        return "all"
    return "d" + "_".join(f"m{-d}" if d < 0 else str(d) for d in dims)


def reductions(x64):
    """op name -> function(dims, keepdim), computed in float64."""
    ops = {
        "sum": lambda d, k: np.sum(x64, axis=d, keepdims=k),
        "mean": lambda d, k: np.mean(x64, axis=d, keepdims=k),
        "amax": lambda d, k: np.amax(x64, axis=d, keepdims=k),
        "amin": lambda d, k: np.amin(x64, axis=d, keepdims=k),
    }
    for c in (0, 1, 2):
        # ddof = correction; N - ddof <= 0 divides by 0 (inf or NaN), as
        # PyTorch does.
        ops[f"var{c}"] = lambda d, k, c=c: np.var(x64, axis=d, ddof=c,
                                                   keepdims=k)
        ops[f"std{c}"] = lambda d, k, c=c: np.std(x64, axis=d, ddof=c,
                                                   keepdims=k)
    return ops


def save_reductions(save, x, dtype_tag, names, keepdims):
    save(f"reduce_x4_{dtype_tag}", x)
    ops = reductions(x.astype(np.float64))
    for name in names:
        f = ops[name]
        for dims in DIM_SETS:
            for keep in keepdims:
                # N - correction <= 0 is meant: silence NumPy about it.
                with np.errstate(divide="ignore", invalid="ignore"), \
                        warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    r = f(dims, keep)
                save(f"reduce_{name}_{dims_tag(dims)}_k{int(keep)}_"
                     f"{dtype_tag}", np.asarray(r).astype(x.dtype))


def softmax64(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax64(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def generate(save):
    rng = np.random.default_rng(20240611)

    # Reductions over a 4-d tensor: every op and keepdim in float32; in
    # float64 the summing ops without keepdim (the same code paths).
    x4 = rng.standard_normal((2, 3, 4, 5))
    save_reductions(save, x4.astype(np.float32), "f32", F32_OPS,
                    (False, True))
    save_reductions(save, x4, "f64", F64_OPS, (False,))

    # Rows with mean 1e4 and std 1e-2: E[x^2] - E[x]^2 cancels here. The
    # answers are float64 computations on the float32 values.
    shift = (1e4 + 1e-2 * rng.standard_normal((4, 250))).astype(np.float32)
    save("reduce_shift_x", shift)
    s64 = shift.astype(np.float64)
    for c in (0, 1):
        save(f"reduce_shift_var{c}",
             np.var(s64, axis=1, ddof=c).astype(np.float32))
        save(f"reduce_shift_std{c}",
             np.std(s64, axis=1, ddof=c).astype(np.float32))

    # int64: sums must stay exact; argmax/argmin return the first index of
    # the extreme, and the small range makes ties likely.
    xi = rng.integers(-3, 4, size=(4, 6)).astype(np.int64)
    save("reduce_xi", xi)
    for d in (0, 1):
        save(f"reduce_xi_sum_d{d}", np.sum(xi, axis=d))
        save(f"reduce_xi_amax_d{d}", np.amax(xi, axis=d))
        save(f"reduce_xi_amin_d{d}", np.amin(xi, axis=d))
        save(f"reduce_xi_argmax_d{d}", np.argmax(xi, axis=d).astype(np.int64))
        save(f"reduce_xi_argmin_d{d}", np.argmin(xi, axis=d).astype(np.int64))

    # Softmax on large values: slice 1 is shifted by +1000 and slice 2 by
    # -1000, and single entries are set to +-1000, so exp without the max
    # subtracted overflows or underflows along every dim.
    xs = 3.0 * rng.standard_normal((3, 4, 5))
    xs[1] += 1000.0
    xs[2] -= 1000.0
    xs[0, 1, 2] = 1000.0
    xs[0, 3, 0] = -1000.0
    for dtype, tag in ((np.float32, "f32"), (np.float64, "f64")):
        x = xs.astype(dtype)
        save(f"softmax_x_{tag}", x)
        x64 = x.astype(np.float64)
        for d in (0, 1, 2):
            save(f"softmax_d{d}_{tag}", softmax64(x64, d).astype(dtype))
            save(f"softmax_log_d{d}_{tag}",
                 log_softmax64(x64, d).astype(dtype))
