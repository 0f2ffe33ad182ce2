"""NumPy references for exercise 02, a gradient summed back to a broadcast
shape (tests/exercises/grade_ex02_sum_to_shape.c).

An input x of shape `shape` broadcast to grad's shape is read many times:
element idx of the broadcast tensor reads x[src(idx)], where src drops the
leading dims broadcasting added and sets to 0 every index of a dim where x
has size 1. So dL/dx[src] is the sum of grad[idx] over every idx that reads
it. The reference is computed that way, element by element (the adjoint of
broadcast_to), not with the sum over dims the student is asked to find;
the generator checks that the two agree.

Names written, for each case below: ex02_<case>_grad (the gradient of the
broadcast result) and ex02_<case>_sum (the input's gradient, whose shape is
the target shape). float64 unless the case says float32; the sums of
float32 cases are accumulated in float64, then rounded, as tg_sum does.
"""
import numpy as np

# case name, grad's shape, the input's shape, dtype
CASES = [
    ("rows", (4, 3), (3,), np.float64),                # a bias added to each row
    ("rows_keepdim", (4, 3), (1, 3), np.float64),
    ("column", (4, 3), (4, 1), np.float64),
    ("two_dims", (2, 3, 4), (3, 1), np.float64),
    ("middle", (2, 3, 4), (2, 1, 4), np.float64),
    ("grad_has_ones", (2, 1, 4), (1, 1, 4), np.float64),
    ("deep", (2, 1, 3, 2, 1, 2), (3, 1, 1, 2), np.float64),
    ("scalar", (2, 3), (), np.float64),
    ("ones", (2, 3), (1, 1), np.float64),
    ("same", (2, 3), (2, 3), np.float64),
    ("empty_rows", (0, 3), (3,), np.float64),
    ("empty_to_one", (0,), (1,), np.float64),
    ("float32_rows", (5, 4), (4,), np.float32),
    ("float32_column", (5, 4), (5, 1), np.float32),
]


def sum_by_definition(grad, shape):
    """dL/dx for x of `shape` broadcast to grad.shape, one element of grad
    at a time."""
    out = np.zeros(shape, dtype=np.float64)
    lead = grad.ndim - len(shape)
    for idx in np.ndindex(*grad.shape):
        src = tuple(0 if shape[d] == 1 else idx[lead + d]
                    for d in range(len(shape)))
        out[src] += grad[idx]
    return out


def sum_over_dims(grad, shape):
    """The closed form, used only to check the definition above."""
    lead = grad.ndim - len(shape)
    dims = tuple(d for d in range(grad.ndim)
                 if d < lead or (shape[d - lead] == 1 and grad.shape[d] != 1))
    return grad.astype(np.float64).sum(axis=dims, keepdims=True).reshape(shape)


def generate(save):
    rng = np.random.default_rng(202)
    for name, gshape, shape, dtype in CASES:
        assert np.broadcast_shapes(shape, gshape) == gshape, name
        grad = rng.standard_normal(gshape).astype(dtype)
        expected = sum_by_definition(grad, shape)
        assert np.allclose(expected, sum_over_dims(grad, shape),
                           rtol=1e-14, atol=1e-14), name
        save(f"ex02_{name}_grad", grad)
        save(f"ex02_{name}_sum", expected.astype(dtype))
