"""The 8x8 handwritten digits of data/digits.csv.gz read by NumPy, as
references for nn/digits.c (tests/nn/test_digits.c).

The file is read as scikit-learn's load_digits reads it:

    data = np.loadtxt('digits.csv.gz', delimiter=',')
    images = data[:, :-1].reshape(-1, 8, 8)   # pixels 0..16
    target = data[:, -1].astype(int)          # labels 0..9

Names written:
  digits_class_counts (10,) int64: how many images of each digit
  digits_rows (6,) int64: the rows below, by their index in the file
  digits_rows_x (6, 1, 8, 8) float32: those images, pixels as in the file
  digits_rows_y (6,) int64: their labels
  digits_sums (5,) int64: the number of images, then for the pixels
      (row-major) and then for the labels: sum(v) and sum((i + 1) * v[i]),
      a checksum that also sees the order (exact integers)
"""
import pathlib

import numpy as np

DIGITS = pathlib.Path(__file__).resolve().parents[2] / "data" / "digits.csv.gz"
ROWS = [0, 1, 2, 100, 1000, 1796]


def checksum(v):
    """sum(v) and sum((i + 1) * v[i]) over v flattened, in int64 (exact:
    below 2^40 for these sizes)."""
    flat = v.reshape(-1).astype(np.int64)
    weights = np.arange(1, flat.size + 1, dtype=np.int64)
    return [int(flat.sum()), int((weights * flat).sum())]


def generate(save):
    data = np.loadtxt(DIGITS, delimiter=',')
    images = data[:, :-1].reshape(-1, 8, 8)
    target = data[:, -1].astype(np.int64)
    assert (images == np.round(images)).all() and images.max() <= 16
    save("digits_class_counts",
         np.bincount(target, minlength=10).astype(np.int64))
    save("digits_rows", np.array(ROWS, dtype=np.int64))
    save("digits_rows_x",
         images[ROWS].reshape(len(ROWS), 1, 8, 8).astype(np.float32))
    save("digits_rows_y", target[ROWS])
    save("digits_sums",
         np.array([len(target)] + checksum(images) + checksum(target),
                  dtype=np.int64))
