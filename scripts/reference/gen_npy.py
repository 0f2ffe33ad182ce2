"""Files written by NumPy itself, for the .npy reader and writer
(tests/tensor/test_npy.c).

The C tests check that each file loads with the values below, and that
tg_save_npy writes the very same bytes for the same array. Values that the
tests know are exact in binary (quarters, halves, small integers); the
random ones test the byte-for-byte round trip on arbitrary bit patterns.

Most arrays go through save(), which is numpy.save (format 1.0). Format
2.0 and 3.0 headers and the arrays that tapegrad must reject (Fortran order,
big-endian, other dtypes) go through save.file, NumPy's own format writer.
"""
import numpy as np


def generate(save):
    rng = np.random.default_rng(6464)

    # Known values: x[i] = (i - 2.5) / 4 over (2, 3); y[i] = i / 2 - 6 over
    # (2, 3, 4); z = 0..15 over eight dims; w = 0..99 as a column.
    x = ((np.arange(6) - 2.5) / 4).reshape(2, 3)
    save("npy_f32_2x3", x.astype(np.float32))
    save("npy_f64_2x3x4", (np.arange(24) / 2 - 6).reshape(2, 3, 4))
    save("npy_i64_5", np.array([np.iinfo(np.int64).min, -1, 0, 1,
                                np.iinfo(np.int64).max], dtype=np.int64))
    save("npy_i64_8d", np.arange(16, dtype=np.int64).reshape(1, 2, 1, 2, 1, 2, 1, 2))
    save("npy_f32_100x1", np.arange(100, dtype=np.float32).reshape(100, 1))
    save("npy_f32_0x3", np.zeros((0, 3), dtype=np.float32))
    save("npy_f64_0", np.zeros((0,), dtype=np.float64))
    save("npy_f64_scalar", np.array(-2.5))

    # Random bits; a transposed copy and every other column of the last,
    # which tapegrad writes from non-contiguous views.
    save("npy_f64_rand_3x4", rng.standard_normal((3, 4)))
    r = rng.standard_normal((3, 4)).astype(np.float32)
    save("npy_f32_rand_3x4", r)
    save("npy_f32_rand_3x4_t", np.ascontiguousarray(r.T))
    save("npy_f32_rand_3x4_cols", np.ascontiguousarray(r[:, ::2]))

    # Newer header versions, with the same known values as npy_f32_2x3 and
    # npy_i64_5.
    save.file("npy_f32_2x3_v2", x.astype(np.float32), version=(2, 0))
    save.file("npy_i64_5_v3", np.array([np.iinfo(np.int64).min, -1, 0, 1,
                                     np.iinfo(np.int64).max], dtype=np.int64),
           version=(3, 0))

    # What tapegrad rejects, as NumPy writes it.
    save.file("npy_reject_fortran", np.asfortranarray(r))
    save.file("npy_reject_big_endian", r.astype(">f4"))
    save.file("npy_reject_i4", np.arange(3, dtype=np.int32))
    save.file("npy_reject_b1", np.array([True, False]))
    save.file("npy_reject_f2", np.ones(2, dtype=np.float16))
    save.file("npy_reject_u1", np.arange(4, dtype=np.uint8))
