"""The makemore lectures' data pipeline on data/names.txt, in Python, as
references for nn/words.c (tests/nn/test_words.c).

This is the code of the lectures (makemore parts 3 to 5), run on the
names.txt shipped in data/, with Python's own random module:

    words = open('names.txt', 'r').read().splitlines()
    chars = sorted(list(set(''.join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + '.':
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]
        return X, Y

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    Xtr, Ytr = build_dataset(words[:n1])
    Xdev, Ydev = build_dataset(words[n1:n2])
    Xte, Yte = build_dataset(words[n2:])

Names written (split is tr, dev or te; b is the block size, 3 as in
parts 3 and 4, and 8 as in part 5):
  words_vocab (27,) int64: ord(itos[i]) for i in 0 .. 26
  words_b<b>_<split>_x_head (50, b) int64, words_b<b>_<split>_y_head (50,)
      int64: the first 50 rows of X and Y
  words_b<b>_<split>_sums (5,) int64: the number of rows, then for X
      (row-major) and then for Y: sum(v) and sum((i + 1) * v[i]), a
      checksum that also sees the order of the rows (exact integers)
"""
import pathlib
import random

import numpy as np

NAMES = pathlib.Path(__file__).resolve().parents[2] / "data" / "names.txt"
HEAD = 50


def build_dataset(words, stoi, block_size):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return (np.array(X, dtype=np.int64).reshape(-1, block_size),
            np.array(Y, dtype=np.int64))


def checksum(v):
    """sum(v) and sum((i + 1) * v[i]) over v flattened, in int64 (exact:
    below 2^42 for these sizes)."""
    flat = v.reshape(-1)
    weights = np.arange(1, flat.size + 1, dtype=np.int64)
    return [int(flat.sum()), int((weights * flat).sum())]


def generate(save):
    words = open(NAMES, 'r').read().splitlines()
    chars = sorted(list(set(''.join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}
    save("words_vocab",
         np.array([ord(itos[i]) for i in range(len(itos))], dtype=np.int64))

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    splits = {"tr": words[:n1], "dev": words[n1:n2], "te": words[n2:]}
    for block_size in (3, 8):
        for name, part in splits.items():
            X, Y = build_dataset(part, stoi, block_size)
            prefix = f"words_b{block_size}_{name}"
            save(f"{prefix}_x_head", X[:HEAD])
            save(f"{prefix}_y_head", Y[:HEAD])
            save(f"{prefix}_sums",
                 np.array([len(Y)] + checksum(X) + checksum(Y),
                          dtype=np.int64))
