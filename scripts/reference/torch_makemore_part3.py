"""Writes tests/reference/makemore_part3_torch.txt: makemore part 3's
BatchNorm MLP (karpathy/nn-zero-to-hero, makemore_part3_bn.ipynb) run in
PyTorch 1.13 for a short schedule, for tests/examples/test_makemore_part3.c.

The code below is the lecture's, cell by cell, with two changes: the
schedule is STEPS steps with the learning rate dropping from 0.1 to 0.01
at DECAY_AT (the lecture: 200000 and 100000), and the 20 names are sampled
from this network with its running BatchNorm statistics (the lecture's
sampling cell, written for its deeper network, applied to this one). Run
with a Python that has PyTorch 1.13 (Debian's python3-torch), from
anywhere:

    /usr/bin/python3 scripts/reference/torch_makemore_part3.py [out_file]
    /usr/bin/python3 scripts/reference/torch_makemore_part3.py --time N
    /usr/bin/python3 scripts/reference/torch_makemore_part3.py --full

--time N trains N steps and prints the time per step (nothing written);
--full runs the lecture's whole schedule (200000 steps, lr 0.01 from step
100000) and prints what the lecture prints. Neither writes a file.

Not part of scripts/gen-reference.sh, which needs only NumPy (and the name
does not start with gen_, so generate.py does not import it). One thread,
so that the float32 sums are done in one order.
PyTorch's float32 matrix products go through the BLAS it was built with,
so on another machine or build the losses may differ from the committed
file in their last bits; the bounds in the test were measured against
the committed file, made with Debian 12's python3-torch on x86-64.

File format, one record per line (floats as their decimal repr and their
float32 bits):

    schedule <steps> <decay_at>   the steps run; lr 0.01 from decay_at
    words <n>                     len(words)
    vocab <n>                     vocab_size
    shape <split> <rows> <cols>   Xtr, Xdev, Xte
    params <n>                    sum(p.nelement() for p in parameters)
    init <name> <numel> <fnv>     FNV-1a (32 bits) of the tensor's float32
                                  bits, little-endian, in C order
    first <name> <bits...>        its first 8 values' bits
    batch <step> <32 indices>     ix of that step (the first two, the last)
    loss <step> <repr> <bits>     loss.item() of every step
    split <name> <repr> <bits>    split_loss after training (running stats)
    sample <i> <name>             the sampled names, '.' included
"""
import pathlib
import random
import struct
import sys
import time

import torch
import torch.nn.functional as F

STEPS = 300
DECAY_AT = 150
FULL_STEPS = 200000
FULL_DECAY_AT = 100000


def bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def fnv1a(t):
    h = 0x811C9DC5
    for b in t.detach().contiguous().numpy().astype("<f4").tobytes():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def main():
    args = sys.argv[1:]
    torch.set_num_threads(1)
    here = pathlib.Path(__file__).resolve().parent
    root = here.parent.parent
    out = []
    time_steps = None
    steps, decay_at = STEPS, DECAY_AT
    write_to = root / "tests" / "reference" / "makemore_part3_torch.txt"
    if args[:1] == ["--time"]:
        time_steps = int(args[1])
        steps, decay_at, write_to = time_steps, FULL_DECAY_AT, None
    elif args[:1] == ["--full"]:
        steps, decay_at, write_to = FULL_STEPS, FULL_DECAY_AT, None
    elif args:
        write_to = pathlib.Path(args[0])

    out.append(f"schedule {steps} {decay_at}")

    # read in all the words
    words = open(root / "data" / "names.txt", "r").read().splitlines()
    out.append(f"words {len(words)}")

    # build the vocabulary of characters and mappings to/from integers
    chars = sorted(list(set(''.join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}
    vocab_size = len(itos)
    out.append(f"vocab {vocab_size}")

    # build the dataset
    block_size = 3

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + '.':
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]
        return torch.tensor(X), torch.tensor(Y)

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    Xtr, Ytr = build_dataset(words[:n1])
    Xdev, Ydev = build_dataset(words[n1:n2])
    Xte, Yte = build_dataset(words[n2:])
    for name, X in (("train", Xtr), ("val", Xdev), ("test", Xte)):
        out.append(f"shape {name} {X.shape[0]} {X.shape[1]}")

    # MLP revisited
    n_embd = 10
    n_hidden = 200
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((vocab_size, n_embd), generator=g)
    W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3)/((n_embd * block_size)**0.5)
    W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.01
    b2 = torch.randn(vocab_size, generator=g) * 0
    bngain = torch.ones((1, n_hidden))
    bnbias = torch.zeros((1, n_hidden))
    bnmean_running = torch.zeros((1, n_hidden))
    bnstd_running = torch.ones((1, n_hidden))
    parameters = [C, W1, W2, b2, bngain, bnbias]
    out.append(f"params {sum(p.nelement() for p in parameters)}")
    for name, p in (("C", C), ("W1", W1), ("W2", W2), ("b2", b2)):
        out.append(f"init {name} {p.nelement()} 0x{fnv1a(p):08x}")
        first = " ".join(f"0x{bits(v):08x}" for v in p.reshape(-1)[:8].tolist())
        out.append(f"first {name} {first}")
    for p in parameters:
        p.requires_grad = True

    batch_size = 32
    started = time.perf_counter()
    for i in range(steps):
        ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]
        if i in (0, 1, steps - 1):
            out.append(f"batch {i} " + " ".join(str(v) for v in ix.tolist()))
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
        with torch.no_grad():
            bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani
            bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < decay_at else 0.01
        for p in parameters:
            p.data += -lr * p.grad
        v = loss.item()
        out.append(f"loss {i} {v!r} 0x{bits(v):08x}")
        if write_to is None and i % 10000 == 0:
            print(f'{i:7d}/{steps:7d}: {v:.4f}')
    elapsed = time.perf_counter() - started
    if time_steps is not None:
        print(f"torch {torch.__version__}, 1 thread: {steps} steps in "
              f"{elapsed:.2f} s, {1e3 * elapsed / steps:.3f} ms/step "
              f"({steps / elapsed:.0f} steps/s)")
        return

    @torch.no_grad()
    def split_loss(split):
        x, y = {'train': (Xtr, Ytr), 'val': (Xdev, Ydev), 'test': (Xte, Yte)}[split]
        emb = C[x]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1
        hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        return F.cross_entropy(logits, y).item()

    for split in ("train", "val"):
        v = split_loss(split)
        out.append(f"split {split} {v!r} 0x{bits(v):08x}")
        if write_to is None:
            print(split, v)

    # sample from the model
    g = torch.Generator().manual_seed(2147483647 + 10)
    with torch.no_grad():
        for k in range(20):
            samples = []
            context = [0] * block_size
            while True:
                emb = C[torch.tensor([context])]
                embcat = emb.view(emb.shape[0], -1)
                hpreact = embcat @ W1
                hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias
                h = torch.tanh(hpreact)
                logits = h @ W2 + b2
                probs = F.softmax(logits, dim=1)
                ix = torch.multinomial(probs, num_samples=1, generator=g).item()
                context = context[1:] + [ix]
                samples.append(ix)
                if ix == 0:
                    break
            name = ''.join(itos[i] for i in samples)
            out.append(f"sample {k} {name}")
            if write_to is None:
                print(name)

    if write_to is not None:
        header = [f"# Written by scripts/reference/torch_makemore_part3.py with "
                  f"torch {torch.__version__}: {steps} steps, lr 0.1 then 0.01 "
                  f"from step {decay_at}"]
        write_to.write_text("\n".join(header + out) + "\n")
        print(f"wrote {write_to}")


if __name__ == "__main__":
    main()
