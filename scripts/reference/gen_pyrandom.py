"""Python's own random module, as references for nn/pyrandom.c
(tests/nn/test_pyrandom.c).

Every number here is drawn by the interpreter that runs this script
(random.Random, the C Mersenne Twister of CPython's Modules/_randommodule.c
and the Python code of Lib/random.py), not computed by a copy of the
algorithm. The streams used below have been the same since Python 3.2
(seed(int), getrandbits, random, _randbelow through getrandbits, shuffle),
so any Python 3 reproduces these files.

Seeds: 0, 42, 2147483647, 2^32 + 5 (two key words), 2^64 - 1.

Names written (s is the seed in decimal):
  pyrandom_s<s>_random (10,) float64: Random(s).random() ten times
  pyrandom_s<s>_bits (6, 5, 4) int64: one Random(s), then for each k of
      BITS (in that order) five getrandbits(k); each result split into
      32-bit words, least significant first, padded with zeros to 4 words
  pyrandom_s<s>_below (12, 3) int64: one Random(s), then for each n of
      BELOW three _randbelow(n); values are unsigned 64-bit, stored as the
      int64 with the same bits
  pyrandom_s<s>_shuffles (1016,) int64: one Random(s), then for each
      length of SHUFFLE_LENGTHS, x = list(range(length)); shuffle(x); the
      lists one after the other
  pyrandom_s42_shuffle32033 (43,) int64: random.seed(42);
      x = list(range(32033)); random.shuffle(x) (the makemore split):
      x[:20], x[-20:], then sum(x), sum((i + 1) * x[i]) and the position
      of 0 in x
  pyrandom_s42_range (40,) int64: one Random(42), then ten each of
      randrange(0, 10), randrange(-5, 5), randint(-10**12, 10**12),
      randint(2**62, 2**63 - 1)
"""
import random

import numpy as np

SEEDS = [0, 42, 2147483647, 2**32 + 5, 2**64 - 1]
BITS = [1, 31, 32, 33, 64, 100]
BELOW = [1, 2, 3, 10, 1000, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**53 + 7,
         2**63, 2**64 - 1]
SHUFFLE_LENGTHS = [0, 1, 2, 3, 10, 1000]


def words32(value, count):
    """value as count 32-bit words, least significant first."""
    return [(value >> (32 * i)) & 0xFFFFFFFF for i in range(count)]


def as_int64(values):
    """Unsigned 64-bit values as the int64 array with the same bits."""
    return np.array(values, dtype=np.uint64).view(np.int64)


def generate(save):
    for s in SEEDS:
        r = random.Random(s)
        save(f"pyrandom_s{s}_random",
             np.array([r.random() for _ in range(10)], dtype=np.float64))

        r = random.Random(s)
        bits = [[words32(r.getrandbits(k), 4) for _ in range(5)] for k in BITS]
        save(f"pyrandom_s{s}_bits", np.array(bits, dtype=np.int64))

        r = random.Random(s)
        below = [[r._randbelow(n) for _ in range(3)] for n in BELOW]
        save(f"pyrandom_s{s}_below", as_int64(below))

        r = random.Random(s)
        lists = []
        for length in SHUFFLE_LENGTHS:
            x = list(range(length))
            r.shuffle(x)
            lists.extend(x)
        save(f"pyrandom_s{s}_shuffles", np.array(lists, dtype=np.int64))

    random.seed(42)
    x = list(range(32033))
    random.shuffle(x)
    summary = x[:20] + x[-20:] + [sum(x),
                                  sum((i + 1) * v for i, v in enumerate(x)),
                                  x.index(0)]
    save("pyrandom_s42_shuffle32033", np.array(summary, dtype=np.int64))

    r = random.Random(42)
    ranges = ([r.randrange(0, 10) for _ in range(10)]
              + [r.randrange(-5, 5) for _ in range(10)]
              + [r.randint(-10**12, 10**12) for _ in range(10)]
              + [r.randint(2**62, 2**63 - 1) for _ in range(10)])
    save("pyrandom_s42_range", np.array(ranges, dtype=np.int64))
