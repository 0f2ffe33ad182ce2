"""NumPy references for exercise 01, the broadcasting rule
(tests/exercises/grade_ex01_broadcast_shape.c).

Each case is a pair of shapes a, b and what np.broadcast_shapes(a, b)
makes of them: a shape, or a ValueError. A case is one int64 row of 27
numbers, every shape padded with -1 to TG_MAX_DIMS = 8 sizes:

  [na, a[0..7], nb, b[0..7], nout, out[0..7]]

where nout is -1 (and out all -1) when the shapes cannot be broadcast.

Names written (int64, (cases, 27)), one per group of cases, so that the
grader can say which kind of case a student's function gets wrong:
  ex01_same_rank        both shapes have the same number of dims
  ex01_different_ranks  missing leading dims, up to 8 dims
  ex01_scalars          0-d shapes (na or nb is 0)
  ex01_size_zero        dims of size 0: 0 with 1 gives 0, 0 with 2 fails
  ex01_incompatible     pairs that cannot be broadcast
  ex01_random           random pairs of 0..8 dims, most compatible
"""
import numpy as np

MAX_DIMS = 8

SAME_RANK = [
    ((2, 3), (2, 3)),
    ((2, 3), (1, 3)),
    ((2, 3), (2, 1)),
    ((1, 3), (4, 1)),
    ((1,), (7,)),
    ((1, 1), (1, 1)),
    ((5, 1, 4), (1, 3, 1)),
    ((3, 1, 1, 2), (1, 4, 5, 1)),
]

DIFFERENT_RANKS = [
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((4, 1), (3,)),
    ((5, 1, 4), (3, 1)),
    ((8, 1, 6, 1), (7, 1, 5)),  # the example in NumPy's documentation
    ((256, 256, 3), (3,)),
    ((15, 3, 5), (3, 1)),
    ((1,), (2, 3, 4)),
    ((1, 1, 1, 1, 1, 1, 1, 1), (2,)),
    ((2, 2, 2, 2, 2, 2, 2, 2), (2, 2)),
    ((2, 1, 3, 1, 2, 1, 3, 1), (5, 1, 4)),
    ((6,), (1, 2, 1, 2, 1, 2, 1, 1)),
]

SCALARS = [
    ((), ()),
    ((), (3,)),
    ((4, 2), ()),
    ((), (1, 1, 1)),
    ((), (0,)),
    ((2, 2, 2, 2, 2, 2, 2, 2), ()),
]

SIZE_ZERO = [
    ((0,), (1,)),
    ((1,), (0,)),
    ((0,), (0,)),
    ((0, 3), (3,)),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
    ((1, 0), (4, 1)),
    ((0, 1), (1, 0)),
    ((3, 0, 2), (0, 1)),
    ((0,), (2,)),
    ((2,), (0,)),
    ((0, 3), (2, 3)),
]

# Several of these would pass if the shapes were lined up on the left.
INCOMPATIBLE = [
    ((2, 3), (3, 2)),
    ((3,), (4,)),
    ((4, 3), (4,)),
    ((2, 3, 4), (2, 3)),
    ((2, 3), (2, 3, 1)),
    ((5, 2), (5,)),
    ((8, 4, 3), (2, 1)),
    ((2, 2, 2, 2, 2, 2, 2, 2), (3,)),
    ((1, 2, 3), (2, 1, 1, 1, 4)),
    ((3,), (3, 1, 2)),
]


def random_pairs(rng, count):
    """Pairs built from a common result shape (so most broadcast), with a
    size sometimes changed so that some do not."""
    pairs = []
    for _ in range(count):
        na, nb = (int(k) for k in rng.integers(0, MAX_DIMS + 1, size=2))
        full = rng.choice([0, 1, 2, 3], size=max(na, nb), p=[0.1, 0.2, 0.4, 0.3])
        shapes = []
        for n in (na, nb):
            s = full[len(full) - n:].copy()
            s[rng.random(n) < 0.3] = 1
            shapes.append(s)
        if rng.random() < 0.4 and na > 0:
            k = rng.integers(0, na)  # a size that is neither full's nor 1
            shapes[0][k] = full[len(full) - na + k] + rng.choice([2, 3])
        pairs.append(tuple(tuple(int(v) for v in s) for s in shapes))
    return pairs


def row(a, b):
    try:
        out = np.broadcast_shapes(a, b)
        nout = len(out)
    except ValueError:
        out, nout = (), -1

    def padded(s):
        return list(s) + [-1] * (MAX_DIMS - len(s))

    return [len(a)] + padded(a) + [len(b)] + padded(b) + [nout] + padded(out)


def table(pairs):
    return np.array([row(a, b) for a, b in pairs], dtype=np.int64)


def generate(save):
    rng = np.random.default_rng(101)
    groups = {
        "same_rank": SAME_RANK,
        "different_ranks": DIFFERENT_RANKS,
        "scalars": SCALARS,
        "size_zero": SIZE_ZERO,
        "incompatible": INCOMPATIBLE,
        "random": random_pairs(rng, 40),
    }
    for name, pairs in groups.items():
        t = table(pairs)
        if name == "incompatible":
            assert (t[:, 18] == -1).all(), name
        save(f"ex01_{name}", t)
