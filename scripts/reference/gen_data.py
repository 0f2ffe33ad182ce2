"""NumPy references for the toy datasets and the accuracy of nn/data.c
(tests/nn/test_data.c).

The datasets without noise: the geometry alone, written independently of
the C code from the formulas in nn/data.c's header (the noise itself comes
from the library's PyTorch-compatible generator, which NumPy does not
have; the C test checks it against tg_randn_gen). Every point is computed
in float64 with np.linspace and rounded once to float32. Rows go class by
class, n points per class, labels 0, 0, ..., 1, 1, ...

  spirals (class k of K): r = linspace(0, 1, n),
      theta = 2 pi k / K + 3 pi r, x = (r cos theta, r sin theta)
  moons: s = linspace(0, pi, n); outer (class 0) (cos s, sin s), inner
      (class 1) (1 - cos s, 1 - sin s - 0.5), as scikit-learn's
      make_moons(2 n, shuffle=False, noise=0)
  blobs (class k of K): the centre 2 (cos(2 pi k / K), sin(2 pi k / K))

The accuracy: random logits (some rows with ties, some with NaN) and
labels, and the share of rows where np.argmax (the first maximum on ties;
a NaN counts as the maximum, the first NaN wins) equals the label.

Names written:
  data_spirals_x (21, 2) float32, data_spirals_y (21,) int64: n 7, K 3
  data_spirals4_x (20, 2) float32, data_spirals4_y (20,) int64: n 5, K 4
  data_moons_x (12, 2) float32, data_moons_y (12,) int64: n 6
  data_blobs_x (10, 2) float32, data_blobs_y (10,) int64: n 2, K 5
  data_acc_logits (40, 5) float32, data_acc_labels (40,) int64,
  data_acc_value () float64
"""
import numpy as np


def spirals(n, k_classes):
    r = np.linspace(0.0, 1.0, n)
    xs = []
    for k in range(k_classes):
        theta = 2 * np.pi * k / k_classes + 3 * np.pi * r
        xs.append(np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1))
    y = np.repeat(np.arange(k_classes, dtype=np.int64), n)
    return np.concatenate(xs).astype(np.float32), y


def moons(n):
    s = np.linspace(0.0, np.pi, n)
    outer = np.stack([np.cos(s), np.sin(s)], axis=1)
    inner = np.stack([1 - np.cos(s), 1 - np.sin(s) - 0.5], axis=1)
    y = np.repeat(np.arange(2, dtype=np.int64), n)
    return np.concatenate([outer, inner]).astype(np.float32), y


def blobs(n, k_classes):
    a = 2 * np.pi * np.arange(k_classes) / k_classes
    centres = 2 * np.stack([np.cos(a), np.sin(a)], axis=1)
    y = np.repeat(np.arange(k_classes, dtype=np.int64), n)
    return np.repeat(centres, n, axis=0).astype(np.float32), y


def generate(save):
    rng = np.random.default_rng(20240611)
    for name, (x, y) in [("spirals", spirals(7, 3)),
                         ("spirals4", spirals(5, 4)),
                         ("moons", moons(6)),
                         ("blobs", blobs(2, 5))]:
        save(f"data_{name}_x", x)
        save(f"data_{name}_y", y)

    # Scores rounded to quarters so that ties happen; a few NaN.
    n, c = 40, 5
    logits = np.round(rng.normal(size=(n, c)) * 2) / 4
    logits[3, :] = 0.5                       # a row of equal scores
    logits[7, 1] = logits[7, 3] = 9.0        # a tie at the top
    logits[11, 2] = np.nan                   # NaN wins over 9 and 0.5
    logits[11, 4] = 9.0
    logits[17, 0] = np.nan                   # NaN first in its row
    logits[17, 3] = np.nan
    logits = logits.astype(np.float32)
    labels = rng.integers(0, c, size=n).astype(np.int64)
    # about half right, so a wrong argmax rule changes the count
    pred = np.argmax(logits, axis=1)
    labels[::2] = pred[::2]
    labels[3], labels[7], labels[11], labels[17] = 0, 1, 2, 0
    save("data_acc_logits", logits)
    save("data_acc_labels", labels)
    save("data_acc_value", np.array(np.mean(np.argmax(logits, axis=1) == labels)))
