"""Reference arrays for the view and copy ops (tests/autograd/test_view.c).

Each case is a chain of views written with NumPy indexing; the C test runs
the same chain with tg_permute / tg_slice / tg_expand / ... and compares the
final tensor (made contiguous) with the array saved here. Inputs that are
not a plain arange are saved too (view_*_x) so that both sides start from
the same numbers.
"""
import numpy as np


def generate(save):
    rng = np.random.default_rng(20240611)

    # permute, step slice, negative-start slice, then a reshape that cannot
    # be a view (the C side checks that it copies).
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = np.transpose(x, (2, 0, 1))  # (4, 2, 3)
    y = y[1::2]                     # (2, 2, 3)
    y = y[:, :, -2:]                # (2, 2, 2)
    save("view_permute_slice_reshape", y.reshape(4, 2))

    # expand a random (3, 1, 4) to (2, 3, 5, 4), transpose, select the last
    # index of the last dim, narrow dim 1.
    x = rng.standard_normal((3, 1, 4)).astype(np.float32)
    save("view_expand_x", x)
    y = np.broadcast_to(x, (2, 3, 5, 4))
    y = np.swapaxes(y, 1, 2)        # (2, 5, 3, 4)
    y = y[:, :, :, -1]              # (2, 5, 3)
    y = y[:, 1:4]                   # narrow(1, 1, 3): (2, 3, 3)
    save("view_expand_transpose_select", y)

    # Python slice clamping on an int64 arange(10).
    x = np.arange(10, dtype=np.int64)
    save("view_slice_clamp_wide", x[-100:100:3])
    save("view_slice_clamp_negative", x[2:-2:4])
    save("view_slice_clamp_tail", x[-3:])
    save("view_slice_clamp_empty", x[7:2])

    # Rows 1..4 of a (6, 10) float64 arange: still one block of memory, so
    # reshaping to (5, 8) is a view; columns 2..6 are not, so a reshape
    # of them copies.
    x = np.arange(60, dtype=np.float64).reshape(6, 10)
    save("view_rows_reshape", x[1:5].reshape(5, 8))
    save("view_cols_reshape", x[:, 2:7].reshape(3, 10))

    # squeeze all, unsqueeze at the end, expand with -1s, permute, reshape.
    x = np.arange(6, dtype=np.float64).reshape(1, 2, 1, 3)
    y = x.squeeze()                          # (2, 3)
    y = y[:, :, None]                        # (2, 3, 1)
    y = np.broadcast_to(y, (2, 3, 4))
    y = np.transpose(y, (2, 0, 1))           # (4, 2, 3)
    save("view_squeeze_expand_permute", y.reshape(4, 6))

    # A random float64 (3, 4, 5) through a strided 3-d slice, then a
    # transpose of the last two dims and a flatten.
    x = rng.standard_normal((3, 4, 5))
    save("view_strided_x", x)
    y = x[::2, 1::2, ::3]                    # (2, 2, 2)
    y = np.swapaxes(y, -1, -2)
    save("view_strided_flat", y.reshape(-1))

    # dtype conversions: float -> int64 truncates toward zero; int64 ->
    # float32 rounds to nearest even (2^24 + 1 is not a float32).
    f = np.array([-2.7, -2.5, -0.5, -0.0, 0.5, 1.0, 2.5, 2.7, 1e10, -1e10])
    save("view_to_int64_x", f)
    save("view_to_int64", f.astype(np.int64))
    save("view_to_int64_x_f32", f.astype(np.float32))
    save("view_to_int64_f32", f.astype(np.float32).astype(np.int64))
    i = np.array([0, -1, 2**24 + 1, 2**24 + 3, -(2**31) - 1, 2**53 + 1],
                 dtype=np.int64)
    save("view_int64_x", i)
    save("view_int64_to_f32", i.astype(np.float32))
    save("view_int64_to_f64", i.astype(np.float64))
