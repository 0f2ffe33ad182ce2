"""NumPy references for cat, stack, split, chunk and max / min along a dim
with indices (tests/autograd/test_join.c).

Each case saves its inputs, the expected outputs, an upstream gradient g
(random, not ones: a gradient sent to the wrong element then shows) and
the expected input gradients. The C code copies blocks through views;
the references here index element ranges with NumPy slicing and
np.concatenate / np.stack, a different route to the same numbers.
Nothing is computed in floating point (values are only moved, and a
float32 gradient of a float64 output is g rounded once), so every
reference is exact.

Names written:
  join_cat_{x0,x1,x2,out,g,dx0,dx1,dx2}  cat of (2,1,4), (2,3,4), (2,2,4)
                                         float64 on dim 1
  join_cat_mixed_{a,b,out,g,da,db}       cat of float32 (3,2) and float64
                                         (3,4) on dim -1: float64 out, a's
                                         gradient float32
  join_cat_mixed_wrong_da                da with the blocks swapped: a
                                         wrong answer the check must catch
  join_cat_i64_{a,b,out}                 int64 (2,2) and (1,2) on dim 0
  join_stack_{x0,x1,x2,out,g}            three (3,4) float32 on dim 1
  join_split_{x,g0,g1,g2,dx}             split (5,3) by 2 on dim 0
  join_split_sizes_{g0,g1,g2,dx}         the same x split [1, 0, 2] on dim 1
  join_chunk_{x,g0,g1,g2,dx}             chunk (2,6) into 4 on dim -1
  join_max_x                             (3,4,5) float64 of small integers
                                         (many ties) with three NaNs
  join_{max,min}_d{0,1,m1}_{values,indices,g,dx}
                                         along dims 0, 1, -1 (keepdim
                                         false), g of the values' shape
"""
import numpy as np


def first_extreme(x, axis, largest):
    """The index of the first maximum (minimum) along axis, a NaN counting
    as the extreme (the first NaN wins), as torch.max(x, dim) on the CPU.
    Written with comparisons rather than np.argmax."""
    nan = np.isnan(x)
    best = np.nanmax(x, axis=axis, keepdims=True) if largest else \
        np.nanmin(x, axis=axis, keepdims=True)
    hit = np.where(nan.any(axis=axis, keepdims=True), nan, x == best)
    m = x.shape[axis]
    pos = np.arange(m).reshape([m if a == axis % x.ndim else 1
                                for a in range(x.ndim)])
    # the smallest position among the hits
    return np.where(hit, pos, m).min(axis=axis)


def generate(save):
    rng = np.random.default_rng(20261126)

    def normal(*shape):
        return rng.standard_normal(shape)

    # cat on dim 1 (a middle dim); dx_i is g's block of x_i's columns.
    xs = [normal(2, 1, 4), normal(2, 3, 4), normal(2, 2, 4)]
    out = np.concatenate(xs, axis=1)
    g = normal(*out.shape)
    for i, x in enumerate(xs):
        save(f"join_cat_x{i}", x)
    save("join_cat_out", out)
    save("join_cat_g", g)
    save("join_cat_dx0", g[:, 0:1])
    save("join_cat_dx1", g[:, 1:4])
    save("join_cat_dx2", g[:, 4:6])

    # float32 next to float64: the result is float64; the float32 input's
    # gradient is its block of g rounded to float32.
    a = normal(3, 2).astype(np.float32)
    b = normal(3, 4)
    out = np.concatenate([a.astype(np.float64), b], axis=-1)
    g = normal(3, 6)
    save("join_cat_mixed_a", a)
    save("join_cat_mixed_b", b)
    save("join_cat_mixed_out", out)
    save("join_cat_mixed_g", g)
    save("join_cat_mixed_da", g[:, :2].astype(np.float32))
    save("join_cat_mixed_db", g[:, 2:])
    save("join_cat_mixed_wrong_da", g[:, 4:].astype(np.float32))

    a = np.array([[1, -2], [3, 2**40]], dtype=np.int64)
    b = np.array([[-(2**62), 7]], dtype=np.int64)
    save("join_cat_i64_a", a)
    save("join_cat_i64_b", b)
    save("join_cat_i64_out", np.concatenate([a, b], axis=0))

    # stack on dim 1: out[:, i, :] = x_i, dx_i = g[:, i, :].
    xs = [normal(3, 4).astype(np.float32) for _ in range(3)]
    out = np.stack(xs, axis=1)
    for i, x in enumerate(xs):
        save(f"join_stack_x{i}", x)
    save("join_stack_out", out)
    save("join_stack_g", normal(*out.shape).astype(np.float32))

    # split (5, 3) by 2 on dim 0: rows 0:2, 2:4, 4:5. The pieces are
    # slices of x (checked from x on the C side); dx puts each piece's g
    # back at its rows.
    x = normal(5, 3)
    gs = [normal(2, 3), normal(2, 3), normal(1, 3)]
    dx = np.zeros_like(x)
    dx[0:2], dx[2:4], dx[4:5] = gs
    save("join_split_x", x)
    for j, gj in enumerate(gs):
        save(f"join_split_g{j}", gj)
    save("join_split_dx", dx)

    # the same x split [1, 0, 2] on dim 1: columns 0:1, 1:1, 1:3.
    gs = [normal(5, 1), normal(5, 0), normal(5, 2)]
    dx = np.zeros_like(x)
    dx[:, 0:1], dx[:, 1:3] = gs[0], gs[2]
    for j, gj in enumerate(gs):
        save(f"join_split_sizes_g{j}", gj)
    save("join_split_sizes_dx", dx)

    # chunk (2, 6) into 4 on dim -1: ceil(6 / 4) = 2, so three pieces.
    x = normal(2, 6)
    gs = [normal(2, 2) for _ in range(3)]
    save("join_chunk_x", x)
    for j, gj in enumerate(gs):
        save(f"join_chunk_g{j}", gj)
    save("join_chunk_dx", np.concatenate(gs, axis=1))

    # max / min along a dim on small integers (ties everywhere) and NaNs.
    x = rng.integers(-2, 3, size=(3, 4, 5)).astype(np.float64)
    x[0, 1, 2] = np.nan
    x[2, 3, 0] = np.nan
    x[1, 0, 4] = np.nan
    save("join_max_x", x)
    for dim, tag in ((0, "d0"), (1, "d1"), (-1, "dm1")):
        for name, largest in (("max", True), ("min", False)):
            idx = first_extreme(x, dim, largest)
            values = np.take_along_axis(x, np.expand_dims(idx, dim),
                                        axis=dim).squeeze(dim)
            g = normal(*values.shape)
            dx = np.zeros_like(x)
            np.put_along_axis(dx, np.expand_dims(idx, dim),
                              np.expand_dims(g, dim), axis=dim)
            save(f"join_{name}_{tag}_values", values)
            save(f"join_{name}_{tag}_indices", idx.astype(np.int64))
            save(f"join_{name}_{tag}_g", g)
            save(f"join_{name}_{tag}_dx", dx)
